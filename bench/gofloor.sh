#!/usr/bin/env bash
# The Go floor: bench/gofloor (the least a Go program does per UDP round
# trip) against sockperf, alternating, in one run. MODE=busy (default)
# spins at both ends, against sockperf --nonblocked: what volley's
# busy-poll ratios (bench/udp-rr.sh BUSY=1) are read against; MODE=block
# waits in blocking system calls on locked threads at both ends, against
# sockperf's default: what volley's default path is read against. Run by
# hand (not in CI), from the repository root:
#
#   bench/gofloor.sh                # 3 rounds of 5 s, 64-byte messages
#   MODE=block bench/gofloor.sh
#   STAMPED=1 bench/gofloor.sh      # with volley's kernel stamps and path marks (gofloor -stamps)
#   PROTO=tcp bench/gofloor.sh      # over TCP, 100-byte messages, against sockperf --tcp
#
# Prints each round's p50 and p99.9 in µs and round trips/s, and the median
# ratios gofloor/sockperf, and the floor's own medians.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
MODE=${MODE:-busy}
case $MODE in
busy) spflags=(--nonblocked) ;;
block) spflags=() ;;
*) echo "MODE=$MODE: want busy or block" >&2; exit 2 ;;
esac
gfflags=(-mode "$MODE")
if [ "${STAMPED:-0}" = 1 ]; then
	gfflags+=(-stamps)
fi
SECS=${SECS:-5}
SIZE=64
PROTO=${PROTO:-udp}
case $PROTO in
udp) ;;
tcp)
	SIZE=100
	spflags+=(--tcp)
	gfflags+=(-tcp -size "$SIZE")
	;;
*) echo "PROTO=$PROTO: want udp or tcp" >&2; exit 2 ;;
esac
SP_PORT=${SP_PORT:-11115}
GF_ADDR=${GF_ADDR:-127.0.0.1:11116}

. bench/common.sh

echo "$MODE ${PROTO^^} ping-pong on 127.0.0.1: Go floor (bench/gofloor ${gfflags[*]}) against sockperf ${spflags[*]}, ${SECS}s per run, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-5s %12s %12s %12s %12s %12s %12s %8s %8s\n' round "sockperf p50" "gofloor p50" "sock p99.9" "gof p99.9" "sockperf/s" "gofloor/s" "p50 x" "p99.9 x"
r50s=() r999s=() g50s=() g999s=()
for i in $(seq "$ROUNDS"); do
	sockperf server "${spflags[@]}" -i 127.0.0.1 -p "$SP_PORT" >"$tmp/sockperf-server.log" 2>&1 &
	sp=$!
	pids+=("$sp")
	sleep 0.3
	read -r sp50 _ sp999 srate < <(sockperf_pingpong "${spflags[@]}")
	kill "$sp"
	wait "$sp" 2>/dev/null || true
	gofloor_pingpong "$tmp/gofloor.out" "$GF_ADDR" "${gfflags[@]}"
	read -r gp50 _ gp999 grate <"$tmp/gofloor.out"
	read -r r50 r999 < <(python3 -c "print('%.3f %.3f' % ($gp50 / $sp50, $gp999 / $sp999))")
	r50s+=("$r50") r999s+=("$r999") g50s+=("$gp50") g999s+=("$gp999")
	printf '%-5s %10sµs %10sµs %10sµs %10sµs %12s %12s %8s %8s\n' "$i" "$sp50" "$gp50" "$sp999" "$gp999" "$srate" "$grate" "$r50" "$r999"
done
echo "median p50 ratio gofloor/sockperf: $(median "${r50s[@]}")"
echo "median p99.9 ratio gofloor/sockperf: $(median "${r999s[@]}")"
echo "median gofloor p50: $(median "${g50s[@]}")"
echo "median gofloor p99.9: $(median "${g999s[@]}")"
gofloor_said
