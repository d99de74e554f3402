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

// stream is one bulk stream and its direction.
type stream struct {
	s   *load.Stream
	dir load.Direction
}

// open dials every stream of the loaded phase and opens its session, so
// that the phase starts with one message each.
func (lc Config) open(ctx context.Context) ([]stream, error) {
	var out []stream
	for _, dir := range lc.Directions {
		for range lc.Streams {
			s, err := lc.Dialer.Dial(ctx)
			if err != nil {
				for _, o := range out {
					o.s.Stop()
				}
				return nil, fmt.Errorf("--load: open a bulk stream to %s %s: %w", lc.Dialer.Network, lc.Dialer.Address, err)
			}
			out = append(out, stream{s: s, dir: dir})
		}
	}
	return out, nil
}

// schedule starts the streams when the loaded phase begins and stops them
// when it ends, and samples their goodput every Step from the start of
// the measurement to the end of the run. Its fields are read after run
// returns.
type schedule struct {
	lc      Config
	streams []stream
	series  []result.LoadPoint
	// moved is each direction's bytes at the loaded phase's end; granted
	// the streams that ran.
	movedUp, movedDown uint64
	granted            int
	stopped            bool
	errs               []string
	err                error // what ended the run (a refusal)
}

// run waits for the measurement's start, then keeps the schedule until
// ctx ends; a stream refused ends the run (stop) with the refusal.
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
	var lastUp, lastDown uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-loadAt.C:
			if err := sc.startAll(ctx, phase); err != nil {
				sc.err = err
				stop(err)
				return
			}
		case <-endAt.C:
			sc.stopAll()
		case now := <-tick.C:
			up, down := sc.moved()
			step := Step.Seconds()
			sc.series = append(sc.series, result.LoadPoint{At: now.Sub(origin),
				BitsPerSecUp: float64(up-lastUp) * 8 / step, BitsPerSecDown: float64(down-lastDown) * 8 / step})
			lastUp, lastDown = up, down
		}
	}
}

// startAll asks for every stream at once, for the phase and a second more
// (the client stops them at the phase's end), and returns the first
// refusal.
func (sc *schedule) startAll(ctx context.Context, phase time.Duration) error {
	errs := make([]error, len(sc.streams))
	var wg sync.WaitGroup
	for i, st := range sc.streams {
		wg.Go(func() { errs[i] = st.s.Start(ctx, st.dir, phase+time.Second) })
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			sc.granted++
		}
	}
	var refused *load.Refused
	for _, err := range errs {
		if errors.As(err, &refused) {
			return fmt.Errorf("--load: %w", err)
		}
	}
	if sc.granted == 0 && len(errs) > 0 {
		return fmt.Errorf("--load: no bulk stream started: %w", errs[0])
	}
	for _, err := range errs {
		sc.note(err)
	}
	return nil
}

// moved returns the bytes the streams moved so far, each way.
func (sc *schedule) moved() (up, down uint64) {
	for _, st := range sc.streams {
		if st.dir == load.Up {
			up += st.s.Moved()
		} else {
			down += st.s.Moved()
		}
	}
	return up, down
}

// stopAll stops the streams, once, keeps what they moved, and notes what
// cut one short.
func (sc *schedule) stopAll() {
	if sc.stopped {
		return
	}
	sc.stopped = true
	for _, st := range sc.streams {
		sc.note(st.s.Stop())
	}
	sc.movedUp, sc.movedDown = sc.moved()
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
