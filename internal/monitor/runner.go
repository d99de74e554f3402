// One target's measurement: dial, run the client, and again when that
// fails, for as long as the target is in the set.

package monitor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// runner measures one target: one goroutine at a time (run), dialing and
// running client.Run, its figures to the target's Recorder.
type runner struct {
	m    *Monitor
	t    Target // never changed: the Sink was started with &t, and is stopped with a Same one
	addr transport.Target
	rec  Recorder
	rate float64 // t's, scaled to the process's cap
	seed uint64
	// offset is how long after Run (or Set) the first probe waits.
	offset time.Duration
	// lag is the send error's largest in the latest interval (ns).
	lag atomic.Int64
	// Guarded by m.mu: the goroutine's stop and end, while it runs; the
	// session's state, and whether its failure was logged.
	cancel context.CancelFunc
	done   chan struct{}
	up     bool
	told   bool
}

// newRunner starts measuring t (checked) at rate: the Sink hears of it
// now, the goroutine starts with Run.
func (m *Monitor) newRunner(t Target, rate float64) *runner {
	addr, _ := transport.ParseTarget(t.URL) // checked by checkTarget
	r := &runner{m: m, t: t, addr: addr, rate: rate, seed: rand.Uint64()}
	r.rec = m.cfg.Sink.Start(&r.t)
	if r.rec == nil {
		r.rec = discard{}
	}
	return r
}

// again returns a runner of the same target and Recorder at another
// rate, for a scale that changed.
func (r *runner) again(rate float64) *runner {
	return &runner{m: r.m, t: r.t, addr: r.addr, rec: r.rec, rate: rate, seed: rand.Uint64()}
}

// run measures until ctx is done: continuously, the session reopened
// when lost, or in rounds.
func (r *runner) run(ctx context.Context) {
	if !sleep(ctx, r.offset) {
		return
	}
	if r.t.Schedule.Duration > 0 {
		r.rounds(ctx)
		return
	}
	wait := r.m.backoffMin
	for {
		opened, err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRenew) {
			continue // a fresh run, at once
		}
		if opened {
			wait = r.m.backoffMin
		}
		if err == nil {
			err = errors.New("the session ended")
		}
		r.m.session(r, false, err)
		// Jittered, so that targets that failed together do not retry
		// together: 3/4 to 5/4 of the wait, which doubles to its cap.
		if !sleep(ctx, time.Duration(float64(wait)*(0.75+rand.Float64()/2))) {
			return
		}
		wait = min(2*wait, r.m.backoffMax)
	}
}

// rounds measures one round of Duration every Every, until ctx is done.
// A round that fails is followed by the next, on its time.
func (r *runner) rounds(ctx context.Context) {
	every := r.t.Schedule.Every
	next := time.Now()
	for {
		_, err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, errRenew) {
			r.m.session(r, false, err)
		}
		now := time.Now()
		for next = next.Add(every); next.Before(now); next = next.Add(every) {
		}
		if !sleep(ctx, next.Sub(now)) {
			return
		}
	}
}

// renewAfter is how many sessions one client.Run reopens before the
// runner ends it and starts a fresh one: a run remembers a little of
// every session it had (client.Result.Reconnects, bounded, and the
// loss accounting's segments, not), and a continuous target against a
// flapping peer would otherwise grow for ever.
const renewAfter = 256

// errRenew: the run ended after renewAfter sessions, to start afresh.
var errRenew = errors.New("monitor: run renewed")

// session dials the target and measures through one client.Run: it
// returns whether a session opened, and why the run ended (errRenew
// when it reopened too many sessions).
func (r *runner) session(ctx context.Context) (opened bool, err error) {
	conn, err := transport.DialWith(ctx, r.addr, transport.DialOptions{Socket: sockopt.Options{TOS: -1}})
	if err != nil {
		return false, err
	}
	defer conn.Close()
	rctx, renew := context.WithCancelCause(ctx)
	defer renew(nil)
	resumed := 0
	h := client.Funcs{
		OnStart: func(*result.Result) {
			opened = true
			r.m.session(r, true, nil)
		},
		OnInterval: func(iv result.Interval) {
			if iv.SendError != nil {
				r.lag.Store(int64(iv.SendError.Max))
			}
			r.rec.Interval(iv)
			if resumed >= r.m.renewAfter {
				renew(errRenew)
			}
		},
		OnReconnect: func(rc result.Reconnect) {
			if rc.Resumed {
				r.m.session(r, true, nil)
				resumed++
				return
			}
			r.m.session(r, false, fmt.Errorf("session lost (reflector %s); reopening", rc.Reason))
		},
	}
	cfg := clientConfig(&r.t, r.addr, r.rate, r.seed, r.rec, h)
	_, err = client.Run(rctx, cfg, conn)
	if ctx.Err() == nil && errors.Is(context.Cause(rctx), errRenew) {
		return opened, errRenew
	}
	return opened, err
}

// sleep waits d, or until ctx is done: it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// discard is a Sink and a Recorder that keeps nothing.
type discard struct{}

func (discard) Start(*Target) Recorder   { return discard{} }
func (discard) Stop(*Target)             {}
func (discard) Reply(client.Reply)       {}
func (discard) Interval(result.Interval) {}
func (discard) Session(bool, error)      {}
func (noHealth) Targets(int, int)        {}
func (noHealth) Lag(time.Duration)       {}
func (noHealth) Reload(string, error)    {}
func (noHealth) RateScale(float64)       {}
func (noHealth) Forget(string)           {}

// noHealth is a Health that hears nothing.
type noHealth struct{}
