#!/usr/bin/env bash
# Every side-by-side comparison in one go, by hand (not in CI), from the
# repository root: issue 17's targets, each a row with its verdict. Each
# script alternates volley and its peer round by round (ROUNDS of each,
# default 3) and installs the peers from Debian packages if they are
# missing; this one prints their medians in one table of volley/peer
# ratios with the target and the verdict beside each. volley runs with the
# flags a user runs (STAMPS=auto: kernel stamps on UDP, at both ends)
# unless a row says otherwise. Each script's whole output follows the
# table, and stays in $OUT when it is set.
#
#   bench/compare.sh
#   ROUNDS=5 SECS=10 OUT=/tmp/cmp bench/compare.sh
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
export SECS
STAMPS=${STAMPS:-auto}
export STAMPS
if [ -n "${OUT:-}" ]; then
	out=$OUT
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

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
run udp-user bench/udp-rr.sh PAIRS="$ROUNDS" STAMPS=user
run gofloor-block bench/gofloor.sh ROUNDS="$ROUNDS" MODE=block
run gofloor-block-stamped bench/gofloor.sh ROUNDS="$ROUNDS" MODE=block STAMPED=1
run udp-busy bench/udp-rr.sh PAIRS="$ROUNDS" BUSY=1 FLOOR=1
run gofloor bench/gofloor.sh ROUNDS="$ROUNDS"
run gofloor-stamped bench/gofloor.sh ROUNDS="$ROUNDS" STAMPED=1
run tcp bench/tcp-rr.sh ROUNDS="$ROUNDS"
run gofloor-tcp-block bench/gofloor.sh ROUNDS="$ROUNDS" MODE=block PROTO=tcp
run tcp-busy bench/tcp-rr.sh ROUNDS="$ROUNDS" BUSY=1 FLOOR=1
run gofloor-tcp bench/gofloor.sh ROUNDS="$ROUNDS" PROTO=tcp
run max-rate bench/max-rate.sh ROUNDS="$ROUNDS"
# One pacing run is one sample of the machine's stalls (the 1k/s send
# error's p99 went 16-41 µs over three runs in a row): the rows take the
# median of ROUNDS runs.
for i in $(seq "$ROUNDS"); do
	run "rate$i" bench/rate.sh RATES="1000 100000"
done

# Unix stream and datagram ping-pong have no peer here: their p50 beside
# UDP's, alternating, against one reflector; and the same for the Go
# floors (bench/gofloor -mode block), a Unix stream against UDP with
# volley's stamps (unless STAMPS=user), which tell what the kernel alone
# gives each.
. bench/common.sh
if [ -z "${OUT:-}" ]; then
	trap 'cleanup; rm -rf "$out"' EXIT
fi
SIZE=64
rm -f "$tmp/v.sock" "$tmp/g.sock"
start_volley_server -q --unix "$tmp/v.sock" --unixgram "$tmp/g.sock"
ups=() xps=() gps=() fups=() fxps=()
fstamps=(-stamps)
if [ "$STAMPS" = user ]; then
	fstamps=()
fi
for _ in $(seq "$ROUNDS"); do
	read -r p _ < <(volley_pingpong "$vaddr") && ups+=("$p")
	read -r p _ < <(volley_pingpong "unix://$tmp/v.sock") && xps+=("$p")
	read -r p _ < <(volley_pingpong "unixgram://$tmp/g.sock") && gps+=("$p")
	gofloor_pingpong "$tmp/gofloor.out" 127.0.0.1:11118 -mode block "${fstamps[@]}" &&
		read -r p _ <"$tmp/gofloor.out" && fups+=("$p")
	gofloor_pingpong "$tmp/gofloor.out" "$tmp/f.sock" -mode block -unix -size "$SIZE" &&
		read -r p _ <"$tmp/gofloor.out" && fxps+=("$p")
done
up50=$(median "${ups[@]}") xp50=$(median "${xps[@]}") gp50=$(median "${gps[@]}")
fup50=$(median "${fups[@]}") fxp50=$(median "${fxps[@]}")
printf 'udp %s\nunix %s\nunixgram %s\nfloor udp %s\nfloor unix %s\n' "${ups[*]}" "${xps[*]}" "${gps[*]}" \
	"${fups[*]}" "${fxps[*]}" >"$out/unix"
