# Shared by the bench/ scripts (sourced, not run): installs sockperf if
# missing, builds volley, starts a sockperf server on $SP_PORT and a volley
# server on a free port (its address in $vaddr), and stops both, by PID, on
# exit. Scripts run from the repository root.

if ! command -v sockperf >/dev/null; then
	echo "installing sockperf from Debian packages" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sockperf >/dev/null
fi
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

sockperf server -i 127.0.0.1 -p "$SP_PORT" >"$tmp/sockperf-server.log" 2>&1 &
pids+=($!)
"$tmp/volley" server --listen 127.0.0.1:0 -q >"$tmp/volley-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
	grep -q '^listening on udp://' "$tmp/volley-server.log" && break
	sleep 0.1
done
vaddr=$(sed -n 's|^listening on udp://||p' "$tmp/volley-server.log" | head -1)
[ -n "$vaddr" ] || { echo "volley server did not start" >&2; exit 1; }
sleep 0.5
