#!/usr/bin/env bash
# Reflector packet rate on 127.0.0.1: replies per second a volley client
# sending as fast as it can (--rate max) gets back from a volley reflector,
# against what sockperf under-load --mps=max --reply-every 1 gets back from
# sockperf's server, alternating, in one run. Run by hand (not in CI), from
# the repository root:
#
#   bench/max-rate.sh                # 3 rounds of 5 s runs, 64-byte messages
#   ROUNDS=5 WORKERS=2 FLOWS=2 bench/max-rate.sh   # 2 reflector workers, 2 client flows (-P)
#
# Prints each run's messages sent and replies received per second, and the
# ratio of replies/s volley/sockperf (issue 17's target: at least 1.5).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
SIZE=${SIZE:-64}
WORKERS=${WORKERS:-1}
FLOWS=${FLOWS:-1} # the client's -P: one flow stays on one worker
SP_PORT=${SP_PORT:-11114}

. bench/common.sh
start_sockperf_server
start_volley_server -q --tcp=false --workers "$WORKERS"
sleep 0.5

sockperf_run() { # sent/s received/s over sockperf's valid duration
	sockperf under-load -i 127.0.0.1 -p "$SP_PORT" -m "$SIZE" -t "$SECS" --mps=max --reply-every 1 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g' |
		awk '/\[Valid Duration\]/ {for (i = 1; i <= NF; i++) {split($i, a, "="); v[a[1]] = a[2]}; t = v["RunTime"] + 0; printf "%.0f %.0f\n", v["SentMessages"] / t, v["ReceivedMessages"] / t}'
}

volley_run() {
	"$tmp/volley" client "$vaddr" --timestamps "$STAMPS" --rate max -P "$FLOWS" -t "${SECS}s" -l "$SIZE" --warmup 400ms -i 0 --format json |
		python3 -c '
import json, sys
t = json.load(sys.stdin)["summary"]["throughput"]
print("%.0f %.0f" % (t["probes_per_sec_up"], t["probes_per_sec_down"]))'
}

echo "reflector rate on 127.0.0.1, ${SIZE}-byte messages, ${SECS}s per run, volley --workers $WORKERS -P $FLOWS, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-5s %14s %14s %14s %14s %9s\n' round "sockperf sent/s" "sockperf recv/s" "volley sent/s" "volley recv/s" "recv x"
ratios=()
for i in $(seq "$ROUNDS"); do
	read -r ss sr < <(sockperf_run)
	read -r vs vr < <(volley_run)
	r=$(python3 -c "print('%.2f' % ($vr / $sr))")
	ratios+=("$r")
	printf '%-5s %14s %14s %14s %14s %9s\n' "$i" "$ss" "$sr" "$vs" "$vr" "$r"
done
if [ "$FLOWS" = 1 ]; then
	echo "median replies/s ratio volley/sockperf: $(median "${ratios[@]}") (target >= 1.5)"
else # issue 17's target is for one flow against sockperf's one stream
	echo "median replies/s ratio volley (-P $FLOWS)/sockperf (1 stream): $(median "${ratios[@]}")"
fi
