#!/usr/bin/env bash
# Monitor soak: one agent probing many targets for a long time; its memory,
# goroutines and CPU must stay flat. Run by hand (not in CI), from the
# repository root:
#
#   bench/monitor-soak.sh                         # 100 targets at 10 probes/s each, 10 minutes
#   TARGETS=20 SECS=120 bench/monitor-soak.sh     # a quick look
#
# The targets are TARGETS names for one `volley server` on loopback (each
# its own session, as many hosts would be); the agent's own reflector is
# the peer list's "self". Every minute it prints the agent's RSS, OS
# threads, goroutines (from its /metrics) and CPU; at the end, the CPU per
# probe and what the targets sent, received and lost.
set -euo pipefail

TARGETS=${TARGETS:-100}
SECS=${SECS:-600}
RATE=${RATE:-10}

. bench/common.sh
start_volley_server -q --max-sessions $((TARGETS + 10)) --max-sessions-per-source $((TARGETS + 10))
addr=$vaddr

agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
{
	echo "targets:"
	echo "  - name: self"
	echo "    url: udp://127.0.0.1:$agent_port"
	for i in $(seq "$TARGETS"); do
		echo "  - name: t$i"
		echo "    url: udp://$addr"
	done
} >"$tmp/peers.yml"
"$tmp/volley" agent --listen "127.0.0.1:$agent_port" --peers "$tmp/peers.yml" --self self --mesh-all $((TARGETS + 1)) \
	--rate "$RATE" --metrics-listen "127.0.0.1:$metrics_port" -q >"$tmp/agent.log" 2>&1 &
agent=$!
pids+=($agent)
metrics="http://127.0.0.1:$metrics_port/metrics"
for _ in $(seq 100); do curl -fsS "$metrics" >/dev/null 2>&1 && break; sleep 0.1; done

probe() { # rss_kB threads cpu_ticks goroutines
	awk '/^VmRSS/ {rss=$2} /^Threads/ {th=$2} END {printf "%s %s ", rss, th}' "/proc/$agent/status"
	awk '{printf "%s ", $14 + $15}' "/proc/$agent/stat"
	curl -fsS "$metrics" | awk '/^go_goroutines / {print $2}'
}
sent() { curl -fsS "$metrics" | awk '/^volley_probes_(sent|received|lost)_total/ {split($1, n, "{"); s[n[1]] += $2} END {printf "%d %d %d\n", s["volley_probes_sent_total"], s["volley_probes_received_total"], s["volley_probes_lost_total"]}'; }

sleep 10 # every target started (starts are spread over a probe gap)
read -r rss0 th0 cpu0 gr0 < <(probe)
read -r sent0 _ _ < <(sent)
peak=$rss0
echo "soak: one agent, $TARGETS targets at $RATE probes/s each for ${SECS}s, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "minute  RSS kB  threads  goroutines  CPU %"
for m in $(seq $((SECS / 60))); do
	sleep 60
	read -r rss th cpu gr < <(probe)
	[ "$rss" -gt "$peak" ] && peak=$rss
	printf '%6d  %6d  %7d  %10d  %5.1f\n' "$m" "$rss" "$th" "$gr" "$(python3 -c "print(100*($cpu-${last:-$cpu0})/$(getconf CLK_TCK)/60)")"
	last=$cpu
done
read -r rss1 th1 cpu1 gr1 < <(probe)
read -r sent1 recv1 lost1 < <(sent)
hz=$(getconf CLK_TCK)
printf 'agent at start: RSS %d kB, %d threads, %d goroutines\n' "$rss0" "$th0" "$gr0"
printf 'agent at end:   RSS %d kB, %d threads, %d goroutines, peak RSS %d kB (end/start %.2f)\n' "$rss1" "$th1" "$gr1" "$peak" "$(python3 -c "print($rss1/$rss0)")"
probes=$((sent1 - sent0))
printf 'agent CPU: %.1f%% of a core; %.1f µs per probe (%d probes)\n' \
	"$(python3 -c "print(100*($cpu1-$cpu0)/$hz/max(1,$SECS))")" "$(python3 -c "print(1e6*($cpu1-$cpu0)/$hz/max(1,$probes))")" "$probes"
echo "targets in all: sent $sent1, received $recv1, lost $lost1"
