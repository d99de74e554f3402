# Shared by the bench/ scripts (sourced, not run, from the repository
# root). Sourcing it makes a temporary folder ($tmp), builds volley there,
# and stops every process put in $pids, by PID, on exit.
#
# STAMPS is the --timestamps of volley's client and server (default user:
# the peers take no kernel stamps either, so the comparison is like for
# like; STAMPS=auto measures volley as it runs by default, with kernel
# stamps on UDP).
STAMPS=${STAMPS:-user}

command -v python3 >/dev/null || { echo "the bench/ scripts need python3 to read JSON" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/volley" ./cmd/volley

# start_volley_server ARGS...: starts `volley server --listen 127.0.0.1:0
# ARGS...`, sets $vaddr to its address and $vpid to its PID.
start_volley_server() {
	"$tmp/volley" server --listen 127.0.0.1:0 --timestamps "$STAMPS" "$@" >"$tmp/volley-server.log" 2>&1 &
	vpid=$!
	pids+=($vpid)
	for _ in $(seq 50); do
		grep -q '^listening on udp://' "$tmp/volley-server.log" && break
		sleep 0.1
	done
	vaddr=$(sed -n 's|^listening on udp://||p' "$tmp/volley-server.log" | head -1)
	[ -n "$vaddr" ] || { echo "volley server did not start" >&2; exit 1; }
}

# start_sockperf_server [ARGS...]: installs sockperf from Debian packages if missing
# and starts its server on 127.0.0.1:$SP_PORT.
start_sockperf_server() {
	if ! command -v sockperf >/dev/null; then
		echo "installing sockperf from Debian packages" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sockperf >/dev/null
	fi
	sockperf server -i 127.0.0.1 -p "$SP_PORT" "$@" >"$tmp/sockperf-server.log" 2>&1 &
	pids+=($!)
}

# start_qperf_server: installs qperf from Debian packages if missing and
# starts its server (it listens on its default port, 19765).
start_qperf_server() {
	if ! command -v qperf >/dev/null; then
		echo "installing qperf from Debian packages" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qperf >/dev/null
	fi
	qperf >"$tmp/qperf-server.log" 2>&1 &
	pids+=($!)
}

# start_iperf_server: installs iperf (2) from Debian packages if missing
# and starts its server on 127.0.0.1:$IP_PORT.
start_iperf_server() {
	if ! command -v iperf >/dev/null; then
		echo "installing iperf 2 from Debian packages" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf >/dev/null
	fi
	iperf -s -B 127.0.0.1 -p "$IP_PORT" >"$tmp/iperf-server.log" 2>&1 &
	pids+=($!)
}

# median VALUES...: the median of the values.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# rr_rounds ROUNDS PEER PEER_FN: runs ROUNDS rounds of sockperf_run
# (prints p50 p99), PEER_FN (prints PEER's mean) and volley_run (prints p50
# p99 mean), all in µs, and prints a row of figures and volley/peer ratios
# per round, then the median ratios.
rr_rounds() {
	local rounds=$1 peer=$2 peer_fn=$3
	printf '%-5s %12s %12s %12s %12s %9s %9s %12s %12s %9s\n' round "sockperf p50" "volley p50" "sockperf p99" "volley p99" "p50 x" "p99 x" "$peer mean" "volley mean" "mean x"
	local ratios=() pratios=() i sp50 sp99 pmean vp50 vp99 vmean r50 r99 rp
	for i in $(seq "$rounds"); do
		read -r sp50 sp99 < <(sockperf_run)
		read -r pmean < <("$peer_fn")
		read -r vp50 vp99 vmean < <(volley_run)
		r50=$(python3 -c "print('%.3f' % ($vp50 / $sp50))")
		r99=$(python3 -c "print('%.3f' % ($vp99 / $sp99))")
		rp=$(python3 -c "print('%.3f' % ($vmean / $pmean))")
		ratios+=("$r50") pratios+=("$rp")
		printf '%-5s %10sµs %10sµs %10sµs %10sµs %9s %9s %10sµs %10sµs %9s\n' "$i" "$sp50" "$vp50" "$sp99" "$vp99" "$r50" "$r99" "$pmean" "$vmean" "$rp"
	done
	echo "median p50 ratio volley/sockperf: $(median "${ratios[@]}")"
	echo "median mean ratio volley/$peer: $(median "${pratios[@]}")"
}

# sockperf_pingpong [ARGS...]: one sockperf ping-pong run against the
# server on $SP_PORT ($SIZE bytes, $SECS s); prints its p50 and p99 in µs.
sockperf_pingpong() {
	sockperf ping-pong "$@" -i 127.0.0.1 -p "$SP_PORT" -m "$SIZE" -t "$SECS" --full-rtt 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g' |
		awk '/percentile 50.000 =/ {p50=$NF} /percentile 99.000 =/ {p99=$NF} END {printf "%.2f %.2f\n", p50, p99}'
}

# volley_pingpong TARGET [ARGS...]: one volley ping-pong run ($SIZE bytes,
# $SECS s); prints its p50, p99 and mean in µs.
volley_pingpong() {
	"$tmp/volley" client "$@" --timestamps "$STAMPS" -t "${SECS}s" -l "$SIZE" --warmup 400ms -i 0 --format json |
		python3 -c '
import json, sys
r = json.load(sys.stdin)["summary"]["rtt"]
p = {q["p"]: q["value_ns"] / 1000 for q in r["percentiles"]}
print("%.2f %.2f %.2f" % (p[50], p[99], r["mean_ns"] / 1000))'
}
