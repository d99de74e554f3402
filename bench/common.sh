# Shared by the bench/ scripts (sourced, not run, from the repository
# root). Sourcing it makes a temporary folder ($tmp), builds volley there,
# and stops every process put in $pids, by PID, on exit.

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
	"$tmp/volley" server --listen 127.0.0.1:0 "$@" >"$tmp/volley-server.log" 2>&1 &
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
