package underload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
)

// stream is one bulk stream and its direction; s is nil until it opened.
type stream struct {
	s   *load.Stream
	dir load.Direction
}

// check opens one stream and asks for a millisecond of load: that the
// reflector can be reached and serves load is known before the first
// probe, while the streams themselves open when the loaded phase starts
// (a reflector closes a connection that stays in its handshake for long).
func (lc Config) check(ctx context.Context) error {
	s, err := lc.Dialer.Dial(ctx)
	if err != nil {
		return fmt.Errorf("--load: open a bulk stream to %s %s: %w", lc.Dialer.Network, lc.Dialer.Address, err)
	}
	err = s.Start(ctx, lc.Directions[0], time.Millisecond)
	s.Stop() // what a millisecond's stream says of its end does not matter
	if r := (*load.Refused)(nil); errors.As(err, &r) {
		return refusal(err)
	}
	if err != nil {
		return fmt.Errorf("--load: %s %s: %w", lc.Dialer.Network, lc.Dialer.Address, err)
	}
	return nil
}

// refusal words a reflector's refusal of the bulk streams (err holds a
// *load.Refused) for the command line: "--load: refused by the reflector:
// why".
func refusal(err error) error {
	r := (*load.Refused)(nil)
	errors.As(err, &r)
	return fmt.Errorf("--load: refused by the reflector: %s", r.Reason)
}

// schedule starts the streams when the loaded phase begins and stops them
// when it ends, and samples their goodput every Step from the start of
// the measurement to the end of the run. Its fields are read after run
// returns.
type schedule struct {
	lc      Config
	streams []stream
	series  []result.LoadPoint
	// movedUp and movedDown are each direction's bytes when the streams
	// stopped, from began to ended; granted the streams that ran.
	movedUp, movedDown uint64
	began, ended       time.Time
	granted            int
	stopped            bool
	errs               []string
	err                error // what ended the run (a refusal, no stream at all)
}

func newSchedule(lc Config) *schedule {
	sc := &schedule{lc: lc}
	for _, dir := range lc.Directions {
		for range lc.Streams {
			sc.streams = append(sc.streams, stream{dir: dir})
		}
	}
	return sc
}

// run waits for the measurement's start, then keeps the schedule until
// ctx ends; a stream refused, or none started in the loaded phase, ends
// the run (stop) with why.
func (sc *schedule) run(ctx context.Context, started <-chan time.Time, stop context.CancelCauseFunc) {
	defer sc.stopAll()
	var origin time.Time
	select {
	case origin = <-started:
	case <-ctx.Done():
		return
	}
	phase := sc.lc.Phase
	tick := time.NewTicker(Step)
	defer tick.Stop()
	loadAt, endAt := time.NewTimer(time.Until(origin.Add(phase))), time.NewTimer(time.Until(origin.Add(2*phase)))
	defer loadAt.Stop()
	defer endAt.Stop()
	last := origin
	var lastUp, lastDown uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-loadAt.C:
			if err := sc.startAll(ctx, origin.Add(2*phase)); err != nil {
				sc.err = err
				stop(err)
				return
			}
		case <-endAt.C:
			sc.stopAll()
		case now := <-tick.C:
			up, down := sc.moved()
			// A step held up (by the streams' start) covers more than Step.
			secs := now.Sub(last).Seconds()
			sc.series = append(sc.series, result.LoadPoint{At: now.Sub(origin),
				BitsPerSecUp: float64(up-lastUp) * 8 / secs, BitsPerSecDown: float64(down-lastDown) * 8 / secs})
			last, lastUp, lastDown = now, up, down
		}
	}
}

// startAll opens every stream and asks for load at once, for the phase
// and a second more (the client stops them at the phase's end, before
// until), and returns the first refusal, or why none started. A run that
// ended meanwhile is no error.
func (sc *schedule) startAll(ctx context.Context, until time.Time) error {
	sctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	dur := time.Until(until) + time.Second
	errs := make([]error, len(sc.streams))
	var wg sync.WaitGroup
	for i := range sc.streams {
		st := &sc.streams[i]
		wg.Go(func() {
			s, err := sc.lc.Dialer.Dial(sctx)
			if err == nil {
				st.s = s
				err = s.Start(sctx, st.dir, dur)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	sc.began = time.Now()
	if ctx.Err() != nil {
		return nil // the run ended first
	}
	for _, err := range errs {
		if err == nil {
			sc.granted++
		}
	}
	for _, err := range errs {
		if r := (*load.Refused)(nil); errors.As(err, &r) {
			return refusal(err)
		}
	}
	if sc.granted == 0 {
		return fmt.Errorf("--load: no bulk stream started in the loaded phase (a reflector before --load answers nothing): %w", errs[0])
	}
	for _, err := range errs {
		sc.note(err)
	}
	return nil
}

// moved returns the bytes the streams moved so far, each way.
func (sc *schedule) moved() (up, down uint64) {
	for _, st := range sc.streams {
		if st.s == nil {
			continue
		}
		if st.dir == load.Up {
			up += st.s.Moved()
		} else {
			down += st.s.Moved()
		}
	}
	return up, down
}

// stopAll stops the streams, once, keeps what they moved and when, and
// notes what cut one short.
func (sc *schedule) stopAll() {
	if sc.stopped {
		return
	}
	sc.stopped = true
	for _, st := range sc.streams {
		if st.s != nil {
			sc.note(st.s.Stop())
		}
	}
	sc.ended = time.Now()
	sc.movedUp, sc.movedDown = sc.moved()
}

// span is how long the streams ran: from their start to their stop.
func (sc *schedule) span() time.Duration {
	if sc.began.IsZero() || sc.ended.Before(sc.began) {
		return 0
	}
	return sc.ended.Sub(sc.began)
}

// note keeps err's text once.
func (sc *schedule) note(err error) {
	if err == nil {
		return
	}
	for _, e := range sc.errs {
		if e == err.Error() {
			return
		}
	}
	sc.errs = append(sc.errs, err.Error())
}
