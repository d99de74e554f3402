#!/usr/bin/env bash
# Soak: a reflector with many concurrent sessions at a modest rate for a long
# time; its memory, threads and CPU must stay flat. Run by hand (not in CI),
# from the repository root:
#
#   bench/soak.sh                         # 1000 sessions at 10 probes/s each, 10 minutes
#   SESSIONS=200 SECS=60 bench/soak.sh    # a quick look
#
# The sessions come from CLIENTS client processes of -P flows each. Prints
# the reflector's RSS, threads and CPU time at the start and the end (and
# its peak RSS), and each client's loss. The reflector has one goroutine per
# worker whatever the load, so its thread count stands in for goroutines.
set -euo pipefail

SESSIONS=${SESSIONS:-1000}
SECS=${SECS:-600}
RATE=${RATE:-10}
CLIENTS=${CLIENTS:-4}

. bench/common.sh
start_volley_server -q --max-sessions $((SESSIONS + 10))
server=$vpid addr=$vaddr

probe() { # rss_kB threads cpu_ticks
	awk '/^VmRSS/ {rss=$2} /^Threads/ {th=$2} END {printf "%s %s ", rss, th}' "/proc/$server/status"
	awk '{print $14 + $15}' "/proc/$server/stat"
}

per=$(( (SESSIONS + CLIENTS - 1) / CLIENTS ))
for i in $(seq "$CLIENTS"); do
	"$tmp/volley" client "$addr" -P "$per" --rate "$RATE" -t "${SECS}s" -i 0 --format json >"$tmp/client$i.json" 2>"$tmp/client$i.err" &
	pids+=($!)
done
sleep 5
read -r rss0 th0 cpu0 < <(probe)
peak=$rss0
for _ in $(seq $(( SECS / 5 - 2 ))); do
	sleep 5
	read -r rss th cpu < <(probe)
	[ "$rss" -gt "$peak" ] && peak=$rss
done
read -r rss1 th1 cpu1 < <(probe)
wait "${pids[@]:1}" 2>/dev/null || true
hz=$(getconf CLK_TCK)
echo "soak: $SESSIONS sessions at $RATE probes/s each for ${SECS}s, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf 'reflector at start: RSS %d kB, %d threads\n' "$rss0" "$th0"
printf 'reflector at end:   RSS %d kB, %d threads, peak RSS %d kB (end/start %.2f)\n' "$rss1" "$th1" "$peak" "$(python3 -c "print($rss1/$rss0)")"
printf 'reflector CPU: %.1f%% of a core over the run\n' "$(python3 -c "print(100*($cpu1-$cpu0)/$hz/max(1,$SECS-10))")"
for i in $(seq "$CLIENTS"); do
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = r["summary"]["counts"]
print("client %s: %d flows, sent %d, lost %d (%.3f%%)" % (sys.argv[2], len(r.get("flows") or [1]), c["sent"], c["lost"], c["loss_percent"]))
' "$tmp/client$i.json" "$i" || cat "$tmp/client$i.err"
done
