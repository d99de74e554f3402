#!/usr/bin/env bash
# Soak: a reflector with many concurrent sessions at a modest rate for a long
# time; its memory, threads and CPU must stay flat. Run by hand (not in CI),
# from the repository root:
#
#   bench/soak.sh                         # 1000 sessions at 10 probes/s each, 10 minutes
#   SESSIONS=200 SECS=60 bench/soak.sh    # a quick look
#
# The sessions come from bench/soakload: one goroutine and one socket per
# session (a volley client flow is an OS thread with megabytes of
# histograms, and a thousand of them starve a 2-core machine first). Prints
# the reflector's RSS, threads and CPU time at the start and the end (and its
# peak RSS), and what the sessions sent, got back and the reflector counted.
# The reflector has one goroutine per worker whatever the load (no goroutine
# per session), so its thread count stands in for goroutines.
set -euo pipefail

SESSIONS=${SESSIONS:-1000}
SECS=${SECS:-600}
RATE=${RATE:-10}

. bench/common.sh
start_volley_server -q --max-sessions $((SESSIONS + 10))
server=$vpid addr=$vaddr

probe() { # rss_kB threads cpu_ticks
	awk '/^VmRSS/ {rss=$2} /^Threads/ {th=$2} END {printf "%s %s ", rss, th}' "/proc/$server/status"
	awk '{print $14 + $15}' "/proc/$server/stat"
}

go build -o "$tmp/soakload" ./bench/soakload
"$tmp/soakload" -target "$addr" -sessions "$SESSIONS" -rate "$RATE" -duration "${SECS}s" >"$tmp/load.out" 2>"$tmp/load.err" &
load=$!
pids+=($load)
sleep 5
read -r rss0 th0 cpu0 < <(probe)
peak=$rss0
echo "reflector RSS kB / threads every minute:"
for i in $(seq $(( SECS / 5 - 2 ))); do
	sleep 5
	read -r rss th cpu < <(probe)
	[ "$rss" -gt "$peak" ] && peak=$rss
	if [ $(( i % 12 )) -eq 0 ]; then printf ' %d/%d' "$rss" "$th"; fi
done
echo
read -r rss1 th1 cpu1 < <(probe)
wait "$load" || true
hz=$(getconf CLK_TCK)
echo "soak: $SESSIONS sessions at $RATE probes/s each for ${SECS}s, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf 'reflector at start: RSS %d kB, %d threads\n' "$rss0" "$th0"
printf 'reflector at end:   RSS %d kB, %d threads, peak RSS %d kB (end/start %.2f)\n' "$rss1" "$th1" "$peak" "$(python3 -c "print($rss1/$rss0)")"
printf 'reflector CPU: %.1f%% of a core over the run\n' "$(python3 -c "print(100*($cpu1-$cpu0)/$hz/max(1,$SECS-10))")"
echo "load: $(cat "$tmp/load.out")"
if [ -s "$tmp/load.err" ]; then cat "$tmp/load.err"; fi
