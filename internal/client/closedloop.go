package client

import (
	"errors"
	"time"

	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

// closedLoop is the pacing of a closed-loop run's sender, beyond its window:
// workload gaps and bursts.
type closedLoop struct {
	picker     *workload.Picker // draws each probe's workload entry; nil without a workload
	nextSendAt int64            // when the next probe may leave (workload gaps)
	burstSent  int              // probes sent in this period's burst
	periodEnd  int64
	warmUntil  int64  // the end of a warm-up of a duration
	measured   uint64 // measured probes sent
	// yields says the reads wait in the kernel on the loop's locked
	// thread: the loop gives way to the scheduler now and then (yield).
	yields bool
	yield  kwait.Yield
}

// sendClosed sends probes while the window, the bursts, the workload gaps
// and the count let it, and returns the time after the last; an error
// ends the run.
func (r *run) sendClosed(now int64) (int64, error) {
	cfg := &r.cfg
	c := &r.closedLoop
	if c.yields && r.inflight == 0 {
		c.yield.Maybe(now) // with nothing in flight: no round trip waits on it
	}
	for r.sending && r.recon == nil && r.inflight < cfg.Window && r.burstOpen(now) && now >= c.nextSendAt &&
		!(cfg.Count > 0 && !r.warm && c.measured >= cfg.Count) {
		if err := r.send(); err != nil {
			if errors.Is(err, ErrStalled) {
				return now, r.stalled(err)
			}
			if errors.Is(err, errPastEnd) {
				break // checkSending stops sending, for its reason
			}
			if transport.IsPeerGone(err) {
				if err := r.lostSession(now, "gone", r.gone(err)); err != nil {
					return now, err
				}
				break
			}
			r.countErrors(1)
			break
		}
		now = r.clk.Now()
		if !r.warm {
			c.measured++
			c.burstSent++
		} else if cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount {
			// The last warm-up probe: the next is measured, even when
			// several replies came in one read.
			r.endWarmup(r.seq, now)
		}
	}
	return now, nil
}

// closedWarmup ends a closed-loop warm-up whose time or count is up.
func (r *run) closedWarmup(now int64) {
	cfg := &r.cfg
	if r.warm && ((cfg.WarmupDuration > 0 && now >= r.closedLoop.warmUntil) || (cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount)) {
		r.endWarmup(r.seq, now)
	}
}

// closedWake is when the loop must wake, at the earliest, for the
// closed-loop sender: want, or sooner for the end of sending, the next
// burst, the next workload gap or the end of the warm-up.
func (r *run) closedWake(now, want int64) int64 {
	c := &r.closedLoop
	if r.sending {
		if r.sendUntil != 0 {
			want = min(want, r.sendUntil)
		}
		if r.cfg.Burst > 0 && !r.burstOpen(now) {
			want = min(want, c.periodEnd)
		}
		if c.nextSendAt > now {
			want = min(want, c.nextSendAt)
		}
	}
	if r.warm && r.cfg.WarmupDuration > 0 {
		want = min(want, c.warmUntil)
	}
	return want
}

// burstOpen reports whether a closed-loop run may send now: without bursts
// always; with them, until the period's burst is sent.
func (r *run) burstOpen(now int64) bool {
	if r.cfg.Burst == 0 || r.warm {
		return true
	}
	if now >= r.closedLoop.periodEnd {
		if r.closedLoop.periodEnd == 0 || r.cfg.Period == 0 {
			r.closedLoop.periodEnd = now + int64(r.cfg.Period)
		} else {
			for r.closedLoop.periodEnd <= now {
				r.closedLoop.periodEnd += int64(r.cfg.Period)
			}
		}
		r.closedLoop.burstSent = 0
	}
	return r.closedLoop.burstSent < r.cfg.Burst
}

// send sends the next probe.
func (r *run) send() error {
	seq := r.seq + 1
	// T1 as late as possible: the bookkeeping since the last reply is not
	// part of this probe's round trip.
	now := r.clk.Now()
	h := wire.Header{Type: wire.TypeProbe, Token: r.token, Nonce: r.nonce, Seq: seq, T1: now,
		ReplySize: uint32(r.grant.ReplySize), HoldMicro: uint32(r.grant.Hold / time.Microsecond)}
	if r.warm {
		h.Flags = wire.FlagWarmup
	}
	if r.cfg.NoQuickAck {
		h.Flags |= wire.FlagNoQuickAck
	}
	h.Flags |= r.pathFlag
	buf, entry := r.buf, uint16(0)
	if r.closedLoop.picker != nil {
		entry = uint16(r.closedLoop.picker.Pick())
		e := &r.cfg.Workload[entry]
		buf = r.buf[:e.Size]
		h.ReplySize, h.HoldMicro = uint32(e.ReplySize), uint32(time.Duration(e.Hold)/time.Microsecond)
		r.closedLoop.nextSendAt = now + int64(e.Gap)
	}
	var txID uint32
	if r.stamps != nil {
		h.Flags |= stampsFlag(h.ReplySize, len(buf), r.signer != nil)
		txID = r.stamps.sock.NextTxID()
	}
	r.encode(&h, buf)
	if err := r.guard.probe(now, r.sendUntil); err != nil {
		return err
	}
	if _, err := r.conn.Write(buf); err != nil {
		if isStall(err) {
			return r.stallError(len(buf), now, r.clk.Now())
		}
		return err
	}
	r.sent(seq, now, entry, len(buf), txID)
	return nil
}
