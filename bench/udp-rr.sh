#!/usr/bin/env bash
# UDP ping-pong round trip on 127.0.0.1: volley against sockperf, side by
# side in one run. Run by hand (not in CI), from the repository root:
#
#   bench/udp-rr.sh                 # 3 pairs of 5 s runs, 64-byte messages
#   PAIRS=5 SECS=10 SIZE=256 bench/udp-rr.sh
#   BUSY=1 bench/udp-rr.sh          # both ends busy-poll (sockperf --nonblocked)
#   BUSY=1 FLOOR=1 bench/udp-rr.sh  # and the Go busy floor (bench/gofloor) each
#                                   # round, volley read against it
#
# Each round runs sockperf ping-pong, qperf udp_lat and volley ping-pong,
# with the same message size and duration, against servers started here
# (installed from Debian packages if missing). Prints each run's RTT p50,
# p99 and p99.9 in µs and round trips/s (sockperf with --full-rtt, so all
# are whole round trips) and the ratios volley/sockperf; and the mean RTT
# against qperf's, which reports only a mean one-way latency (half its mean
# round trip). Target: p50 ratio <= 1.05 (busy: <= 1.00, p99.9 <= 1.2, and
# at least sockperf's round trips/s).
set -euo pipefail

PAIRS=${PAIRS:-3}
SECS=${SECS:-5}
SIZE=${SIZE:-64}
SP_PORT=${SP_PORT:-11111}

if [ "${FLOOR:-0}" = 1 ] && { [ "${BUSY:-0}" != 1 ] || [ "$SIZE" != 64 ]; }; then
	echo "FLOOR=1 goes with BUSY=1, and SIZE=64: the busy floor's probes are 64 bytes" >&2
	exit 2
fi

. bench/common.sh
start_qperf_server

if [ "${BUSY:-0}" = 1 ]; then
	# Both ends spin: sockperf --nonblocked against its server likewise,
	# volley --busy-poll against a busy-polling reflector. A spinning
	# server takes a core, so each runs only for its own measurement.
	sockperf_run() {
		sockperf server --nonblocked -i 127.0.0.1 -p "$SP_PORT" >"$tmp/sockperf-server.log" 2>&1 &
		local sp=$!
		sleep 0.3
		sockperf_pingpong --nonblocked
		kill "$sp"
		wait "$sp" 2>/dev/null || true
	}
	volley_run() {
		start_volley_server -q --busy-poll --tcp=false
		volley_pingpong "$vaddr" --busy-poll
		kill "$vpid"
		wait "$vpid" 2>/dev/null || true
	}
	if [ "${FLOOR:-0}" = 1 ]; then
		floor_run() { gofloor_pingpong "$1" 127.0.0.1:11119 -mode busy; }
	fi
else
	start_sockperf_server
	start_volley_server -q
	sleep 0.5
	sockperf_run() { sockperf_pingpong; }
	volley_run() { volley_pingpong "$vaddr"; }
fi

qperf_run() { # the mean round trip: twice its one-way latency
	qperf -t "$SECS" -m "$SIZE" 127.0.0.1 udp_lat 2>&1 |
		awk '/latency/ {v=$3; if ($4 == "ms") v*=1000; if ($4 == "ns") v/=1000; printf "%.2f\n", 2*v}'
}

echo "UDP ping-pong RTT$([ "${BUSY:-0}" = 1 ] && echo ", both ends busy-polling,") on 127.0.0.1, ${SIZE}-byte messages, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
rr_rounds "$PAIRS" qperf qperf_run
echo "(target: p50 ratio volley/sockperf <= 1.05)"
