package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
)

// Handler hears what a run has to say while it runs: that it started, each
// interval as it ends, each session lost and taken over, and that it ended.
// Its methods are called from the run's goroutines, never per probe; with
// several flows (RunFlows), Reconnect may be called from several at once,
// the others one at a time. A nil Handler in Config means nobody listens.
type Handler interface {
	// Start receives the result as the run opens, once the session is
	// open and before the first probe: the configuration as run and the
	// start time, no intervals or summary yet. It must not keep res.
	Start(res *result.Result)
	// Interval receives each interval as it ends.
	Interval(iv result.Interval)
	// Reconnect is called when a session is lost (Resumed false) and when
	// a new one takes over (Resumed true).
	Reconnect(rc result.Reconnect)
	// End receives the result as the run returns it, after the last
	// interval; a run whose session did not open has no Start and no End.
	End(res *result.Result)
}

// nobody is the Handler of a run nobody listens to.
type nobody struct{}

func (nobody) Start(*result.Result)       {}
func (nobody) Interval(result.Interval)   {}
func (nobody) Reconnect(result.Reconnect) {}
func (nobody) End(*result.Result)         {}

// handlerOf returns cfg's Handler, or one that hears nothing.
func handlerOf(cfg *Config) Handler {
	if cfg.Handler == nil {
		return nobody{}
	}
	return cfg.Handler
}

// reconnectsOnly passes a flow's reconnections to the run's Handler, and
// nothing else: a parallel run's start and intervals are the whole run's.
type reconnectsOnly struct {
	nobody
	h Handler
}

func (f reconnectsOnly) Reconnect(rc result.Reconnect) { f.h.Reconnect(rc) }

// Funcs is a Handler made of functions, for a caller that hears some of
// what a run says: a nil function is not heard.
type Funcs struct {
	OnStart     func(res *result.Result)
	OnInterval  func(iv result.Interval)
	OnReconnect func(rc result.Reconnect)
	OnEnd       func(res *result.Result)
}

// Start calls OnStart, if set.
func (f Funcs) Start(res *result.Result) {
	if f.OnStart != nil {
		f.OnStart(res)
	}
}

// Interval calls OnInterval, if set.
func (f Funcs) Interval(iv result.Interval) {
	if f.OnInterval != nil {
		f.OnInterval(iv)
	}
}

// Reconnect calls OnReconnect, if set.
func (f Funcs) Reconnect(rc result.Reconnect) {
	if f.OnReconnect != nil {
		f.OnReconnect(rc)
	}
}

// End calls OnEnd, if set.
func (f Funcs) End(res *result.Result) {
	if f.OnEnd != nil {
		f.OnEnd(res)
	}
}

// Observer hears each measured probe's first reply as the run records it,
// from the goroutine that receives the flow's replies (in a parallel run,
// from several at once). It is on the per-probe path: Reply must not
// block and should allocate nothing. Lost, late and duplicated probes are
// counted in the intervals, not heard here.
type Observer interface {
	Reply(r Reply)
}

// Reply is what an Observer hears of one reply: its round trip and, where
// the peer's answers carry its times (OneWay), each direction's delay
// (raw: the clocks' offset is in them) and the reflector's response time
// less any hold. IPDV is the RTT's change from the previous probe's, when
// that probe's reply came (HasIPDV).
type Reply struct {
	// Sent is when the probe left, from the end of warm-up.
	Sent                    time.Duration
	RTT, Up, Down, Response time.Duration
	OneWay                  bool
	IPDV                    time.Duration
	HasIPDV                 bool
}
