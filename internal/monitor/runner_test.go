package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
)

// serveAt starts a reflector at addr (127.0.0.1:0 for any port) and
// returns its address and what stops it.
func serveAt(t *testing.T, addr string) (string, func()) {
	t.Helper()
	pc, err := transport.ListenUDP(addr)
	if err != nil {
		t.Fatal(err)
	}
	refl, err := reflector.New(reflector.Config{ReportInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = refl.Serve(ctx, pc) })
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			pc.Close()
		})
	}
	t.Cleanup(stop)
	return pc.LocalAddr().String(), stop
}

// TestSessionLostAndReopened: a continuous target whose reflector goes
// away is down (Session false) and, when it is back, up again in a new
// session of the same run.
func TestSessionLostAndReopened(t *testing.T) {
	addr, stop := serveAt(t, "127.0.0.1:0")
	sink, health := newFakeSink(), &fakeHealth{}
	m := New(Config{Sink: sink, Health: health})
	m.renewAfter = 1 // and then a fresh run, at once
	if err := m.Set([]Target{{Name: "r", URL: "udp://" + addr, Schedule: fast}}); err != nil {
		t.Fatal(err)
	}
	stopRun := running(t, m)
	r := sink.rec("r")
	intervalsAtLeast(t, sink, 2, "r")
	stop()
	waitFor(t, "the session lost", func() bool { _, _, _, fails := r.snapshot(); return fails >= 1 })
	if _, up := health.targets(); up != 0 {
		t.Errorf("%d targets up with the reflector gone, want 0", up)
	}
	serveAt(t, addr)
	waitFor(t, "a new session", func() bool { _, _, opens, _ := r.snapshot(); return opens >= 2 })
	waitFor(t, "the target up", func() bool { _, up := health.targets(); return up == 1 })
	_, _, _, fails := r.snapshot()
	if fails == 1 {
		// The run reopened the session itself (it may also end, and
		// the runner dial again: a second failure said). renewAfter 1:
		// at its next interval, a fresh run takes over, with no failure.
		waitFor(t, "a new run", func() bool { _, _, opens, _ := r.snapshot(); return opens >= 3 })
	}
	stopRun()
	_, c, _, fails2 := r.snapshot()
	if c.Sent != c.Received+c.Lost+c.InFlight || c.Lost == 0 {
		t.Errorf("counts %+v: want sent = received + lost + in flight, some lost", c)
	}
	if fails == 1 && (c.Reconnects == 0 || fails2 != 1) {
		t.Errorf("%d reconnections, %d failures at the end: want the one, and no failure for the renewal", c.Reconnects, fails2)
	}
}

// TestRounds: a target with a duration is measured in rounds, a session
// each.
func TestRounds(t *testing.T) {
	addr := loopback(t)
	sink := newFakeSink()
	m := New(Config{Sink: sink})
	s := fast
	s.Duration, s.Every = 200*time.Millisecond, 300*time.Millisecond
	if err := m.Set([]Target{{Name: "r", URL: addr, Schedule: s}}); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	r := sink.rec("r")
	waitFor(t, "three rounds", func() bool { _, _, opens, _ := r.snapshot(); return opens >= 3 })
	stop()
	ivs, c, opens, fails := r.snapshot()
	if fails != 0 || ivs < 2*(opens-1) || c.Sent != c.Received+c.Lost+c.InFlight {
		t.Errorf("%d rounds, %d failed, %d intervals, counts %+v", opens, fails, ivs, c)
	}
}

// TestLag: Health hears the send error of the targets' intervals.
func TestLag(t *testing.T) {
	addr := loopback(t)
	sink, health := newFakeSink(), &fakeHealth{}
	m := New(Config{Sink: sink, Health: health})
	m.lagEvery = 10 * time.Millisecond
	if err := m.Set([]Target{{Name: "l", URL: addr, Schedule: fast}}); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	intervalsAtLeast(t, sink, 2, "l")
	waitFor(t, "a lag reported", func() bool {
		health.mu.Lock()
		defer health.mu.Unlock()
		return health.lagCalls > 0 && health.lag > 0
	})
	stop()
}
