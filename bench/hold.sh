#!/usr/bin/env bash
# How precisely the reflector honours --hold, on 127.0.0.1. Run by hand
# (not in CI), from the repository root:
#
#   bench/hold.sh                   # UDP, 3 rounds of 300 probes per hold
#   ROUNDS=5 N=1000 bench/hold.sh
#   PROTO=tcp bench/hold.sh         # the stream listener's holds
#
# Each round runs a ping-pong client of N probes (after 50 warm-up ones)
# with no hold, then with each hold of HOLDS. Per hold it prints the
# medians over the rounds of: the RTT p50; the hold's error seen by the
# client, RTT p50 − RTT p50 without a hold − the hold; the same from the
# kernel's stamps (STAMPS=auto, UDP: T4k−T1k, which leaves out the
# client's own wake-up, slower after a longer wait); and the response
# time p50 the reflector reports (T3−T2 less the hold asked for: what it
# took beyond the hold). Then the reflector's CPU while the holds ran and
# while idle after them (the wait spins only for the last stretch before
# a reply is due). Target: |error| and response p50 within about 20 µs.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-300}
HOLDS=${HOLDS:-"10us 100us 500us 1ms"}
PROTO=${PROTO:-udp}

. bench/common.sh
start_volley_server -q
sleep 0.3
target="$vaddr"
[ "$PROTO" = udp ] || target="$PROTO://$vaddr"

# cpu_ticks: the server's user+system CPU so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$vpid/stat"; }
hz=$(getconf CLK_TCK)

# run HOLD: prints the run's RTT p50, kernel RTT p50 (- without kernel
# stamps) and response p50, in µs.
run() {
	local hold=()
	[ "$1" = 0 ] || hold=(--hold "$1")
	"$tmp/volley" client "$target" "${hold[@]}" --timestamps "$STAMPS" -n "$N" --warmup 50 --format json |
		python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
p50 = lambda l: [q["value_ns"] for q in l["percentiles"] if q["p"] == 50][0] / 1000
k = s.get("kernel")
kr = "%.1f" % p50(k["rtt"]) if k and k["rtt"]["count"] else "-"
print("%.1f %s %.1f" % (p50(s["rtt"]), kr, p50(s["response"])))'
}

us() { # a Go duration as µs
	case $1 in
	0) echo 0 ;;
	*us) echo "${1%us}" ;;
	*ms) echo $((${1%ms} * 1000)) ;;
	*) echo "unknown unit in $1" >&2; exit 1 ;;
	esac
}

# error RTT BASE HOLD: RTT − BASE − HOLD in µs, or - without figures.
error() {
	[ "$1" != - ] && [ "$2" != - ] || { echo -; return; }
	awk -v r="$1" -v b="$2" -v h="$(us "$3")" 'BEGIN {printf "%.1f", r - b - h}'
}

declare -A rtt resp err kerr
t0=$(date +%s.%N) c0=$(cpu_ticks)
for _ in $(seq "$ROUNDS"); do
	read -r base kbase base_resp < <(run 0)
	rtt[0]+=" $base" resp[0]+=" $base_resp" err[0]+=" 0" kerr[0]+=" $(error "$kbase" "$kbase" 0)"
	for h in $HOLDS; do
		read -r r k p < <(run "$h")
		rtt[$h]+=" $r" resp[$h]+=" $p"
		err[$h]+=" $(error "$r" "$base" "$h")"
		kerr[$h]+=" $(error "$k" "$kbase" "$h")"
	done
done
t1=$(date +%s.%N) c1=$(cpu_ticks)
sleep 2
t2=$(date +%s.%N) c2=$(cpu_ticks)

echo "--hold on $PROTO 127.0.0.1, $N probes per run, medians of $ROUNDS rounds, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-6s %10s %14s %14s %14s\n' hold "RTT p50" "hold error" "kernel error" "response p50"
for h in 0 $HOLDS; do
	# shellcheck disable=SC2086
	printf '%-6s %8s µs %11s µs %11s µs %11s µs\n' "$h" "$(median ${rtt[$h]})" "$(median ${err[$h]})" \
		"$(median ${kerr[$h]} | sed 's/^-$/ -/')" "$(median ${resp[$h]})"
done
awk -v a="$c0" -v b="$c1" -v c="$c2" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v hz="$hz" 'BEGIN {
	printf "reflector CPU: %.0f%% of a core while the runs went, %.0f%% idle after them\n", 100*(b-a)/hz/(t1-t0), 100*(c-b)/hz/(t2-t1) }'
echo "(target: |hold error| and response p50 within about 20 µs)"
