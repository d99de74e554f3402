#!/usr/bin/env bash
# Open-loop pacing on 127.0.0.1: volley --rate against sockperf under-load
# at the same rates, side by side in one run. Run by hand (not in CI), from
# the repository root:
#
#   bench/rate.sh                    # 10k, 50k and 100k probes/s, 5 s each
#   RATES="1000 10000" SECS=10 bench/rate.sh
#
# For each rate it prints what each tool achieved (probes/s sent), its loss,
# the client's CPU use, and volley's send-time error (actual minus scheduled:
# p50, p99, max). Both servers reply to every message (sockperf with
# --reply-every 1), so both clients receive what they send.
set -euo pipefail

RATES=${RATES:-"10000 50000 100000"}
SECS=${SECS:-5}
SIZE=${SIZE:-64}
SP_PORT=${SP_PORT:-11112}

. bench/common.sh
start_sockperf_server
start_volley_server -q
sleep 0.5
[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }

echo "open-loop pacing on 127.0.0.1, ${SIZE}-byte messages, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-8s %-9s %12s %9s %8s %9s %9s %9s\n' rate tool achieved "rate err" loss "cpu" "err p50" "err p99"
for rate in $RATES; do
	/usr/bin/time -f '%P' -o "$tmp/sp.cpu" sockperf under-load -i 127.0.0.1 -p "$SP_PORT" -m "$SIZE" -t "$SECS" \
		--mps "$rate" --reply-every 1 --full-rtt >"$tmp/sp.out" 2>&1 || true
	sed 's/\x1b\[[0-9;]*m//g' "$tmp/sp.out" | python3 -c '
import re, sys
text = sys.stdin.read()
m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
secs, sent, recv = float(m.group(1)), int(m.group(2)), int(m.group(3))
rate, cpu = float(sys.argv[1]), open(sys.argv[2]).read().strip()
loss = 100 * (sent - recv) / sent if sent else 0
print("%-8s %-9s %12.0f %+8.2f%% %7.3f%% %9s %9s %9s" % (sys.argv[1], "sockperf", sent / secs, 100 * (sent / secs - rate) / rate, loss, cpu, "-", "-"))
' "$rate" "$tmp/sp.cpu"
	/usr/bin/time -f '%P' -o "$tmp/v.cpu" "$tmp/volley" client "$vaddr" --timestamps "$STAMPS" --rate "$rate" -t "${SECS}s" -l "$SIZE" \
		--warmup 400ms -i 0 --format json >"$tmp/v.json" || true
	python3 -c '
import json, sys
r = json.load(open(sys.argv[3]))
s = r["summary"]
c, rate, cpu = s["counts"], float(sys.argv[1]), open(sys.argv[2]).read().strip()
got = s["throughput"]["probes_per_sec_up"]
p = {q["p"]: q["value_ns"] / 1000 for q in s["send_error"]["percentiles"]}
print("%-8s %-9s %12.0f %+8.2f%% %7.3f%% %9s %8.1fµs %8.1fµs" % (sys.argv[1], "volley", got, 100 * (got - rate) / rate, c["loss_percent"], cpu, p[50], p[99]))
' "$rate" "$tmp/v.cpu" "$tmp/v.json"
done
