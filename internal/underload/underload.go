// Package underload runs a latency-under-load measurement (volley client
// --load): one client.Run of open-loop probes through three phases (idle,
// loaded, idle again), the bulk streams of package load started and
// stopped on the phases' schedule, and each phase's figures, the delay the
// load added and the responsiveness score put into result.Load.
package underload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
)

// The phases of a run, in order.
const (
	phaseIdle = iota
	phaseLoaded
	phaseAfter
	phases
)

var phaseNames = [phases]string{"idle", "loaded", "idle-after"}

// Defaults and bounds of a Config.
const (
	DefaultStreams = 4
	MaxStreams     = 8 // per direction: both take 16, a reflector's most per source
	DefaultPhase   = 5 * time.Second
	MinPhase       = time.Second
	MaxPhase       = time.Minute
	// DefaultRate is the probes' rate when the caller sets none: 100
	// probes/s, 500 round trips a phase of 5 s.
	DefaultRate = 100
	// Step is the goodput series' step.
	Step = 100 * time.Millisecond
)

// Config is what a latency-under-load run does besides its probes.
type Config struct {
	// Directions are the loaded phase's: Down, Up, or both.
	Directions []load.Direction
	// Streams is the number of bulk streams per direction.
	Streams int
	// Phase is each phase's length.
	Phase time.Duration
	// Dialer reaches the reflector's stream listener.
	Dialer load.Dialer
}

// Check checks c, and that cfg (the probes' run) is one the phases fit: open
// loop, one flow, intervals of one phase and a duration of three, no
// warm-up. The errors name the flags.
func (c Config) Check(cfg client.Config) error {
	switch {
	case len(c.Directions) == 0:
		return errors.New("--load: want down, up or both")
	case c.Streams < 1 || c.Streams > MaxStreams:
		return fmt.Errorf("--load: %d streams: want 1 to %d", c.Streams, MaxStreams)
	case c.Phase < MinPhase || c.Phase > MaxPhase:
		return fmt.Errorf("--phase %v: want %v to %v", c.Phase, MinPhase, MaxPhase)
	case cfg.Rate <= 0 && cfg.SendInterval <= 0:
		return errors.New("--load: the probes must be open loop (--rate or --send-interval)")
	case cfg.ReportInterval != c.Phase || cfg.Duration != phases*c.Phase:
		return errors.New("--load: the run's intervals must be its phases")
	case cfg.WarmupDuration > 0 || cfg.WarmupCount > 0:
		return errors.New("--load: no --warmup: the first idle phase is the baseline")
	}
	return nil
}

// Run measures through conn with cfg and the bulk streams lc asks for, and
// returns the result with its Load. One stream is opened and closed
// before the probes start, to know that the reflector can be reached; the
// streams open when the loaded phase starts, and a refusal then ends the
// run, whose result holds what was measured, with the error.
func Run(ctx context.Context, lc Config, cfg client.Config, conn transport.Conn) (*result.Result, error) {
	if err := lc.Check(cfg); err != nil {
		return nil, err
	}
	if err := lc.check(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	obs := newObserver(lc.Phase)
	cfg.Observer = obs
	hook := &hook{Handler: handlerOr(cfg.Handler), started: make(chan time.Time, 1)}
	cfg.Handler = hook
	sch := newSchedule(lc)
	var wg sync.WaitGroup
	wg.Go(func() { sch.run(ctx, hook.started, cancel) })
	res, runErr := client.Run(ctx, cfg, conn)
	cancel(nil)
	wg.Wait()
	if res != nil {
		res.Load = lc.figures(hook.intervals, obs, sch, res.Config.Timeout)
	}
	if sch.err != nil { // the load could not go on: the run was ended for it
		if res != nil {
			res.Stopped, res.Error = "error", sch.err.Error()
		}
		if runErr == nil || errors.Is(runErr, context.Canceled) {
			return res, sch.err
		}
		return res, errors.Join(sch.err, runErr)
	}
	return res, runErr
}

// hook tells the schedule when the run's measurement starts, and keeps
// its intervals, which are the phases (the run's writers may have asked
// for intervals to be streamed, not kept in the result). Its methods are
// called on the run's goroutines, and intervals is read after the run.
type hook struct {
	client.Handler
	started   chan time.Time
	intervals []result.Interval
}

func (h *hook) Start(res *result.Result) {
	h.Handler.Start(res)
	h.started <- time.Now()
}

func (h *hook) Interval(iv result.Interval) {
	if len(h.intervals) < phases {
		h.intervals = append(h.intervals, iv)
	}
	h.Handler.Interval(iv)
}

// handlerOr returns h, or a Handler that hears nothing.
func handlerOr(h client.Handler) client.Handler {
	if h == nil {
		return client.Funcs{}
	}
	return h
}
