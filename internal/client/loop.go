package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// loop sends probes (or, in an open-loop run, takes them from the sender)
// and handles replies until the run is over.
func (r *run) loop(ctx context.Context) error {
	cfg := &r.cfg
	now := r.clk.Now()
	r.warm = cfg.WarmupDuration > 0 || cfg.WarmupCount > 0
	warmUntil := now + int64(cfg.WarmupDuration)
	if !r.warm {
		r.startMeasuring(now)
	}
	r.sending = true
	r.oldest = 1
	if r.openLoop != nil {
		start := now // now moves on in the loop below
		r.openLoop.wg.Go(func() { r.sender(ctx, start) })
	}
	var deadline int64 // the read deadline currently set
	var measured uint64
	for {
		if r.openLoop != nil {
			r.drain()
			if r.stamps != nil {
				// Probes that get no reply leave their transmit stamps
				// on the socket, where they take receive buffer room.
				r.drainTx()
			}
		}
		// Declare timed-out probes lost, oldest first.
		for r.inflight > 0 {
			s := &r.ring[r.oldest&r.mask]
			if s.seq != r.oldest || s.state != stateOutstanding {
				r.oldest++
				continue
			}
			if now-s.sent < int64(cfg.Timeout) {
				break
			}
			r.lose(s)
			r.oldest++
		}
		if r.openLoop == nil && r.warm && ((cfg.WarmupDuration > 0 && now >= warmUntil) || (cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount)) {
			r.endWarmup(r.seq, now)
		}
		r.flushDue(now)
		switch {
		case !r.sending:
		case r.openLoop != nil:
			if r.openLoop.done.Load() {
				r.drain() // what it sent between the last drain and stopping
				if r.warm {
					r.endWarmup(r.seq, now) // stopped while warming up
				}
				r.stopSending(r.openLoop.stop)
				if r.openLoop.gone.Load() { // only without Reconnect
					return r.gone(nil)
				}
				if r.openLoop.err != nil {
					return r.stalled(r.openLoop.err)
				}
			}
		case ctx.Err() != nil:
			r.stopSending("interrupted")
			if r.warm {
				r.endWarmup(r.seq, now)
			}
		case r.warm:
		case cfg.Count > 0 && measured >= cfg.Count:
			r.stopSending("count")
		case r.sendUntil != 0 && now >= r.sendUntil:
			r.stopSending("duration")
		}
		if !r.sending && (r.inflight == 0 || now >= r.drainBy) {
			return nil // what is still in flight is lost
		}
		if r.recon != nil {
			if err := r.reconnectStep(now); err != nil {
				return err
			}
		} else if r.inflight > 0 && now-r.lastHeard >= int64(cfg.Silence) {
			if err := r.lostSession(now, "silent", fmt.Errorf("%w: %s sent no reply for %s", ErrSilent, r.peer, cfg.Silence)); err != nil {
				return err
			}
			continue
		}
		for r.openLoop == nil && r.sending && r.recon == nil && r.inflight < cfg.Window && r.burstOpen(now) && now >= r.closedLoop.nextSendAt &&
			!(cfg.Count > 0 && !r.warm && measured >= cfg.Count) {
			if err := r.send(); err != nil {
				if errors.Is(err, ErrStalled) {
					return r.stalled(err)
				}
				if transport.IsRefused(err) {
					if err := r.lostSession(now, "gone", r.gone(err)); err != nil {
						return err
					}
					break
				}
				r.cur.counts.Errors++
				break
			}
			now = r.clk.Now()
			if !r.warm {
				measured++
				r.closedLoop.burstSent++
			} else if cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount {
				// The last warm-up probe: the next is measured, even
				// when several replies came in one read.
				r.endWarmup(r.seq, now)
			}
		}

		// Wake at the earliest of: the oldest probe's timeout, the next
		// report, the end of sending, the end of warm-up, the next burst,
		// silence; and, while an open-loop sender runs, soon enough to
		// take in what it sent. A deadline already set earlier than needed
		// is left alone: an early wake-up costs one loop, a new deadline
		// per probe costs more.
		want := r.lastHeard + int64(cfg.Silence)
		if r.recon != nil {
			want = min(r.recon.nextHello, r.recon.at+int64(cfg.Reconnect))
		}
		if r.inflight > 0 {
			if s := &r.ring[r.oldest&r.mask]; s.state == stateOutstanding {
				want = min(want, s.sent+int64(cfg.Timeout))
			}
		}
		if r.reportDue(r.nextReport) {
			want = min(want, r.nextReport)
		}
		if r.sending {
			switch {
			case r.openLoop != nil:
				want = min(want, now+int64(drainEvery))
			case r.sendUntil != 0:
				want = min(want, r.sendUntil)
			}
			if cfg.Burst > 0 && !r.burstOpen(now) {
				want = min(want, r.closedLoop.periodEnd)
			}
			if r.closedLoop.nextSendAt > now {
				want = min(want, r.closedLoop.nextSendAt)
			}
		}
		if r.warm && cfg.WarmupDuration > 0 && r.openLoop == nil {
			want = min(want, warmUntil)
		}
		if !r.sending {
			want = min(want, r.drainBy)
		}
		if deadline <= now || want < deadline {
			deadline = want
			if err := r.conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil && r.sending && r.openLoop == nil {
			continue // stop sending at the top of the loop, then drain
		}
		n, err := r.read()
		now = r.clk.Now()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				if r.stamps != nil && r.openLoop == nil {
					// Nothing came: the transmit stamps of what got no
					// answer (lost probes, Hellos while reconnecting)
					// would stay on the socket, taking receive buffer
					// room, until the next reply. The open loop drains
					// at every turn.
					r.drainTx()
				}
				if ctx.Err() != nil {
					// Interrupted: the deadline was forced. Stop
					// sending (the open-loop sender sees ctx itself)
					// and give in-flight probes their timeout.
					deadline = 0
					if r.sending && r.openLoop == nil {
						r.stopSending("interrupted")
					}
				}
			case transport.IsRefused(err):
				if err := r.lostSession(now, "gone", r.gone(err)); err != nil {
					return err
				}
			case errors.Is(err, net.ErrClosed):
				return err
			case r.stream:
				// A stream's read fails for the stream, not for a
				// message: one that says so again at every read (a
				// frame longer than a stream carries) would spin.
				r.stopSending("reflector-broken")
				r.broken = true
				return fmt.Errorf("%w: %s: %w", ErrBroken, r.peer, err)
			default:
				r.cur.counts.Errors++
			}
			continue
		}
		for i := range n {
			m := &r.in[i]
			if err := r.receive(m.Buf[:m.N], now, m.Stamp); err != nil {
				return err
			}
		}
	}
}

