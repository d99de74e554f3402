// The monitor: its set of targets, changed at any time, and the runners
// that measure them.

package monitor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/units"
)

// DefaultMaxRate is the cap on the probes per second of the whole process
// when Config.MaxRate is 0.
const DefaultMaxRate = 10000

// Config says where a Monitor's measurements go.
type Config struct {
	// Sink hears each target as it enters and leaves the set (nil: the
	// measurements go nowhere).
	Sink Sink
	// Health hears how the monitor does (nil: nobody). Its methods are
	// called with the monitor's lock held: they must not call the
	// Monitor.
	Health Health
	// MaxRate caps the probes per second of all the targets together
	// (0: DefaultMaxRate): over it, every target's rate is scaled down
	// by the same factor.
	MaxRate float64
	// Log, when set, gets one line per event: a target that cannot be
	// reached, a session lost or reopened, the rates scaled. Never one
	// per probe.
	Log func(format string, args ...any)
}

// Monitor measures a set of targets (Set) for as long as Run runs.
type Monitor struct {
	cfg Config
	// setMu makes each Set whole: a target stopped by one is told to the
	// Sink before another starts one of the same name.
	setMu sync.Mutex
	// mu guards what follows; runners take it when their state changes.
	mu      sync.Mutex
	runners map[string]*runner
	up      int
	// spawn starts a runner's goroutine, while Run runs (else nil).
	spawn func(r *runner)
	// backoff bounds the wait before a target that could not be reached
	// is tried again (tests shorten them).
	backoffMin, backoffMax time.Duration
	// lagEvery is how often Health hears the lag.
	lagEvery time.Duration
	// renewAfter is renewAfter, but for tests.
	renewAfter int
}

// New returns a Monitor with no targets.
func New(cfg Config) *Monitor {
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = DefaultMaxRate
	}
	if cfg.Sink == nil {
		cfg.Sink = discard{}
	}
	if cfg.Health == nil {
		cfg.Health = noHealth{}
	}
	return &Monitor{cfg: cfg, runners: map[string]*runner{},
		backoffMin: time.Second, backoffMax: 30 * time.Second, lagEvery: time.Second, renewAfter: renewAfter}
}

// logf logs one line, when there is a Log.
func (m *Monitor) logf(format string, args ...any) {
	if m.cfg.Log != nil {
		m.cfg.Log(format, args...)
	}
}

// checkSet checks a whole set; the first error names the target and the
// field.
func checkSet(ts []Target) ([]Target, error) {
	out := make([]Target, 0, len(ts))
	seen := make(map[string]bool, len(ts))
	names := map[string]bool{}
	for _, t := range ts {
		c, _, err := checkTarget(t)
		if err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("target %q: named twice", c.Name)
		}
		seen[c.Name] = true
		out = append(out, c)
		for name := range c.Labels {
			names[name] = true
		}
	}
	// Every series carries every label name of the set (an absent one
	// empty): the names in all, not only per target, must be few, or a
	// scrape grows with the square of the targets.
	if len(names) > MaxLabelNames {
		return nil, fmt.Errorf("labels: the targets' label names add up to %d, want at most %d in all (every series carries them all)", len(names), MaxLabelNames)
	}
	return out, nil
}

