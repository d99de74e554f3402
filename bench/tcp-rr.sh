#!/usr/bin/env bash
# TCP request/reply on 127.0.0.1: volley tcp:// ping-pong against sockperf
# --tcp ping-pong and iperf 2 --bounceback (back to back, period 0), side by
# side in one run. Run by hand (not in CI), from the repository root:
#
#   bench/tcp-rr.sh                  # 3 rounds of 5 s runs, 100-byte messages
#   ROUNDS=5 SECS=10 bench/tcp-rr.sh
#   BUSY=1 bench/tcp-rr.sh           # both ends busy-poll (sockperf --nonblocked);
#                                    # iperf 2 has no such mode and stays as it is
#   BUSY=1 FLOOR=1 bench/tcp-rr.sh   # and the Go TCP busy floor (bench/gofloor -tcp)
#                                    # each round, volley read against it
#
# Prints RTT p50, p99, p99.9 and round trips/s for sockperf (--full-rtt)
# and volley, and the mean for iperf 2 (its bounceback reports
# avg/min/max/stdev) and volley, with the ratios volley/peer. iperf 2's
# bounceback server sets TCP_QUICKACK after every read, which sends a bare
# ACK ahead of each reply; sockperf's does not, nor does volley's for a
# probe it answers at once (its reply carries the ACK).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
SIZE=${SIZE:-100}
SP_PORT=${SP_PORT:-11113}
IP_PORT=${IP_PORT:-15001}

if [ "${FLOOR:-0}" = 1 ] && [ "${BUSY:-0}" != 1 ]; then
	echo "FLOOR=1 goes with BUSY=1" >&2
	exit 2
fi

. bench/common.sh
start_iperf_server
if [ "${BUSY:-0}" = 1 ]; then
	# A spinning server takes a core, so each runs only for its own
	# measurement.
	sockperf_run() {
		sockperf server --tcp --nonblocked -i 127.0.0.1 -p "$SP_PORT" >"$tmp/sockperf-server.log" 2>&1 &
		local sp=$!
		sleep 0.3
		sockperf_pingpong --tcp --nonblocked
		kill "$sp"
		wait "$sp" 2>/dev/null || true
	}
	volley_run() {
		start_volley_server -q --busy-poll=tcp
		# Delayed ACKs on, as sockperf's server leaves them.
		volley_pingpong "tcp://$vaddr" --busy-poll --quickack=false
		kill "$vpid"
		wait "$vpid" 2>/dev/null || true
	}
	if [ "${FLOOR:-0}" = 1 ]; then
		floor_run() { gofloor_pingpong "$1" 127.0.0.1:11119 -mode busy -tcp -size "$SIZE"; }
	fi
else
	start_sockperf_server --tcp
	start_volley_server -q
	sleep 0.5
	sockperf_run() { sockperf_pingpong --tcp; }
	volley_run() { volley_pingpong "tcp://$vaddr"; }
fi

iperf_run() { # the mean round trip in µs, from the summary's cnt=avg/min/max/stdev (ms)
	iperf -c 127.0.0.1 -p "$IP_PORT" --bounceback --bounceback-period 0 -l "$SIZE" -t "$SECS" -i "$((SECS + 1))" 2>&1 |
		awk '/ ms / && /=/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+=/) {split($i, a, "="); split(a[2], b, "/"); v = b[1]}} END {printf "%.2f\n", v * 1000}'
}

echo "TCP request/reply RTT$([ "${BUSY:-0}" = 1 ] && echo ", both ends busy-polling (iperf 2 not),") on 127.0.0.1, ${SIZE}-byte messages, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
rr_rounds "$ROUNDS" iperf iperf_run
