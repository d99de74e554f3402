#!/usr/bin/env bash
# Every side-by-side comparison in one go, by hand (not in CI), from the
# repository root. Each script alternates volley and its peer round by
# round (ROUNDS of each, default 3) and installs the peers from Debian
# packages if they are missing; this one prints their medians in one table
# of volley/peer ratios with the target beside each.
#
#   bench/compare.sh
#   ROUNDS=5 SECS=10 bench/compare.sh
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
export SECS
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # NAME SCRIPT [ENV...]: runs a script, keeping its output
	local name=$1 script=$2
	shift 2
	echo "running $name ($script)..." >&2
	env "$@" bash "$script" >"$out/$name" 2>&1 || { echo "$script failed:" >&2; cat "$out/$name" >&2; exit 1; }
}
median_of() { # FILE PATTERN: the number after PATTERN in FILE
	sed -n "s/^$2 *\([0-9.]*\).*/\1/p" "$1" | head -1
}

# The machine's floor first, on an idle machine: how often a spinning
# thread loses its CPU for more than 10 µs (bench/stalls.c; needs a C
# compiler, installed from Debian packages if missing).
if ! command -v cc >/dev/null; then
	echo "installing gcc from Debian packages" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi
cc -O2 -o "$out/stalls" bench/stalls.c
stalls=$("$out/stalls" 3)

run udp bench/udp-rr.sh PAIRS="$ROUNDS"
run udp-kernel bench/udp-rr.sh PAIRS="$ROUNDS" STAMPS=auto
run udp-busy bench/udp-rr.sh PAIRS="$ROUNDS" BUSY=1
run gofloor bench/gofloor.sh ROUNDS="$ROUNDS"
run tcp bench/tcp-rr.sh ROUNDS="$ROUNDS"
run tcp-busy bench/tcp-rr.sh ROUNDS="$ROUNDS" BUSY=1
run max-rate bench/max-rate.sh ROUNDS="$ROUNDS"
run rate bench/rate.sh RATES="1000 100000"

# Unix stream ping-pong has no peer here; its p50 next to UDP's.
. bench/common.sh
trap 'cleanup; rm -rf "$out"' EXIT
SIZE=64
rm -f "$tmp/v.sock"
start_volley_server -q --unix "$tmp/v.sock"
read -r up50 _ < <(volley_pingpong "$vaddr")
read -r xp50 _ < <(volley_pingpong "unix://$tmp/v.sock")

rate_line() { # RATE TOOL: achieved-rate error and send error p99 from rate.sh
	awk -v r="$1" -v t="$2" '$1 == r && $2 == t {print $4, $8}' "$out/rate"
}
read -r v100k_err v100k_p99 < <(rate_line 100000 volley)
read -r v1k_err v1k_p99 < <(rate_line 1000 volley)

echo "volley side by side on 127.0.0.1, $(nproc) CPUs, $ROUNDS rounds of ${SECS}s, $(date -u +%Y-%m-%dT%H:%MZ); volley with --timestamps user unless said"
printf '%-52s %12s %s\n' check "volley/peer" target
printf '%-52s %12s %s\n' "UDP ping-pong p50 / sockperf" "$(median_of "$out/udp" 'median p50 ratio volley\/sockperf:')" "(none set)"
printf '%-52s %12s %s\n' "UDP ping-pong p50 / sockperf, default kernel stamps" "$(median_of "$out/udp-kernel" 'median p50 ratio volley\/sockperf:')" "(their cost)"
printf '%-52s %12s %s\n' "UDP ping-pong mean / qperf udp_lat" "$(median_of "$out/udp" 'median mean ratio volley\/qperf:')" ""
printf '%-52s %12s %s\n' "UDP busy-poll p50 / sockperf --nonblocked" "$(median_of "$out/udp-busy" 'median p50 ratio volley\/sockperf:')" "<= 1.00"
printf '%-52s %12s %s\n' "UDP busy-poll p99.9 / sockperf --nonblocked" "$(median_of "$out/udp-busy" 'median p99.9 ratio volley\/sockperf:')" "<= 1.2"
printf '%-52s %12s %s\n' "  Go floor (bench/gofloor) p50, p99.9 / sockperf" "$(median_of "$out/gofloor" 'median p50 ratio gofloor\/sockperf:'), $(median_of "$out/gofloor" 'median p99.9 ratio gofloor\/sockperf:')" "(what Go costs)"
printf '%-52s %12s %s\n' "UDP busy-poll round trips/s / sockperf --nonblocked" "$(median_of "$out/udp-busy" 'median round-trip rate ratio volley\/sockperf:')" ">= 1"
printf '%-52s %12s %s\n' "TCP ping-pong p50 / sockperf --tcp" "$(median_of "$out/tcp" 'median p50 ratio volley\/sockperf:')" ""
printf '%-52s %12s %s\n' "TCP busy-poll p50 / sockperf --tcp --nonblocked" "$(median_of "$out/tcp-busy" 'median p50 ratio volley\/sockperf:')" "<= 1.00"
printf '%-52s %12s %s\n' "TCP busy-poll p99.9 / sockperf --tcp --nonblocked" "$(median_of "$out/tcp-busy" 'median p99.9 ratio volley\/sockperf:')" "<= 1.2"
printf '%-52s %12s %s\n' "TCP ping-pong mean / iperf 2 bounceback" "$(median_of "$out/tcp" 'median mean ratio volley\/iperf:')" ""
printf '%-52s %12s %s\n' "replies/s at max rate / sockperf under-load max" "$(median_of "$out/max-rate" 'median replies\/s ratio volley\/sockperf:')" ">= 2"
printf '%-52s %12s %s\n' "100k/s: achieved rate error (volley)" "$v100k_err" "within 1%"
printf '%-52s %12s %s\n' "100k/s: send error p99 (volley)" "$v100k_p99" "< 10µs"
printf '%-52s %12s %s\n' "1k/s: send error p99 (volley)" "$v1k_p99" "< 10µs"
printf '%-52s %12s %s\n' "Unix stream ping-pong p50 (UDP's beside it)" "${xp50}µs" "(UDP ${up50}µs)"
echo "machine floor (bench/stalls.c, before the runs): $stalls"
echo
for f in udp udp-kernel udp-busy gofloor tcp tcp-busy max-rate rate; do
	echo "== $f"
	cat "$out/$f"
done