// Set makes ts the set of targets. It checks the whole set first: on an
// error, naming the target and the field, nothing changes. Otherwise the
// targets whose name, URL, labels and schedule are unchanged keep running
// untouched; those gone are stopped and told to the Sink (Stop), those
// new or changed started (Sink.Start). A target whose rate the process's
// cap scales differently than before is measured again at its new rate,
// with the same Recorder. Set may be called at any time, from any
// goroutine, also before Run.
func (m *Monitor) Set(ts []Target) error {
	set, err := checkSet(ts)
	if err != nil {
		return err
	}
	m.setMu.Lock()
	defer m.setMu.Unlock()
	var sum float64
	for i := range set {
		sum += set[i].Schedule.Rate
	}
	scale := 1.0
	if sum > m.cfg.MaxRate {
		scale = m.cfg.MaxRate / sum
		m.logf("monitor: the targets' rates add up to %s probes/s, over the cap of %s: each is scaled by %.3g",
			units.FormatRate(sum), units.FormatRate(m.cfg.MaxRate), scale)
	}
	m.mu.Lock()
	want := make(map[string]*Target, len(set))
	for i := range set {
		want[set[i].Name] = &set[i]
	}
	var gone, rerun []*runner
	for name, r := range m.runners {
		if t := want[name]; t == nil || !r.t.Same(t) {
			gone = append(gone, r)
		} else if r.rate != t.Schedule.Rate*scale {
			rerun = append(rerun, r)
		}
	}
	m.mu.Unlock()
	m.stopRunners(append(gone, rerun...))
	for _, r := range gone {
		m.cfg.Sink.Stop(&r.t)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range gone {
		delete(m.runners, r.t.Name)
	}
	var fresh []*runner
	for i := range set {
		t := &set[i]
		if r := m.runners[t.Name]; r != nil {
			if r.rate != t.Schedule.Rate*scale {
				fresh = append(fresh, r.again(t.Schedule.Rate*scale))
			}
			continue
		}
		fresh = append(fresh, m.newRunner(*t, t.Schedule.Rate*scale))
	}
	m.place(fresh)
	m.cfg.Health.RateScale(scale)
	m.cfg.Health.Targets(len(m.runners), m.up)
	return nil
}

// place spreads the fresh runners' starts within one probe gap (at most
// a second), each at a jittered offset of its own, records them, and
// starts them if Run runs; m.mu is held.
func (m *Monitor) place(fresh []*runner) {
	for i, r := range fresh {
		spread := time.Second
		if gap := time.Duration(float64(time.Second) / r.rate); gap < spread {
			spread = gap
		}
		r.offset = time.Duration((float64(i) + rand.Float64()) / float64(len(fresh)) * float64(spread))
		m.runners[r.t.Name] = r
		if m.spawn != nil {
			m.spawn(r)
		}
	}
}

// stopRunners stops rs' goroutines, all at once, and waits for them: their
// sessions close, and their Recorders hear no more. m.mu is not held.
func (m *Monitor) stopRunners(rs []*runner) {
	for _, r := range rs {
		if r.cancel != nil {
			r.cancel()
		}
	}
	for _, r := range rs {
		if r.done != nil {
			<-r.done
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		r.cancel, r.done = nil, nil
		if r.up {
			r.up = false
			m.up--
		}
	}
}

// ErrRunning is Run's error when the Monitor already runs.
var ErrRunning = errors.New("monitor: already running")

// Run measures the set (and every set given later) until ctx is done,
// then stops every target, closing its session, and returns nil. The set
// stays: the Sink is not told.
func (m *Monitor) Run(ctx context.Context) error {
	m.setMu.Lock()
	m.mu.Lock()
	if m.spawn != nil {
		m.mu.Unlock()
		m.setMu.Unlock()
		return ErrRunning
	}
	var wg sync.WaitGroup
	m.spawn = func(r *runner) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		r.cancel, r.done = cancel, done
		wg.Go(func() {
			defer close(done)
			r.run(rctx)
		})
	}
	for _, r := range m.runners {
		m.spawn(r)
	}
	m.mu.Unlock()
	m.setMu.Unlock()

	tick := time.NewTicker(m.lagEvery)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			m.reportLag()
		}
	}
	m.setMu.Lock()
	defer m.setMu.Unlock()
	m.mu.Lock()
	m.spawn = nil
	rs := make([]*runner, 0, len(m.runners))
	for _, r := range m.runners {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	wg.Wait()
	m.stopRunners(rs)
	m.mu.Lock()
	m.cfg.Health.Targets(len(m.runners), m.up)
	m.mu.Unlock()
	return nil
}

// reportLag tells Health the largest send error of the targets' latest
// intervals.
func (m *Monitor) reportLag() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lag time.Duration
	for _, r := range m.runners {
		lag = max(lag, time.Duration(r.lag.Load()))
	}
	m.cfg.Health.Lag(lag)
}

// session records that r's session opened (or was lost, with err),
// telling its Recorder, the Log and Health.
func (m *Monitor) session(r *runner, open bool, err error) {
	r.rec.Session(open, err)
	// The line is written once the lock is let go: a stderr that blocks
	// must not stall the other targets.
	if line := m.sessionState(r, open, err); line != "" {
		m.logf("%s", line)
	}
}

// sessionState records r's session state, and returns the line to log
// ("" when nothing changed).
func (m *Monitor) sessionState(r *runner, open bool, err error) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.cancel == nil || open == r.up && (open || r.told) {
		return "" // stopped (the count is done), or no change
	}
	line := fmt.Sprintf("monitor: target %s (%s): session open", r.t.Name, r.t.URL)
	if !open {
		line = fmt.Sprintf("monitor: target %s (%s): %v", r.t.Name, r.t.URL, err)
	}
	r.told = !open
	if open != r.up {
		r.up = open
		if open {
			m.up++
		} else {
			m.up--
		}
		m.cfg.Health.Targets(len(m.runners), m.up)
	}
	return line
}
