package e2e

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// TestLocalQueueVeth: with a tbf queue (50 Mbit/s) on the client's
// side of a veth pair and a bulk TCP upload through it, the probes wait in
// that queue: the client's local queue (transmit stamp less the
// scheduler's) grows from microseconds to milliseconds, the round trip
// the tool measures holds it, and the kernel's round trip, which starts
// at the transmit stamp taken after the queue, does not.
func TestLocalQueueVeth(t *testing.T) {
	nsA, nsB := vethNamespaces(t, "vlq", 219)
	addTbf(t, nsA) // the load test's bottleneck: 50 Mbit/s, a 20 ms queue
	srv := startServerCmd(t, exec.Command("ip", "netns", "exec", nsB, volley, "server", "--listen", "10.219.0.2:7766", "-q", "--tcp=false"))
	defer func() {
		if err := srv.stop(t, syscall.SIGINT); err != nil {
			t.Errorf("server exit: %v\n%s", err, srv.output())
		}
	}()
	probe := func(phase string) *result.Result {
		t.Helper()
		// send stack is a kernel stamp less the client's own time, which
		// keeps the wall time of its start: again if the clock steps.
		var r run
		unstepped(t, "the kernel's stamps and the client's own times cannot be compared", func() {
			r = volleyRunIn(t, nsA, "client", srv.addr, "-n", "400", "--rate", "200", "--timestamps", "kernel", "--format", "json")
		})
		if r.code != 0 {
			t.Fatalf("%s client: exit %d: %s", phase, r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		if res.Summary.Kernel == nil {
			t.Fatalf("%s run: no kernel figures (timestamps %+v)", phase, res.Timestamps)
		}
		return res
	}
	idle := probe("idle")
	if idle.Summary.Kernel.LocalQueue.Count == 0 {
		t.Skip("skipping: this kernel gave no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED): no local queue to measure")
	}
	flow := startBulk(t, nsA, nsB, "10.219.0.1", "10.219.0.2", 1)
	time.Sleep(time.Second) // the flow fills the queue
	loaded := probe("loaded")
	flow.stop()
	if flow.read.Load() == 0 {
		t.Fatal("the bulk upload moved nothing")
	}
	p50 := func(l result.Latency) time.Duration { return median(t, "a", l) }
	ik, lk := idle.Summary.Kernel, loaded.Summary.Kernel
	t.Logf("p50 idle: rtt %v, rtt kern %v, send stack %v, local queue %v", p50(idle.Summary.RTT), p50(ik.RTT), p50(ik.SendStack), p50(ik.LocalQueue))
	t.Logf("p50 loaded: rtt %v, rtt kern %v, send stack %v, local queue %v", p50(loaded.Summary.RTT), p50(lk.RTT), p50(lk.SendStack), p50(lk.LocalQueue))
	if lk.LocalQueue.Count == 0 {
		t.Fatal("the loaded run has no local queue figures")
	}
	if q, q0 := p50(lk.LocalQueue), p50(ik.LocalQueue); q <= 10*q0 {
		t.Errorf("local queue p50 %v under load, %v idle: want it more than 10 times longer", q, q0)
	}
	// Each probe's round trip, as the tool times it, holds its wait in
	// the queue; the kernel's starts after it.
	if rtt, q := p50(loaded.Summary.RTT), p50(lk.LocalQueue); rtt < q {
		t.Errorf("rtt p50 %v under load, below the local queue's %v", rtt, q)
	}
	if rk, q := p50(lk.RTT), p50(lk.LocalQueue); rk >= q {
		t.Errorf("rtt kern p50 %v under load, not below the local queue's %v: the queue is before the transmit stamp", rk, q)
	}
	if s, q := p50(lk.SendStack), p50(lk.LocalQueue); s < q {
		t.Errorf("send stack p50 %v under load, below the local queue's %v, which is part of it", s, q)
	}
}
