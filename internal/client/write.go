package client

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/transport"
)

// Every write to the reflector has a deadline, so that one that does not
// stalls no run. A stream reflector that stops reading fills the socket
// buffers, and a write then blocks for as long as it does not read; a
// write without a deadline would keep the run, its end, its report and a
// signal's effect waiting for ever.
//
//   - A probe's write may take the silence time (Config.Silence): a
//     reflector that takes none of it for that long is as silent as one
//     that sends no reply.
//   - It ends at the latest max(Timeout, 1s) after the end of sending
//     (Duration) or after ctx is done (a signal), whichever comes first:
//     the run's end waits no longer for it.
//   - The handshake's and the close's writes may take as long as their
//     reads wait.
//
// A write cut by its deadline ends the run with ErrStalled. On a stream it
// may have sent part of a message, so nothing more is written (no close).

// writeGuard sets the deadlines of one goroutine's writes (the receiver's
// and, open loop, the sender's each have one).
type writeGuard struct {
	conn  transport.WriteDeadliner // nil: writes take no deadline
	clk   clock.Clock
	limit int64         // the longest a probe's write may take
	grace int64         // how long a write may go on after the end of sending
	endBy *atomic.Int64 // no probe may be written after this (0: no such time yet); shared
	set   int64         // the deadline last set
}

func newWriteGuard(r *run) *writeGuard {
	g := &writeGuard{clk: r.clk, limit: int64(r.cfg.Silence), grace: endGrace(&r.cfg), endBy: &r.writeEndBy}
	g.conn, _ = r.conn.(transport.WriteDeadliner)
	return g
}

// endGrace is how long a write may go on after the end of sending or a
// signal.
func endGrace(cfg *Config) int64 { return int64(max(cfg.Timeout, time.Second)) }

// probe sets the deadline for a probe's write starting at now, in a run
// that stops sending at sendUntil (0: not known yet), unless the one set
// last is no later than needed and either far enough away or the end
// itself: a deadline per probe would cost a timer update each, this costs
// one per half limit.
func (g *writeGuard) probe(now, sendUntil int64) error {
	if g.conn == nil {
		return nil
	}
	want := now + g.limit
	if sendUntil != 0 {
		want = min(want, sendUntil+g.grace)
	}
	if e := g.endBy.Load(); e != 0 {
		want = min(want, e)
	}
	if want <= now {
		// The end of sending, or a signal's, passed a while ago: the
		// write would fail before it started, and be taken for the
		// reflector's stall.
		return errPastEnd
	}
	if g.set != 0 && g.set <= want && (g.set == want || g.set-now >= g.limit/2) {
		return nil
	}
	return g.setDeadline(want, true)
}

// errPastEnd: a probe's write would start after the latest time a write
// may end (writeGuard.probe): the process was stopped or starved between
// the loop's decision to send and the send. A tester stopped the client
// for 1.5s about 1.8s into a 2s run: 9 runs in 24 ended "the reflector
// stopped reading: a 64-byte write to udp://... did not finish in 0s"
// before this; CI once did at a load average of 14.
var errPastEnd = errors.New("past the end of sending")

// within sets the deadline of a write starting at now to d later: the
// handshake's and the close's writes wait as long as their reads. The
// handshake's (capped) ends by the time a signal left too; the close's is
// after the end by design.
func (g *writeGuard) within(now int64, d time.Duration, capped bool) error {
	if g.conn == nil {
		return nil
	}
	return g.setDeadline(now+int64(d), capped)
}

func (g *writeGuard) setDeadline(want int64, capped bool) error {
	if e := g.endBy.Load(); capped && e != 0 {
		want = min(want, e)
	}
	g.set = want
	if err := g.conn.SetWriteDeadline(g.clk.Time(want)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	// endBy may have come down while the deadline was set (a signal):
	// the earlier one holds.
	if e := g.endBy.Load(); capped && e != 0 && e < want {
		g.set = e
		if err := g.conn.SetWriteDeadline(g.clk.Time(e)); err != nil {
			return fmt.Errorf("set write deadline: %w", err)
		}
	}
	return nil
}

// endWrites makes every write end by at (or at once when at is past),
// also one blocked now: on a signal, and when the run ends while the
// sender may be blocked. It is safe from any goroutine.
func (r *run) endWrites(at int64) {
	for {
		e := r.writeEndBy.Load()
		if e != 0 && e <= at {
			return
		}
		if r.writeEndBy.CompareAndSwap(e, at) {
			break
		}
	}
	_ = transport.SetWriteDeadline(r.conn, r.clk.Time(at))
}

// interrupt is what a done ctx does to a run: a read waiting now returns
// at once, and a write has at most the end's grace left.
func (r *run) interrupt() {
	_ = transport.Interrupt(r.conn)
	r.endWrites(r.clk.Now() + endGrace(&r.cfg))
}

// isStall reports whether err is a write cut by its deadline.
func isStall(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// stallError is the error of a run whose write of n bytes, started at
// from, was cut at now.
func (r *run) stallError(n int, from, now int64) error {
	return fmt.Errorf("%w: a %d-byte write to %s did not finish in %s", ErrStalled, n, r.peer, time.Duration(now-from).Round(time.Millisecond))
}

// stalled ends the run at a write cut by its deadline; the connection may
// hold part of a message now, so the session is not closed.
func (r *run) stalled(err error) error {
	r.stopSending("reflector-stalled")
	r.broken = true
	return err
}
