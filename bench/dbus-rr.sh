#!/usr/bin/env bash
# D-Bus round trips through a private dbus-daemon, beside a Unix stream
# socket's to the same reflector in the same run, so that the bus's own
# cost shows. Run by hand (not in CI), from the repository root:
#
#   bench/dbus-rr.sh                   # 3 rounds of 5 s each way, 64-byte messages
#   ROUNDS=5 SECS=10 SIZE=1024 bench/dbus-rr.sh
#
# Installs dbus-daemon and dbus-tests from Debian packages if missing.
# Prints each run's RTT p50 and p99 in µs and round trips per second
# (messages/s each way), then the medians and the ratios D-Bus/Unix; and,
# through the same bus, a C libdbus ping-pong (dbus-test-tool spam against
# dbus-test-tool echo, the same payload size) beside volley's D-Bus runs:
# issue 17's targets, volley's round trips/s >= 0.9x its and volley's p50
# <= 1.15x its mean round trip.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
SIZE=${SIZE:-64}

. bench/common.sh
if ! command -v dbus-daemon >/dev/null; then
	apt-get install -y -qq dbus-daemon >/dev/null
fi
if ! command -v dbus-test-tool >/dev/null; then
	echo "installing dbus-tests from Debian packages" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dbus-tests >/dev/null
fi
dbus-daemon --session --nofork --nopidfile --print-address=1 --address="unix:dir=$tmp" >"$tmp/bus.addr" 2>/dev/null &
pids+=($!)
for _ in $(seq 50); do
	[ -s "$tmp/bus.addr" ] && break
	sleep 0.1
done
bus=$(head -1 "$tmp/bus.addr")
[ -n "$bus" ] || { echo "dbus-daemon did not start" >&2; exit 1; }
start_volley_server -q --tcp=false --unix "$tmp/v.sock" --dbus "$bus"
for _ in $(seq 50); do
	grep -q '^listening on dbus' "$tmp/volley-server.log" && break
	sleep 0.1
done

run() { # TARGET: p50 and p99 in µs, and round trips per second
	"$tmp/volley" client "$1" -t "${SECS}s" -l "$SIZE" --warmup 400ms -i 0 --format json |
		python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
p = {q["p"]: q["value_ns"] / 1000 for q in s["rtt"]["percentiles"]}
print("%.2f %.2f %.0f" % (p[50], p[99], s["throughput"]["requests_per_sec"]))'
}

# libdbus's ping-pong: spam calls, echo answers each with an empty reply.
DBUS_SESSION_BUS_ADDRESS=$bus dbus-test-tool echo --name=org.volley.bench.Echo >/dev/null 2>&1 &
pids+=($!)
sleep 0.3
payload=$(head -c "$SIZE" /dev/zero | tr '\0' x)
ctool() { # round trips/s and mean round trip (µs) of dbus-test-tool spam
	local n=20000 t0 t1
	t0=$(date +%s%N)
	DBUS_SESSION_BUS_ADDRESS=$bus dbus-test-tool spam --dest=org.volley.bench.Echo --count=$n --bytes --payload="$payload" >/dev/null
	t1=$(date +%s%N)
	python3 -c "s = ($t1 - $t0) / 1e9; print('%.0f %.2f' % ($n / s, s / $n * 1e6))"
}

echo "D-Bus round trips through dbus-daemon against a Unix stream socket, same reflector, ${SIZE}-byte messages, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-5s %10s %10s %10s %10s %10s %10s\n' round "dbus p50" "dbus p99" "dbus rt/s" "unix p50" "unix p99" "unix rt/s"
: >"$tmp/rows"
for i in $(seq "$ROUNDS"); do
	read -r d50 d99 drate < <(run "dbus:$bus")
	read -r u50 u99 urate < <(run "unix://$tmp/v.sock")
	read -r crate cmean < <(ctool)
	printf '%-5s %8sµs %8sµs %10s %8sµs %8sµs %10s   dbus-test-tool %s rt/s, mean %sµs\n' "$i" "$d50" "$d99" "$drate" "$u50" "$u99" "$urate" "$crate" "$cmean"
	echo "$d50 $d99 $drate $u50 $u99 $urate $crate $cmean" >>"$tmp/rows"
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
m = [statistics.median(c) for c in zip(*rows)]
print("median D-Bus p50 %.2fµs p99 %.2fµs %.0f round trips/s; Unix p50 %.2fµs p99 %.2fµs %.0f/s" % tuple(m[:6]))
print("D-Bus/Unix: p50 x%.1f, p99 x%.1f, round trips/s x%.2f" % (m[0] / m[3], m[1] / m[4], m[2] / m[5]))
print("median dbus-test-tool spam->echo %.0f round trips/s, mean %.2fµs" % (m[6], m[7]))
print("volley D-Bus / dbus-test-tool: round trips/s x%.2f (target >= 0.9), p50 / its mean x%.2f (target <= 1.15)" % (m[2] / m[6], m[0] / m[7]))
PY
