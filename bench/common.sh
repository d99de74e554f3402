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

# gofloor_pingpong OUT ADDR [FLAGS...]: one bench/gofloor ping-pong run
# ($SECS s; built at $tmp/gofloor on the first call), its server at ADDR (a UDP
# or TCP address, or with -unix a path) with the same FLAGS; writes its
# p50, p99 and p99.9 in µs and its round trips/s to OUT. Call it in this
# shell, not in a subshell: its server is in $pids until it is stopped.
# What the client says besides (probes that got no answer) goes to
# $tmp/gofloor.log (gofloor_said), and to stderr too when it fails.
gofloor_pingpong() {
	local out=$1 addr=$2 gp rc=0
	shift 2
	if [ ! -x "$tmp/gofloor" ]; then
		go build -o "$tmp/gofloor" ./bench/gofloor
	fi
	"$tmp/gofloor" "$@" -server "$addr" &
	gp=$!
	pids+=("$gp")
	sleep 0.3
	"$tmp/gofloor" "$@" -client "$addr" -t "${SECS}s" >"$out" 2>>"$tmp/gofloor.log" || rc=$?
	kill "$gp" 2>/dev/null || true
	wait "$gp" 2>/dev/null || true
	# Stopped: out of $pids, which cleanup would otherwise signal again
	# after its number may have gone to another process.
	local keep=() p
	for p in "${pids[@]}"; do
		[ "$p" = "$gp" ] || keep+=("$p")
	done
	pids=("${keep[@]}")
	if [ "$rc" != 0 ]; then
		echo "gofloor $* -client $addr failed (exit $rc):" >&2
		tail -3 "$tmp/gofloor.log" >&2
	fi
	return "$rc"
}

# gofloor_said: what the gofloor clients said besides their figures, if
# anything, counted.
gofloor_said() {
	if [ -s "$tmp/gofloor.log" ]; then
		echo "gofloor said:"
		sort "$tmp/gofloor.log" | uniq -c
	fi
}

# median VALUES...: the median of the values.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# rr_rounds ROUNDS PEER PEER_FN: runs ROUNDS rounds of sockperf_run
# (prints p50 p99 p99.9 in µs and round trips/s), PEER_FN (prints PEER's
# mean in µs) and volley_run (prints p50 p99 p99.9 mean in µs and round
# trips/s), and prints a row of figures and volley/peer ratios per round,
# then the median ratios. Where a floor_run is defined (it writes
# gofloor's p50 p99 p99.9 and round trips/s to the file it is given, in
# this shell: see gofloor_pingpong), each round runs it too, and its rows
# and medians add volley/floor, measured beside volley rather than
# through sockperf.
rr_rounds() {
	local rounds=$1 peer=$2 peer_fn=$3 floor=0
	if declare -F floor_run >/dev/null; then
		floor=1
	fi
	printf '%-5s %12s %12s %12s %12s %12s %12s %8s %8s %8s %8s %12s %12s %8s' round "sockperf p50" "volley p50" "sockperf p99" "volley p99" \
		"sock p99.9" "volley p99.9" "p50 x" "p99 x" "p99.9 x" "rate x" "$peer mean" "volley mean" "mean x"
	[ "$floor" = 0 ] || printf ' %12s %12s %10s %10s' "floor p50" "floor p99.9" "p50 x fl" "p99.9 x fl"
	echo
	local ratios=() r999s=() rates=() pratios=() fratios=() f999s=() i sp50 sp99 sp999 srate pmean vp50 vp99 vp999 vmean vrate r50 r99 r999 rr rp
	local fp50 fp999 f50 f999
	for i in $(seq "$rounds"); do
		read -r sp50 sp99 sp999 srate < <(sockperf_run)
		read -r pmean < <("$peer_fn")
		read -r vp50 vp99 vp999 vmean vrate < <(volley_run)
		if [ "$floor" = 1 ]; then
			floor_run "$tmp/floor.out"
			read -r fp50 _ fp999 _ <"$tmp/floor.out"
			read -r f50 f999 < <(python3 -c "print('%.3f %.3f' % ($vp50 / $fp50, $vp999 / $fp999))")
			fratios+=("$f50") f999s+=("$f999")
		fi
		read -r r50 r99 r999 rr rp < <(python3 -c "print('%.3f %.3f %.3f %.3f %.3f' % ($vp50 / $sp50, $vp99 / $sp99, $vp999 / $sp999, $vrate / $srate, $vmean / $pmean))")
		ratios+=("$r50") r999s+=("$r999") rates+=("$rr") pratios+=("$rp")
		printf '%-5s %10sµs %10sµs %10sµs %10sµs %10sµs %10sµs %8s %8s %8s %8s %10sµs %10sµs %8s' "$i" "$sp50" "$vp50" "$sp99" "$vp99" "$sp999" "$vp999" \
			"$r50" "$r99" "$r999" "$rr" "$pmean" "$vmean" "$rp"
		[ "$floor" = 0 ] || printf ' %10sµs %10sµs %10s %10s' "$fp50" "$fp999" "$f50" "$f999"
		echo
	done
	echo "median p50 ratio volley/sockperf: $(median "${ratios[@]}")"
	echo "median p99.9 ratio volley/sockperf: $(median "${r999s[@]}")"
	echo "median round-trip rate ratio volley/sockperf: $(median "${rates[@]}")"
	echo "median mean ratio volley/$peer: $(median "${pratios[@]}")"
	if [ "$floor" = 1 ]; then
		echo "median p50 ratio volley/floor: $(median "${fratios[@]}")"
		echo "median p99.9 ratio volley/floor: $(median "${f999s[@]}")"
		gofloor_said
	fi
}

# sockperf_pingpong [ARGS...]: one sockperf ping-pong run against the
# server on $SP_PORT ($SIZE bytes, $SECS s); prints its p50, p99 and p99.9
# in µs and its round trips/s (over its valid duration).
sockperf_pingpong() {
	sockperf ping-pong "$@" -i 127.0.0.1 -p "$SP_PORT" -m "$SIZE" -t "$SECS" --full-rtt 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g' |
		awk '/percentile 50.000 =/ {p50=$NF} /percentile 99.000 =/ {p99=$NF} /percentile 99.900 =/ {p999=$NF}
			/\[Valid Duration\]/ {for (i = 1; i <= NF; i++) {split($i, a, "="); v[a[1]] = a[2]}; rate = v["ReceivedMessages"] / (v["RunTime"] + 0)}
			END {printf "%.2f %.2f %.2f %.0f\n", p50, p99, p999, rate}'
}

# volley_pingpong TARGET [ARGS...]: one volley ping-pong run ($SIZE bytes,
# $SECS s); prints its p50, p99, p99.9 and mean in µs and its round trips/s.
volley_pingpong() {
	"$tmp/volley" client "$@" --timestamps "$STAMPS" -t "${SECS}s" -l "$SIZE" --warmup 400ms -i 0 --format json |
		python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
r = s["rtt"]
p = {q["p"]: q["value_ns"] / 1000 for q in r["percentiles"]}
print("%.2f %.2f %.2f %.2f %.0f" % (p[50], p[99], p[99.9], r["mean_ns"] / 1000, s["throughput"]["requests_per_sec"]))'
}
