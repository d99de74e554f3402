#!/usr/bin/env bash
# Attacks on the reflector (issue 14), each beside a legitimate UDP and TCP
# client at 1000 probes/s. Run by hand (not in CI), as root (raw sockets for
# forged sources, thousands of descriptors), from anywhere in the checkout:
#
#   bench/hostile.sh | tee bench/results/hostile-latest.txt
#   HOSTILE_QUICK=1 bench/hostile.sh             # smaller counts and phases: a quick check
#   VOLLEY=/path/to/volley bench/hostile.sh      # another build (default: built from this checkout)
#   ONLY="held-tcp replay" bench/hostile.sh      # some attacks only
#   SERVER_ARGS="--max-conns 4096" bench/hostile.sh   # flags for every server
#   HOSTILE_KEEP=1 bench/hostile.sh              # keep the logs and the clients' JSON (the last attack's)
#
# Per attack: a fresh `volley server` (UDP and TCP on 127.0.0.1, a Unix
# socket under /tmp); fresh legitimate sessions before the attack, during it
# (once the attacker says it is in place) and after it (the attacker gone);
# the server's peak RSS (VmHWM) and descriptors (/proc/PID/fd) sampled
# throughout; then the attack again and SIGTERM, timed until the server has
# exited (SIGKILL after 5 s). The attacker, bench/hostile, counts the bytes
# each of its addresses sent the server and got back. One table row per
# attack, a verdict per target, then each attack's details.
#
# Targets (issue 14): legitimate sessions lose 0 probes and keep p99 within
# 2x of the unattacked run; peak RSS under 128 MB; exit within 1 s of
# SIGTERM; bytes out <= 2x bytes in for every address the attacker can spoof.
set -euo pipefail
if [ -n "${VOLLEY:-}" ]; then # before the cd below
	if [[ $VOLLEY == */* ]]; then VOLLEY=$(realpath -e "$VOLLEY"); else VOLLEY=$(command -v "$VOLLEY"); fi
fi
cd "$(dirname "$0")/.."

RATE=1000
SPREAD=${SPREAD:-20}    # source addresses of the spread attacks
TERM_MAX=5              # seconds before SIGKILL
KEY=hostile-bench-key   # replay-signed's shared key
if [ "${HOSTILE_QUICK:-0}" = 1 ]; then
	BASE=2 BEFORE=1 DURING=3 AFTER=1
	HELD_PROBES=50 PARTIAL_CONNS=30 CHURN_CONNS=40 IDLE_CONNS=300
	FLOOD_PORTS=200 FLOOD_RATE=${FLOOD_RATE:-5000} FILL=200 REPLAYS=20 REPLAY_IDLE=1
else
	BASE=5 BEFORE=3 DURING=6 AFTER=3
	HELD_PROBES=300 PARTIAL_CONNS=200 CHURN_CONNS=200 IDLE_CONNS=2000
	FLOOD_PORTS=1000 FLOOD_RATE=${FLOOD_RATE:-20000} FILL=999 REPLAYS=100 REPLAY_IDLE=2
fi
ONLY=${ONLY:-}
read -ra extra <<<"${SERVER_ARGS:-}"

for t in go timeout; do
	command -v "$t" >/dev/null || { echo "bench/hostile.sh needs $t" >&2; exit 1; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

tmp=$(mktemp -d /tmp/hostile.XXXXXX)
sock=$tmp/v.sock
pids=() # every process started here, by PID, until waited for

alive() { # PID: running, not a zombie
	local st
	st=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}
forget() { # PID...: waited for, no longer ours to stop
	local p keep=()
	for p in "${pids[@]}"; do [[ " $* " == *" $p "* ]] || keep+=("$p"); done
	pids=("${keep[@]}")
}
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	sleep 0.3
	for p in "${pids[@]}"; do if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi; done
	wait 2>/dev/null || true
	if [ "${HOSTILE_KEEP:-0}" = 1 ]; then echo "hostile: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

go build -o "$tmp/hostile" ./bench/hostile
tool=$tmp/hostile
if [ -n "${VOLLEY:-}" ]; then
	vol=$VOLLEY
	what="$VOLLEY"
else
	go build -o "$tmp/volley" ./cmd/volley
	vol=$tmp/volley
	what="built from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- cmd internal go.mod go.sum 2>/dev/null || echo ' with uncommitted changes')"
fi
hardening=$("$vol" server --help 2>&1 | grep -oE -- '--(max-memory|max-conns|max-conns-per-source|max-sessions-per-source|send-timeout|handshake-timeout)\b' | sort -u | tr '\n' ' ' || true)

# start_server ARGS...: a fresh server and its watcher; sets spid, saddr, wpid.
start_server() {
	rm -f "$sock"
	: >"$tmp/server.log" # here, not in the child: the polling below must not see the last server's
	"$vol" server --listen 127.0.0.1:0 --unix "$sock" -q "${extra[@]}" "$@" >"$tmp/server.log" 2>&1 &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 100); do
		grep -q '^listening on unix://' "$tmp/server.log" && break
		sleep 0.05
	done
	saddr=$(sed -n 's|^listening on udp://||p' "$tmp/server.log" | head -1)
	[ -n "$saddr" ] || { echo "volley server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
	"$tool" watch -pid "$spid" >"$tmp/watch.out" 2>&1 &
	wpid=$!
	pids+=("$wpid")
}

# finish_server: SIGTERM, timed; sets exit_s, peak_kb, peak_fds.
finish_server() {
	exit_s=$("$tool" term -pid "$spid" -max "${TERM_MAX}s")
	wait "$spid" 2>/dev/null || true
	forget "$spid"
	local n=50
	while alive "$wpid" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	if alive "$wpid"; then kill -TERM "$wpid" 2>/dev/null || true; fi
	wait "$wpid" 2>/dev/null || true
	forget "$wpid"
	peak_kb=- peak_fds=-
	read -r _ peak_kb _ peak_fds _ <"$tmp/watch.out" || true
}

declare -A cell
# legit_phase PHASE SECS [CLIENT ARGS...]: a UDP and a TCP client at $RATE/s
# for SECS s, side by side, each a fresh session; sets cell[udp-PHASE] and
# cell[tcp-PHASE] to lost/expected/p99ns.
legit_phase() {
	local ph=$1 secs=$2 t p
	shift 2
	local -A cpid
	for t in udp tcp; do
		local to=$saddr
		[ "$t" = tcp ] && to=tcp://$saddr
		timeout -k 2 $((secs + 20)) "$vol" client "$to" --rate "$RATE" -t "${secs}s" -i 0 --format json "$@" \
			>"$tmp/$t-$ph.json" 2>"$tmp/$t-$ph.err" &
		cpid[$t]=$!
		pids+=("${cpid[$t]}")
	done
	for t in udp tcp; do
		p=${cpid[$t]}
		wait "$p" || true
		forget "$p"
		cell[$t-$ph]=$("$tool" legit -rate "$RATE" -duration "${secs}s" "$tmp/$t-$ph.json")
		if [ -s "$tmp/$t-$ph.err" ]; then
			echo "  $t client $ph: $(head -c 300 "$tmp/$t-$ph.err" | tr '\n' ' ')" >>"$tmp/notes"
		fi
	done
}

# start_attacker OUT ARGS...: sets apid.
start_attacker() {
	local out=$1
	shift
	: >"$out" # here, not in the child: wait_ready must not see the last attacker's
	"$tool" "$@" >"$out" 2>"$out.err" &
	apid=$!
	pids+=("$apid")
}

wait_ready() { # OUT PID: until the attacker says ready, ends, or 60 s pass
	for _ in $(seq 600); do
		grep -q '^ready' "$1" && return 0
		alive "$2" || return 0
		sleep 0.1
	done
	echo "  the attacker was not ready after 60 s" >>"$tmp/notes"
}

stop_attacker() { # PID SECS: let it end by itself within SECS s, else SIGTERM (SIGKILL 10 s later)
	local p=$1 n=$(($2 * 10))
	while alive "$p" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	if alive "$p"; then
		kill -TERM "$p" 2>/dev/null || true
		n=100
		while alive "$p" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
		if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
	fi
	wait "$p" 2>/dev/null || true
	forget "$p"
}

# run_attack NAME SPOOFABLE REATTACK "SERVER ARGS" "CLIENT ARGS" SUBCOMMAND [ARGS...]:
# one attack; in ARGS @udp@, @tcp@ and @unix@ stand for the server's
# addresses. SPOOFABLE 1: the bytes target applies (UDP). REATTACK 1: the
# attack is set up again before SIGTERM (0: SIGTERM after the after phase).
run_attack() {
	local name=$1 spoof=$2 reattack=$3 srv=$4 cli=$5 a
	shift 5
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
	echo "hostile: $name" >&2
	local srvargs=() cliargs=() args=()
	read -ra srvargs <<<"$srv"
	read -ra cliargs <<<"$cli"
	: >"$tmp/notes"
	start_server "${srvargs[@]}"
	for a in "$@"; do
		a=${a//@udp@/$saddr}
		a=${a//@tcp@/tcp://$saddr}
		a=${a//@unix@/unix://$sock}
		args+=("$a")
	done
	legit_phase before "$BEFORE" "${cliargs[@]}"
	start_attacker "$tmp/attack.out" "${args[@]}" -hold "$((DURING + 1))s"
	wait_ready "$tmp/attack.out" "$apid"
	legit_phase during "$DURING" "${cliargs[@]}"
	stop_attacker "$apid" $((DURING + 30))
	legit_phase after "$AFTER" "${cliargs[@]}"
	: >"$tmp/again.out"
	if [ "$reattack" = 1 ]; then
		start_attacker "$tmp/again.out" "${args[@]}" -hold 60s
		wait_ready "$tmp/again.out" "$apid"
		finish_server
		stop_attacker "$apid" 0
	else
		finish_server
	fi
	local ratio
	ratio=$(sed -n 's/^bytes-max-ratio //p' "$tmp/attack.out" | head -1)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$spoof" \
		"${cell[udp-before]}" "${cell[udp-during]}" "${cell[udp-after]}" "${cell[tcp-before]}" "${cell[tcp-during]}" "${cell[tcp-after]}" \
		"$peak_kb" "$peak_fds" "${ratio:--}" "$exit_s" >>"$tmp/rows"
	{
		echo "== $name: hostile ${args[*]}${srv:+ (server: $srv)}"
		grep -v '^ready\|^bytes-max-ratio' "$tmp/attack.out" | sed 's/^/  /' || true
		sed 's/^/  attacker: /' "$tmp/attack.out.err" | head -5
		sed -n 's/^ready /  again before SIGTERM: /p' "$tmp/again.out"
		grep '^--- totals' "$tmp/server.log" | sed 's/^--- /  server /' || echo "  server: no totals (killed)"
		grep -iv '^listening on\|^---' "$tmp/server.log" | head -5 | sed 's/^/  server: /' || true
		cat "$tmp/notes"
	} >>"$tmp/details"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg) start=$(date -u +%Y-%m-%dT%H:%MZ)
echo "hostile: baseline" >&2
: >"$tmp/notes"
start_server
legit_phase before "$BASE"
finish_server
printf 'baseline\t0\t%s\t-\t-\t%s\t-\t-\t%s\t%s\t-\t%s\n' "${cell[udp-before]}" "${cell[tcp-before]}" "$peak_kb" "$peak_fds" "$exit_s" >"$tmp/rows"
{
	echo "== baseline: no attack, ${BASE}s"
	grep '^--- totals' "$tmp/server.log" | sed 's/^--- /  server /' || true
	cat "$tmp/notes"
} >"$tmp/details"

run_attack held-tcp 0 1 "" "" held -target @tcp@ -probes "$HELD_PROBES"
run_attack held-unix 0 1 "" "" held -target @unix@ -probes "$HELD_PROBES"
run_attack partial 0 1 "" "" partial -target @tcp@ -conns "$PARTIAL_CONNS"
run_attack partial-prehs 0 1 "" "" partial -target @tcp@ -conns "$PARTIAL_CONNS" -handshake=false
run_attack partial-spread 0 1 "" "" partial -target @tcp@ -conns "$PARTIAL_CONNS" -handshake=false -sources "$SPREAD"
run_attack churn 0 1 "" "" churn -target @tcp@ -waves 5 -conns "$CHURN_CONNS"
run_attack idle 0 1 "" "" idle -target @tcp@ -conns "$IDLE_CONNS"
run_attack idle-spread 0 1 "" "" idle -target @tcp@ -conns "$IDLE_CONNS" -sources "$SPREAD"
run_attack hello-flood 1 1 "" "" flood -target @udp@ -ports "$FLOOD_PORTS" -rate "$FLOOD_RATE"
run_attack hello-flood-spread 1 1 "" "" flood -target @udp@ -ports "$FLOOD_PORTS" -rate "$FLOOD_RATE" -sources "$SPREAD"
run_attack fill 1 1 "" "" fill -target @udp@ -sessions "$FILL"
run_attack fill-spread 1 1 "" "" fill -target @udp@ -sessions "$FILL" -sources "$SPREAD"
run_attack replay 1 0 "--idle-timeout ${REPLAY_IDLE}s" "" replay -target @udp@ -count "$REPLAYS" -idle "${REPLAY_IDLE}s"
run_attack replay-signed 1 0 "--idle-timeout ${REPLAY_IDLE}s --key $KEY" "--key $KEY" replay -target @udp@ -count "$REPLAYS" -idle "${REPLAY_IDLE}s" -key "$KEY"

echo "volley under attack (bench/hostile.sh, issue 14), $start, $(nproc) CPUs, Linux $(uname -r), load average at the start $load0, at the end $(cut -d" " -f1-3 /proc/loadavg)$([ "${HOSTILE_QUICK:-0}" = 1 ] && echo ', quick mode')"
echo "volley: $what; a fresh \`volley server --listen 127.0.0.1:0 --unix SOCK -q${SERVER_ARGS:+ $SERVER_ARGS}\` per attack; hardening flags in this build: ${hardening:-none}"
echo "legitimate sessions: a UDP and a TCP volley client at $RATE probes/s from 127.0.0.1, fresh ones before (${BEFORE}s), during (${DURING}s, once the attack is in place) and after (${AFTER}s, the attacker gone); baseline ${BASE}s unattacked"
echo "attackers: bench/hostile from 127.0.0.2, or 127.0.1.1-$SPREAD for the -spread attacks; lost counts probes, p99 is the RTT's in ms"
echo
"$tool" report "$tmp/rows"
echo
cat "$tmp/details"
