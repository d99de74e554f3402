package monitor

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/server"
	"github.com/volley-net/volley/internal/tstamp"
)

// fakeRec is a Recorder that counts what it hears.
type fakeRec struct {
	replies   atomic.Int64
	stopped   atomic.Bool
	afterStop atomic.Int64 // anything heard after the Sink's Stop

	mu        sync.Mutex
	intervals int
	counts    result.Counts
	opens     int
	fails     int
	lastErr   error
}

func (f *fakeRec) after() {
	if f.stopped.Load() {
		f.afterStop.Add(1)
	}
}

func (f *fakeRec) Reply(client.Reply) { f.after(); f.replies.Add(1) }

func (f *fakeRec) Interval(iv result.Interval) {
	f.after()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intervals++
	f.counts.Add(iv.Counts)
}

func (f *fakeRec) Session(open bool, err error) {
	f.after()
	f.mu.Lock()
	defer f.mu.Unlock()
	if open {
		f.opens++
	} else {
		f.fails++
		f.lastErr = err
	}
}

// snapshot returns the intervals, counts, sessions opened and failures.
func (f *fakeRec) snapshot() (int, result.Counts, int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.intervals, f.counts, f.opens, f.fails
}

// fakeSink is a Sink that keeps a fakeRec per target started.
type fakeSink struct {
	mu      sync.Mutex
	recs    map[string]*fakeRec
	starts  map[string]int
	stops   map[string]int
	targets map[string]*Target
}

func newFakeSink() *fakeSink {
	return &fakeSink{recs: map[string]*fakeRec{}, starts: map[string]int{}, stops: map[string]int{}, targets: map[string]*Target{}}
}

func (s *fakeSink) Start(t *Target) Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &fakeRec{}
	s.recs[t.Name], s.targets[t.Name] = r, t
	s.starts[t.Name]++
	return r
}

func (s *fakeSink) Stop(t *Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Stopped with the Same target it was started with (not always the
	// same pointer: a rescaled target's runner holds a copy).
	if st := s.targets[t.Name]; st == nil || !st.Same(t) {
		panic("Stop of a target not started: " + t.Name)
	}
	s.recs[t.Name].stopped.Store(true)
	s.stops[t.Name]++
}

func (s *fakeSink) rec(name string) *fakeRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[name]
}

func (s *fakeSink) count(name string) (starts, stops int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts[name], s.stops[name]
}

// fakeHealth keeps what it last heard.
type fakeHealth struct {
	mu       sync.Mutex
	n, up    int
	scale    float64
	lagCalls int
	lag      time.Duration
}

func (h *fakeHealth) Targets(n, up int)    { h.mu.Lock(); h.n, h.up = n, up; h.mu.Unlock() }
func (h *fakeHealth) Lag(d time.Duration)  { h.mu.Lock(); h.lagCalls++; h.lag = d; h.mu.Unlock() }
func (h *fakeHealth) Reload(string, error) {}
func (h *fakeHealth) RateScale(f float64)  { h.mu.Lock(); h.scale = f; h.mu.Unlock() }
func (h *fakeHealth) Forget(string)        {}

func (h *fakeHealth) targets() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.up
}