gofloor_said >>"$out/unix"

rate_median() { # RATE TOOL FIELD: the median over the rounds of a rate.sh column (4: achieved-rate error, 8: send error p99)
	awk -v r="$1" -v t="$2" -v f="$3" '$1 == r && $2 == t {print $f}' "$out"/rate[0-9]* |
		sort -g | awk '{v[NR] = $0} END {if (NR) print v[int((NR + 1) / 2)]}'
}
v100k_err=$(rate_median 100000 volley 4)
v1k_p99=$(rate_median 1000 volley 8)

# verdict VALUE OP TARGET: "ok" or "MISSED" (or "?" without a value);
# VALUE and TARGET may carry a unit or a sign, which are dropped.
verdict() {
	python3 - "$1" "$2" "$3" <<'PY'
import re, sys
def num(s):
    m = re.search(r"-?[0-9.]+", s)
    return float(m.group()) if m else None
v, op, t = num(sys.argv[1]), sys.argv[2], num(sys.argv[3])
if v is None or t is None:
    print("?")
elif op == "abs<=":
    print("ok" if abs(v) <= t else "MISSED")
else:
    print("ok" if {"<=": v <= t, ">=": v >= t}[op] else "MISSED")
PY
}
# over A B: A/B to 3 places (a ratio of ratios: volley/sockperf over
# floor/sockperf is volley over the floor, both measured beside sockperf).
over() {
	if [ -z "$1" ] || [ -z "$2" ]; then
		echo "?"
		return
	fi
	python3 -c "print('%.3f' % ($1 / $2))"
}

row() { # CHECK VALUE OP TARGET
	printf '%-66s %12s %-10s %s\n' "$1" "$2" "$3 $4" "$(verdict "$2" "$3" "$4")"
}
m() { median_of "$out/$1" "$2"; }
udp50=$(m udp 'median p50 ratio volley\/sockperf:')
floor50=$(m gofloor-block 'median p50 ratio gofloor\/sockperf:')
busy50=$(m udp-busy 'median p50 ratio volley\/sockperf:')
busy999=$(m udp-busy 'median p99.9 ratio volley\/sockperf:')
bfloor50=$(m gofloor 'median p50 ratio gofloor\/sockperf:')
bfloor999=$(m gofloor 'median p99.9 ratio gofloor\/sockperf:')
sfloor50=$(m gofloor-block-stamped 'median p50 ratio gofloor\/sockperf:')
sbfloor50=$(m gofloor-stamped 'median p50 ratio gofloor\/sockperf:')
tbusy50=$(m tcp-busy 'median p50 ratio volley\/sockperf:')
tbusy999=$(m tcp-busy 'median p99.9 ratio volley\/sockperf:')
tcp50=$(m tcp 'median p50 ratio volley\/sockperf:')
tfloor50=$(m gofloor-tcp-block 'median p50 ratio gofloor\/sockperf:')
tbfloor50=$(m gofloor-tcp 'median p50 ratio gofloor\/sockperf:')
tbfloor999=$(m gofloor-tcp 'median p99.9 ratio gofloor\/sockperf:')

