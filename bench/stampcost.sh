#!/usr/bin/env bash
# What the kernel's work for volley's default stamps costs a round trip,
# part by part: bench/gofloor's blocking UDP floor (none of volley's code)
# plain, then with -stamps and each part of that work alone (-parts), then
# all of it, alternating, in one run. Run by hand (not in CI), from the
# repository root:
#
#   bench/stampcost.sh             # 5 rounds of 3 s, blocking floor
#   MODE=busy bench/stampcost.sh   # the busy floor
#
# The parts (bench/gofloor/stamped.go): calls (recvmmsg with a control
# buffer and an empty read of the error queue, -parts none), rx (software
# receive stamps), tx (software transmit stamps, numbered, without the
# datagram, read from the error queue after the answer), marks (TTL and
# traffic class). Each part's row is measured with the calls, so its cost
# is read against the calls' row; "all" is what a default volley run asks
# for. Prints each round's p50 in µs, then each variant's median p50 and
# its cost over the plain floor and over the calls. With MODE=busy the
# plain floor's socket is in Go's poller and the others' are not (as
# volley's busy sockets with stamps are not: bench/gofloor/main.go), so
# the calls' row there counts leaving the poller too.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
MODE=${MODE:-block}
case $MODE in
busy | block) ;;
*) echo "MODE=$MODE: want busy or block" >&2; exit 2 ;;
esac
GF_ADDR=${GF_ADDR:-127.0.0.1:11117}

. bench/common.sh

variants=(plain calls rx tx marks all)
declare -A flags=([plain]="" [calls]="-stamps -parts none" [rx]="-stamps -parts rx" [tx]="-stamps -parts tx"
	[marks]="-stamps -parts marks" [all]="-stamps")
declare -A p50s=()

echo "$MODE UDP ping-pong on 127.0.0.1: bench/gofloor -mode $MODE with parts of volley's kernel stamp work, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-5s' round
printf ' %9s' "${variants[@]}"
echo "   (p50, µs)"
for i in $(seq "$ROUNDS"); do
	printf '%-5s' "$i"
	for v in "${variants[@]}"; do
		# shellcheck disable=SC2086 # the flags are words
		gofloor_pingpong "$tmp/gofloor.out" "$GF_ADDR" -mode "$MODE" ${flags[$v]}
		read -r p50 _ <"$tmp/gofloor.out"
		p50s[$v]+="$p50 "
		printf ' %9s' "$p50"
	done
	echo
done
# shellcheck disable=SC2086 # the lists are words
plain=$(median ${p50s[plain]}) calls=$(median ${p50s[calls]})
printf '%-8s %12s %17s %17s\n' variant "median p50" "over plain" "over calls"
for v in "${variants[@]}"; do
	# shellcheck disable=SC2086
	m=$(median ${p50s[$v]})
	python3 -c "
m, plain, calls = $m, $plain, $calls
print('%-8s %10.2fµs %+8.0fns %+5.1f%% %+8.0fns %+5.1f%%' % ('$v', m, (m - plain) * 1e3, (m / plain - 1) * 100, (m - calls) * 1e3, (m / calls - 1) * 100))"
done
gofloor_said