// recvBatch is the most replies a run reads in one call, where the
// connection moves batches and the run has more than one probe in flight.
const recvBatch = 16

// read reads what arrived into r.in: several messages where the
// connection moves batches, one otherwise (and always in ping-pong, where
// only one can be waiting and a plain read is the cheapest).
func (r *run) read() (int, error) {
	if r.in == nil {
		// One at a time, into the handshake's buffer: the two never
		// read at once.
		r.in = []transport.Message{{Buf: r.rbuf}}
		if bc, ok := r.conn.(transport.BatchConn); ok && (r.openLoop != nil || r.cfg.Window > 1 || r.stamps != nil) {
			// Room for the largest message expected; a larger one is
			// cut, and then fails its checks.
			r.batch = bc
			size := max(r.cfg.Size, r.cfg.ReplySize, r.grant.ReplySize, 2048) + 1
			r.in = make([]transport.Message, recvBatch)
			for i := range r.in {
				r.in[i].Buf = make([]byte, size)
			}
		}
	}
	if r.batch != nil {
		return r.batch.ReadBatch(r.in)
	}
	n, err := r.conn.Read(r.in[0].Buf)
	if err != nil {
		return 0, err
	}
	r.in[0].N = n
	return 1, nil
}

// receive handles the message msg received at now; an error ends the run.
func (r *run) receive(msg []byte, now int64, rx tstamp.Stamp) error {
	var h wire.Header
	if h.Decode(msg) != nil || !r.verified(&h, msg) {
		r.cur.counts.Errors++
		return nil
	}
	if r.recon != nil && h.Seq == r.recon.nonce && (h.Type == wire.TypeCookie || h.Type == wire.TypeError) {
		if h.Type == wire.TypeError {
			r.stopSending("reflector-ended")
			return fmt.Errorf("%w at %s on reconnecting: %s", ErrRefused, r.peer, h.Code)
		}
		r.resume(&h, now)
		return nil
	}
	seg := r.tokenSeg(h.Token)
	if seg < 0 {
		r.cur.counts.Errors++
		return nil
	}
	switch {
	case h.Type == wire.TypeError && seg == len(r.segs)-1 && r.recon == nil:
		if h.Code == wire.ErrorSession {
			err := fmt.Errorf("%w: %s no longer knows it (it restarted, or the session idled out; --reconnect opens a new one and carries on)", ErrRestarted, r.peer)
			return r.lostSession(now, "restarted", err)
		}
		r.stopSending("reflector-ended")
		if code := h.Code; code == wire.ErrorDuration {
			return fmt.Errorf("%w at %s after %s: the %s (its --max-duration)", ErrEnded, r.peer, time.Duration(now-r.opened).Round(time.Millisecond), code)
		}
		return fmt.Errorf("%w at %s: %s", ErrRefused, r.peer, h.Code)
	case h.Type == wire.TypeReply:
		if r.openLoop != nil {
			r.drain() // the probe may have left since the last look
		}
		r.flushDue(now) // time moved on; the reply's figures go to its probe's interval
		r.takeReply(&h, len(msg), now, seg, msg, rx)
	}
	return nil
}