echo "volley side by side on 127.0.0.1, $(nproc) CPUs, $ROUNDS rounds of ${SECS}s, $(date -u +%Y-%m-%dT%H:%MZ); volley with --timestamps $STAMPS unless said"
echo "machine floor (bench/stalls.c, before the runs): $stalls"
printf '%-66s %12s %-10s %s\n' check value target verdict
row "UDP ping-pong p50 / sockperf" "$udp50" "<=" 1.00
row "UDP ping-pong p50 / Go blocking floor (bench/gofloor -mode block)" "$(over "$udp50" "$floor50")" "<=" 1.05
printf '%-66s %12s\n' "  Go blocking floor p50 / sockperf" "$floor50"
printf '%-66s %12s\n' "  Go blocking floor with volley's stamps and marks / floor" "$(over "$sfloor50" "$floor50")"
printf '%-66s %12s\n' "  UDP ping-pong p50 / that stamped floor (volley's own part)" "$(over "$udp50" "$sfloor50")"
printf '%-66s %12s\n' "  UDP ping-pong p50 / sockperf, --timestamps user" "$(m udp-user 'median p50 ratio volley\/sockperf:')"
printf '%-66s %12s\n' "  UDP ping-pong mean / qperf udp_lat" "$(m udp 'median mean ratio volley\/qperf:')"
row "TCP ping-pong p50 / sockperf --tcp" "$tcp50" "<=" 1.00
printf '%-66s %12s\n' "  Go TCP blocking floor p50 / sockperf --tcp" "$tfloor50"
printf '%-66s %12s\n' "  TCP ping-pong p50 / that floor" "$(over "$tcp50" "$tfloor50")"
row "TCP ping-pong mean / iperf 2 bounceback" "$(m tcp 'median mean ratio volley\/iperf:')" "<=" 1.00
row "Unix stream ping-pong p50 / UDP's (${xp50} / ${up50} µs)" "$(over "$xp50" "$up50")" "<=" 1.00
printf '%-66s %12s\n' "  Go Unix stream floor / Go UDP floor (${fxp50} / ${fup50} µs)" "$(over "$fxp50" "$fup50")"
row "Unix datagram ping-pong p50 / UDP's (${gp50} / ${up50} µs)" "$(over "$gp50" "$up50")" "<=" 1.00
# The busy rows: volley against the floor run beside it in each round
# (FLOOR=1), not through two sections' ratios to sockperf, whose busy
# p50 swung 0.7-1.3x from round to round in one run here.
row "UDP busy-poll p50 / Go busy floor (bench/gofloor), alternated" "$(m udp-busy 'median p50 ratio volley\/floor:')" "<=" 1.05
row "UDP busy-poll p99.9 / Go busy floor, alternated" "$(m udp-busy 'median p99.9 ratio volley\/floor:')" "<=" 1.5
printf '%-66s %12s\n' "  the same through sockperf (two sections' medians)" "$(over "$busy50" "$bfloor50"), $(over "$busy999" "$bfloor999")"
row "TCP busy-poll p50 / Go TCP busy floor (gofloor -tcp), alternated" "$(m tcp-busy 'median p50 ratio volley\/floor:')" "<=" 1.05
row "TCP busy-poll p99.9 / Go TCP busy floor, alternated" "$(m tcp-busy 'median p99.9 ratio volley\/floor:')" "<=" 1.5
printf '%-66s %12s\n' "  the same through sockperf (two sections' medians)" "$(over "$tbusy50" "$tbfloor50"), $(over "$tbusy999" "$tbfloor999")"
printf '%-66s %12s\n' "  Go TCP busy floor p50, p99.9 / sockperf --tcp --nonblocked" "$tbfloor50, $tbfloor999"
printf '%-66s %12s\n' "  TCP busy-poll p50, p99.9 / Go busy floor (UDP's, as before)" "$(over "$tbusy50" "$bfloor50"), $(over "$tbusy999" "$bfloor999")"
printf '%-66s %12s\n' "  Go busy floor p50, p99.9 / sockperf --nonblocked" "$bfloor50, $bfloor999"
printf '%-66s %12s\n' "  Go busy floor with volley's stamps and marks / floor" "$(over "$sbfloor50" "$bfloor50")"
printf '%-66s %12s\n' "  UDP busy-poll p50 / that stamped floor (volley's own part)" "$(over "$busy50" "$sbfloor50")"
row "replies/s at max rate / sockperf's server (1 worker)" "$(m max-rate 'median replies\/s ratio volley\/sockperf:')" ">=" 1.5
row "100k probes/s open loop: achieved rate error" "$v100k_err" "abs<=" "1%"
row "1k probes/s open loop: send error p99" "$v1k_p99" "<=" "20µs"
printf '%-66s %12s\n' "  a spinning C thread's lateness p99 (bench/stalls.c, before the runs)" "$(sed -n 's/.*, p99 \([0-9]*\)us late.*/\1µs/p' <<<"$stalls")"
printf '%-66s %12s\n' "D-Bus round trips/s / dbus-test-tool spam->echo" "not here: bench/dbus-rr.sh"
echo
for f in udp udp-user gofloor-block gofloor-block-stamped udp-busy gofloor gofloor-stamped tcp gofloor-tcp-block tcp-busy gofloor-tcp max-rate $(seq -f 'rate%g' "$ROUNDS") unix; do
	echo "== $f"
	cat "$out/$f"
done