// loopback starts an in-process reflector for the test.
func loopback(t *testing.T) string {
	t.Helper()
	addr, stop, err := server.Loopback(t.Context(), tstamp.Auto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// fast is a schedule quick enough for a test.
var fast = Schedule{Rate: 100, Interval: 100 * time.Millisecond, Timeout: 100 * time.Millisecond}

// running runs m until the test ends; the returned func stops it and
// waits for Run to return.
func running(t *testing.T, m *Monitor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds, failing the test after 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// intervalsAtLeast waits until the named targets' recorders heard n
// intervals each.
func intervalsAtLeast(t *testing.T, s *fakeSink, n int, names ...string) {
	t.Helper()
	for _, name := range names {
		waitFor(t, fmt.Sprintf("%d intervals of %s", n, name), func() bool {
			r := s.rec(name)
			ivs, _, _, _ := r.snapshot()
			return ivs >= n
		})
	}
}

func TestRunMeasures(t *testing.T) {
	addr := loopback(t)
	sink, health := newFakeSink(), &fakeHealth{}
	m := New(Config{Sink: sink, Health: health})
	names := []string{"a", "b", "c"}
	var ts []Target
	for _, n := range names {
		ts = append(ts, Target{Name: n, URL: addr, Labels: map[string]string{"role": n}, Schedule: fast})
	}
	if err := m.Set(ts); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	intervalsAtLeast(t, sink, 3, names...)
	waitFor(t, "every target up", func() bool { n, up := health.targets(); return n == 3 && up == 3 })
	stop()
	for _, n := range names {
		r := sink.rec(n)
		ivs, c, opens, fails := r.snapshot()
		if c.Sent == 0 || c.Received == 0 {
			t.Errorf("%s: counts %+v after %d intervals, want probes sent and received", n, c, ivs)
		}
		if c.Sent != c.Received+c.Lost+c.InFlight {
			t.Errorf("%s: sent %d, want received %d + lost %d + in flight %d", n, c.Sent, c.Received, c.Lost, c.InFlight)
		}
		// A reply to a probe its interval reported in flight is heard,
		// and counted in the run's summary alone.
		if got := r.replies.Load(); got < int64(c.Received) || got > int64(c.Received+c.InFlight) {
			t.Errorf("%s: %d replies observed, want the intervals' %d received, up to %d in flight more", n, got, c.Received, c.InFlight)
		}
		if opens != 1 || fails != 0 {
			t.Errorf("%s: %d sessions opened, %d failed, want 1 and 0", n, opens, fails)
		}
	}
	if _, up := health.targets(); up != 0 {
		t.Errorf("after Run: %d targets up, want 0", up)
	}
}

func TestSetInvalidChangesNothing(t *testing.T) {
	addr := loopback(t)
	sink := newFakeSink()
	m := New(Config{Sink: sink})
	good := []Target{{Name: "a", URL: addr, Schedule: fast}, {Name: "b", URL: addr, Schedule: fast}}
	if err := m.Set(good); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	intervalsAtLeast(t, sink, 1, "a", "b")
	for _, tc := range []struct {
		name string
		ts   []Target
		want []string // in the error
	}{
		{"twice", []Target{{Name: "a", URL: addr}, {Name: "a", URL: addr}}, []string{`"a"`, "twice"}},
		{"no name", []Target{{URL: addr}}, []string{"no name"}},
		{"url", []Target{{Name: "a", URL: addr}, {Name: "x", URL: "ftp://host"}}, []string{`"x"`, "url"}},
		{"foreign", []Target{{Name: "s", URL: "stamp://127.0.0.1"}}, []string{`"s"`, "url"}},
		{"label name", []Target{{Name: "l", URL: addr, Labels: map[string]string{"9x": "v"}}}, []string{`"l"`, `label "9x"`}},
		{"label reserved", []Target{{Name: "l", URL: addr, Labels: map[string]string{"target": "v"}}}, []string{`"l"`, `label "target"`}},
		{"label value", []Target{{Name: "l", URL: addr, Labels: map[string]string{"k": strings.Repeat("v", 200)}}}, []string{`label "k"`}},
		{"rate", []Target{{Name: "r", URL: addr, Schedule: Schedule{Rate: -1}}}, []string{`"r"`, "rate"}},
		{"size", []Target{{Name: "r", URL: addr, Schedule: Schedule{Size: 10}}}, []string{`"r"`, "size"}},
		{"timeout", []Target{{Name: "r", URL: addr, Schedule: Schedule{Timeout: time.Hour}}}, []string{"timeout"}},
		{"every", []Target{{Name: "r", URL: addr, Schedule: Schedule{Duration: time.Minute, Every: time.Second}}}, []string{`"r"`, "every"}},
		{"every alone", []Target{{Name: "r", URL: addr, Schedule: Schedule{Every: time.Second}}}, []string{"every"}},
	} {
		err := m.Set(tc.ts)
		if err == nil {
			t.Errorf("%s: Set = nil, want an error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Set = %q, want it to say %s", tc.name, err, w)
			}
		}
	}
	before := map[string]int{}
	for _, n := range []string{"a", "b"} {
		ivs, _, _, _ := sink.rec(n).snapshot()
		before[n] = ivs
	}
	intervalsAtLeast(t, sink, before["a"]+2, "a")
	intervalsAtLeast(t, sink, before["b"]+2, "b")
	stop()
	for _, n := range []string{"a", "b"} {
		if starts, stops := sink.count(n); starts != 1 || stops != 0 {
			t.Errorf("%s: started %d times, stopped %d, want 1 and 0", n, starts, stops)
		}
	}
	if n := len(sink.starts); n != 2 {
		t.Errorf("%d targets started, want 2", n)
	}
}

func TestSetRemovesOnlyThatOne(t *testing.T) {
	addr := loopback(t)
	sink := newFakeSink()
	m := New(Config{Sink: sink})
	a := Target{Name: "a", URL: addr, Schedule: fast}
	b := Target{Name: "b", URL: addr, Schedule: fast}
	if err := m.Set([]Target{a, b}); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	intervalsAtLeast(t, sink, 2, "a", "b")
	ra, rb := sink.rec("a"), sink.rec("b")
	// a again with its labels in a new map: unchanged all the same.
	a.Labels = map[string]string{}
	if err := m.Set([]Target{a}); err != nil {
		t.Fatal(err)
	}
	if starts, stops := sink.count("b"); starts != 1 || stops != 1 {
		t.Errorf("b: started %d times, stopped %d, want 1 and 1", starts, stops)
	}
	ivs, before, _, _ := ra.snapshot()
	intervalsAtLeast(t, sink, ivs+3, "a")
	stop()
	if starts, stops := sink.count("a"); starts != 1 || stops != 0 {
		t.Errorf("a: started %d times, stopped %d, want 1 and 0", starts, stops)
	}
	if sink.rec("a") != ra {
		t.Errorf("a has a new Recorder: it was restarted")
	}
	_, after, opens, _ := ra.snapshot()
	if after.Sent <= before.Sent || opens != 1 {
		t.Errorf("a: sent %d then %d, %d sessions; want its counts to go on in one session", before.Sent, after.Sent, opens)
	}
	if n := rb.afterStop.Load(); n != 0 {
		t.Errorf("b heard %d things after its Stop, want none", n)
	}
}

// deadAddr returns a UDP address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return "udp://" + addr
}

func TestPeerDownRetries(t *testing.T) {
	sink, health := newFakeSink(), &fakeHealth{}
	var logs atomic.Int64
	m := New(Config{Sink: sink, Health: health, Log: func(string, ...any) { logs.Add(1) }})
	m.backoffMin, m.backoffMax = 10*time.Millisecond, 20*time.Millisecond
	s := Schedule{Rate: 10, Timeout: 20 * time.Millisecond}
	if err := m.Set([]Target{{Name: "down", URL: deadAddr(t), Schedule: s}}); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	r := sink.rec("down")
	waitFor(t, "three failed sessions", func() bool { _, _, _, fails := r.snapshot(); return fails >= 3 })
	stop()
	ivs, c, opens, _ := r.snapshot()
	if ivs != 0 || c.Sent != 0 || opens != 0 {
		t.Errorf("a peer down: %d intervals, %d sent, %d sessions opened; want none", ivs, c.Sent, opens)
	}
	r.mu.Lock()
	err := r.lastErr
	r.mu.Unlock()
	if err == nil {
		t.Errorf("Session(false, nil), want the error")
	}
	if n, up := health.targets(); n != 1 || up != 0 {
		t.Errorf("Health.Targets(%d, %d), want (1, 0)", n, up)
	}
	if n := logs.Load(); n != 1 {
		t.Errorf("%d log lines for a target down throughout, want 1", n)
	}
}

func TestRateCap(t *testing.T) {
	sink, health := newFakeSink(), &fakeHealth{}
	var logs atomic.Int64
	m := New(Config{Sink: sink, Health: health, MaxRate: 100, Log: func(string, ...any) { logs.Add(1) }})
	ts := []Target{
		{Name: "a", URL: "udp://127.0.0.1:1", Schedule: Schedule{Rate: 100}},
		{Name: "b", URL: "udp://127.0.0.1:2", Schedule: Schedule{Rate: 300}},
	}
	if err := m.Set(ts); err != nil {
		t.Fatal(err)
	}
	if health.scale != 0.25 {
		t.Errorf("RateScale(%v), want 0.25", health.scale)
	}
	if ra, rb := m.runners["a"].rate, m.runners["b"].rate; ra != 25 || rb != 75 {
		t.Errorf("rates %v and %v, want 25 and 75", ra, rb)
	}
	if n := logs.Load(); n != 1 {
		t.Errorf("%d log lines, want 1", n)
	}
	// Under the cap: the rates as asked, the same Recorders.
	if err := m.Set(ts[:1]); err != nil {
		t.Fatal(err)
	}
	if health.scale != 1 || m.runners["a"].rate != 100 {
		t.Errorf("RateScale(%v), rate %v; want 1 and 100", health.scale, m.runners["a"].rate)
	}
	if starts, stops := sink.count("a"); starts != 1 || stops != 0 {
		t.Errorf("a: started %d times, stopped %d, want 1 and 0", starts, stops)
	}
}

// threads returns the process's OS threads, or skips the test.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("skipping: no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("Threads: %q", v)
			}
			return n
		}
	}
	t.Skip("skipping: no Threads line in /proc/self/status")
	return 0
}

