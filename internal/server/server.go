// Package server runs a reflector on every listener with its workers and
// sums their intervals. Open opens what the server listens on (UDP sockets
// sharing a port, one per worker, and TCP, Unix stream, Unix datagram and
// D-Bus listeners) and its log file; SetBusyPoll and EnableStamps set the
// sockets up; Serve reflects on each listener on a worker of its own until
// its context is done, and returns the totals.
//
// The package prints nothing: it tells its caller what happens through a
// Handler (the intervals summed over the workers, a listener that failed),
// and its errors name the flags they come from.
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/volley-net/volley/internal/ifstats"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// MinMaxSize is the smallest largest reply (--max-size) a server may be
// given: a message's header.
const MinMaxSize = wire.HeaderLen

// ErrConfig marks an error in what the server was asked to do (a flag's
// value, a path), not in the system. errors.Is finds it; the error's text
// is the flag's message alone.
var ErrConfig = errors.New("server: bad configuration")

// configError is an error that is an ErrConfig, and says only its own.
type configError struct{ err error }

func (e configError) Error() string        { return e.err.Error() }
func (e configError) Unwrap() error        { return e.err }
func (e configError) Is(target error) bool { return target == ErrConfig }

func configErrorf(format string, args ...any) error {
	return configError{fmt.Errorf(format, args...)}
}

// Config is how Serve runs the reflectors.
type Config struct {
	// Reflector configures each worker's reflector. Serve gives every
	// worker one cookie secret, made here when Secret is nil; it sets
	// Stamps on the UDP workers (EnableStamps), MaxMessage on the others,
	// and OnInterval with Intervals.
	Reflector reflector.Config
	// Intervals has every interval's counters, summed over the workers,
	// told to the Handler; without it the reflectors report none.
	Intervals bool
	// Interface names the network interface whose counters each
	// Interval carries ("" for none).
	Interface string
	// Thread, if not nil, is called on each worker's locked OS thread
	// before it serves (worker counts from 0; name says which it is); an
	// error ends that worker with it.
	Thread func(worker int, name string) error
	// STAMP is how the STAMP listener (Listeners.STAMP) answers, within
	// Reflector's limits.
	STAMP STAMPConfig
}

// Interval is what the workers counted in the same interval of each.
type Interval struct {
	Counts reflector.Counters // every worker's, summed
	// NIC are Config.Interface's counters, read when the last worker
	// reported the interval; NICOK is false when none were read.
	NIC   ifstats.Counters
	NICOK bool
	// STAMP is the STAMP listener's counters in the interval; nil
	// without one.
	STAMP *reflector.Counters
}

// Handler hears what happens while Serve runs. Its methods are called
// from the workers' goroutines, one at a time for Interval but not with
// respect to Lost: a Handler that writes to one place locks it.
type Handler interface {
	// Interval is given the n-th interval once every worker has
	// reported its n-th; it must return quickly.
	Interval(iv Interval)
	// Lost is told that a listener failed while serving (a bus that
	// went away): its worker ended, the others go on, and Serve's error
	// says so too.
	Lost(err error)
}

// listeners returns every listener, one per worker: the UDP sockets
// first.
func (ss *Listeners) listeners() []transport.PacketConn {
	pcs := append([]transport.PacketConn(nil), ss.UDP...)
	for _, pc := range []transport.PacketConn{ss.TCP, ss.Unix, ss.Unixgram, ss.DBus} {
		if pc != nil {
			pcs = append(pcs, pc)
		}
	}
	return pcs
}