// takeReply has the recorder record the reply h (see recorder.reply), and
// acts on what it heard: the reflector is there, and the threshold may
// stop sending.
func (r *run) takeReply(h *wire.Header, n int, t4 int64, seg int, msg []byte, rx tstamp.Stamp) {
	switch r.reply(h, n, t4, seg, msg, rx) {
	case heardReply:
		r.lastHeard = t4
	case heardThreshold:
		r.lastHeard = t4
		r.stopSending("threshold")
	}
}

// drainEvery is how often the receiver of an open-loop run wakes to take
// in the sender's probes when no reply wakes it.
const drainEvery = 5 * time.Millisecond

// stopSending ends sending for the reason given (the first reason wins).
func (r *run) stopSending(reason string) {
	if r.res.Stopped == "" {
		r.res.Stopped = reason
	}
	if r.sendEnd == 0 {
		r.sendEnd = r.clk.Now()
		if r.openLoop != nil && r.openLoop.done.Load() {
			r.sendEnd = r.openLoop.end
		}
		if r.sendUntil != 0 {
			// Deciding to stop takes a moment; the run was this long.
			r.sendEnd = min(r.sendEnd, r.sendUntil)
		}
	}
	r.sending = false
	if r.openLoop != nil {
		r.openLoop.halt.Store(true)
	}
	r.beginWindDown()
}

// beginWindDown sets when the run's wind-down must end: max(Timeout, 1s)
// after the end of sending (its deadline, when it had one and is past it)
// or a signal. The probes in flight may have the first half of that, the
// close the rest. A reflector that answered nothing recently (nothing for
// a timeout, and a probe sent since then went unanswered) is not waited
// for: what it still has in flight is lost.
func (r *run) beginWindDown() {
	if r.endBy != 0 {
		return
	}
	now := r.clk.Now()
	from := now
	if r.sendUntil != 0 {
		from = min(from, r.sendUntil)
	}
	grace := endGrace(&r.cfg)
	r.endBy = from + grace
	r.drainBy = max(from+grace/2, now)
	if now-r.lastHeard >= int64(r.cfg.Timeout) && r.lastLostSent > r.lastHeard {
		r.drainBy = now
	}
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
	if err := r.wg.probe(now, r.sendUntil); err != nil {
		return err
	}
	if _, err := r.conn.Write(buf); err != nil {
		if isStall(err) {
			return r.stallError(len(buf), now, r.clk.Now())
		}
		return err
	}
	r.flushDue(now) // the probe goes in the interval it left in
	r.track(seq, now, 0, entry)
	if r.stamps != nil {
		r.stamps.mapID(txID, seq)
	}
	if !r.warm {
		r.cur.counts.Sent++
		r.cur.bytesUp += uint64(len(buf))
	}
	return nil
}