// TestManyTargetsFewThreads: 50 continuous targets do not take a thread
// each (a sender locked to one, or a receiver blocked in a system call).
// Under the race detector, on a shared machine, 50 sessions open too
// slowly for the test to be sure of its figures: it runs without.
func TestManyTargetsFewThreads(t *testing.T) {
	if raceOn {
		t.Skip("skipping: the race detector makes 50 sessions too slow to open reliably; the threads do not depend on it")
	}
	addr := loopback(t)
	sink, health := newFakeSink(), &fakeHealth{}
	m := New(Config{Sink: sink, Health: health})
	const n, enough = 50, 30
	var ts []Target
	for i := range n {
		ts = append(ts, Target{Name: fmt.Sprintf("t%d", i), URL: addr, Schedule: Schedule{Rate: 5, Interval: 200 * time.Millisecond}})
	}
	before := threads(t)
	if err := m.Set(ts); err != nil {
		t.Fatal(err)
	}
	stop := running(t, m)
	// With a thread a session, enough sessions open would take enough
	// threads more.
	waitFor(t, fmt.Sprintf("%d targets up", enough), func() bool { _, up := health.targets(); return up >= enough })
	during := threads(t)
	_, up := health.targets()
	stop()
	t.Logf("threads: %d before, %d with %d targets up", before, during, up)
	if during-before >= enough/3 {
		t.Errorf("%d threads with %d targets up, %d before: want far fewer than one a target", during, up, before)
	}
}