// Serve reflects on every listener, each with a worker of its own, until
// ctx is done or every worker has ended, and returns their counters
// summed and their errors joined.
func (ss *Listeners) Serve(ctx context.Context, cfg Config, h Handler) (reflector.Counters, error) {
	pcs := ss.listeners()
	ss.enablePath()
	if ss.spinners > 0 {
		// One P per spinning thread and no more: an idle P makes the
		// runtime spin threads of its own, which steal the spinners'
		// cores (TCP ping-pong p90 went from 9µs to 22-52µs with one).
		// The reflecting loops that do not spin run when the scheduler
		// preempts a spinner.
		runtime.GOMAXPROCS(ss.spinners)
	}
	if cfg.Reflector.Secret == nil {
		// One cookie secret for all workers: a peer's Hello and probes
		// reach the same worker, but need not.
		cfg.Reflector.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Reflector.Secret); err != nil {
			return reflector.Counters{}, err
		}
	}
	agg := &statsSum{workers: len(pcs), stamp: ss.STAMP != nil}
	if agg.stamp {
		agg.workers++ // the last
	}
	if cfg.Intervals {
		agg.emit = func(s, st reflector.Counters) {
			iv := Interval{Counts: s}
			if agg.stamp {
				iv.STAMP = &st
			}
			if cfg.Interface != "" {
				if c, err := ifstats.Read(cfg.Interface); err == nil {
					iv.NIC, iv.NICOK = c, true
				}
			}
			h.Interval(iv)
		}
		agg.start()
		defer agg.stop() // after the workers: they add no more
	}
	// Every reflector is made before any worker starts, so that none is
	// left running when one cannot be made (New fails only without a
	// secret).
	refls := make([]*reflector.Reflector, len(pcs))
	for i, pc := range pcs {
		var err error
		if refls[i], err = ss.reflector(i, pc, cfg.Reflector, agg); err != nil {
			return reflector.Counters{}, err
		}
	}
	totals := make([]reflector.Counters, len(pcs))
	errs := make([]error, len(pcs)+1) // the last the STAMP listener's
	if mem := cfg.Reflector.Memory; mem != nil {
		stopReleasing := releaseMemory(ctx, mem)
		defer stopReleasing()
	}
	var wg sync.WaitGroup
	for i, pc := range pcs {
		wg.Go(func() { totals[i], errs[i] = serveOne(ctx, i, pc, refls[i], cfg.Thread, h) })
	}
	if ss.STAMP != nil {
		sv := ss.stampServer(len(pcs), cfg, agg)
		wg.Go(func() { ss.stampTotal, errs[len(pcs)] = sv.run(ctx, len(pcs), cfg.Thread) })
	}
	wg.Wait()
	var total reflector.Counters
	for _, t := range totals {
		total = total.Add(t)
	}
	return total, errors.Join(errs...)
}

// reflector makes worker i's reflector, for pc, from cfg.
func (ss *Listeners) reflector(i int, pc transport.PacketConn, cfg reflector.Config, agg *statsSum) (*reflector.Reflector, error) {
	if i >= len(ss.UDP) {
		// A stream carries any size up to its most; UDP's reflectors
		// cut --max-size to what a datagram holds.
		cfg.MaxMessage = transport.MaxMessage(pc)
	} else {
		cfg.Stamps = ss.stamped
	}
	if agg.emit != nil {
		cfg.OnInterval = func(s reflector.Counters) { agg.add(i, s) }
	}
	return reflector.New(cfg)
}

// STAMPCounters returns the STAMP listener's counters since it started,
// once Serve has returned (zero without --stamp).
func (ss *Listeners) STAMPCounters() reflector.Counters { return ss.stampTotal }

// serveOne is worker i: it reflects on pc until ctx is done or pc fails.
func serveOne(ctx context.Context, i int, pc transport.PacketConn, refl *reflector.Reflector, thread func(int, string) error, h Handler) (total reflector.Counters, err error) {
	if thread != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := thread(i, fmt.Sprintf("worker %d (%s://%s)", i+1, pc.LocalAddr().Network(), pc.LocalAddr())); err != nil {
			return reflector.Counters{}, err
		}
	}
	total, err = refl.Serve(ctx, pc)
	if g, ok := pc.(transport.Failer); ok && g.Err() != nil {
		// A bus that went away ends its worker alone; the others go on,
		// and the exit status says so.
		h.Lost(g.Err())
		err = g.Err()
	}
	return total, err
}
