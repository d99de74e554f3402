package client

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/wire"
)

// A run talks to the reflector in one session, or, when the reflector
// restarts and Config.Reconnect lets the run carry on, in one session after
// another. Each session's part of the run is a segment: the reflector's
// counts in replies and in its CloseAck are of that session alone, so the
// loss per direction is worked out per segment. The last segment's is
// exact when its CloseAck arrives; a lost session's is estimated from the
// last reply it sent, like a run whose close went unanswered.

// segment is the part of a run spent in one session.
type segment struct {
	token, nonce uint64
	// first is the first sequence number sent in the session; 0 until an
	// open-loop sender has sent one.
	first uint64
	// sMax is the highest measured sequence number replied to in the
	// session, cAtSMax the reflector's count in that reply.
	sMax, cAtSMax uint64
	lost          uint64 // measured probes of the session declared lost
}

// sessionKey is what an open-loop sender needs of the current session.
type sessionKey struct {
	token, nonce uint64
	gen          uint32 // index of the segment
}

// reconnect is the state of a run looking for a new session.
type reconnect struct {
	at        int64  // when the session was lost
	nonce     uint64 // of the Hellos sent for the new one
	nextHello int64
}

// segOf returns the index of the segment probe seq was sent in.
func (rec *recorder) segOf(seq uint64) int {
	for seg := len(rec.segs) - 1; seg > 0; seg-- {
		if f := rec.segs[seg].first; f != 0 && seq >= f {
			return seg
		}
	}
	return 0
}

// tokenSeg returns the index of the segment of token, or -1.
func (rec *recorder) tokenSeg(token uint64) int {
	for seg := len(rec.segs) - 1; seg >= 0; seg-- {
		if rec.segs[seg].token == token {
			return seg
		}
	}
	return -1
}

// segSpan returns the measured sequence numbers of segment seg, first to
// last; last < first when there are none.
func (rec *recorder) segSpan(seg int) (first, last uint64) {
	g := &rec.segs[seg]
	if g.first == 0 {
		return 1, 0
	}
	first, last = max(g.first, rec.warmupLast+1), rec.seq
	if seg+1 < len(rec.segs) && rec.segs[seg+1].first != 0 {
		last = rec.segs[seg+1].first - 1
	}
	return first, last
}

// upEstimate is the loss on the way up in segment seg, from the reflector's
// count in the reply to the segment's highest measured sequence number: of
// the measured probes up to that one, all but that count were lost before
// the reflector. With after, the probes after it, which never showed they
// got there, count as lost on the way up too (the segment is over). It is
// at most the segment's losses.
func (rec *recorder) upEstimate(seg int, after bool) uint64 {
	g := &rec.segs[seg]
	first, last := rec.segSpan(seg)
	if last < first {
		return 0
	}
	var u uint64
	top := first - 1
	if g.sMax >= first {
		if sent := g.sMax - top; sent > g.cAtSMax {
			u = sent - g.cAtSMax
		}
		top = g.sMax
	}
	if after {
		u += last - top
	}
	return min(u, g.lost)
}

// lostUp is the loss on the way up so far. Until the run is over (final)
// the current segment's is estimated without the probes after its last
// reply, which may still be on their way; at the end it is exact when the
// reflector's final count came.
func (rec *recorder) lostUp(final bool) uint64 {
	var u uint64
	n := len(rec.segs) - 1
	for seg := range n {
		u += rec.upEstimate(seg, true)
	}
	if final && rec.res.ReflectorCount == "close" {
		// Exact: what the reflector counted is what got there.
		if first, last := rec.segSpan(n); last >= first {
			if sent := last - first + 1; sent > rec.finalCount {
				u += min(sent-rec.finalCount, rec.segs[n].lost)
			}
		}
	} else {
		// While looking for a new session the current one is over.
		u += rec.upEstimate(n, final || rec.between)
	}
	return min(u, rec.lostSoFar())
}

// lostSession handles the loss of the session, noticed at now for reason
// ("restarted", "silent" or "gone"): without Config.Reconnect the run ends
// with err; with it, the probes in flight are declared lost and the run
// starts looking for a new session, and carries on when one opens.
func (r *run) lostSession(now int64, reason string, err error) error {
	if r.cfg.Reconnect == 0 {
		r.stopSending("reflector-" + reason)
		return err
	}
	if r.recon != nil {
		return nil
	}
	inFlight := r.loseInFlight()
	var nb [8]byte
	_, _ = rand.Read(nb[:]) // crypto/rand.Read does not fail
	r.recon = &reconnect{at: now, nonce: binary.BigEndian.Uint64(nb[:]), nextHello: now}
	r.between = true
	r.token = 0 // nothing to close
	rc := result.Reconnect{Reason: reason, InFlight: inFlight}
	if r.origin != 0 {
		rc.At = time.Duration(now - r.origin)
	}
	r.res.Reconnects = keepReconnect(r.res.Reconnects, rc)
	r.handler.Reconnect(rc)
	return nil
}

// MaxReconnectsKept bounds Result.Reconnects: a run that lasts for ever
// (volley monitor's) may lose and reopen sessions without end, and keeps
// the latest ones only. Counts.Reconnects counts them all.
const MaxReconnectsKept = 100

// keepReconnect appends rc to list, the oldest dropped past
// MaxReconnectsKept.
func keepReconnect(list []result.Reconnect, rc result.Reconnect) []result.Reconnect {
	if len(list) >= MaxReconnectsKept {
		n := copy(list, list[len(list)-MaxReconnectsKept+1:])
		list = list[:n]
	}
	return append(list, rc)
}

// helloEvery is the most time between the Hellos of a reconnecting run: a
// reflector back from a restart is found within it.
const helloEvery = 100 * time.Millisecond

// reconnectStep sends the next Hello when due, and reports the error that
// ends the run when the reflector did not come back in time.
func (r *run) reconnectStep(now int64) error {
	if now-r.recon.at >= int64(r.cfg.Reconnect) {
		r.stopSending("reflector-gone")
		return fmt.Errorf("%w: %s did not come back within %s", ErrGone, r.peer, r.cfg.Reconnect)
	}
	if now < r.recon.nextHello {
		return nil
	}
	r.recon.nextHello = now + int64(min(r.cfg.Timeout, helloEvery))
	hello := r.hello(r.recon.nonce)
	hello.T1 = now
	msg := r.helloMsg()
	r.encode(&hello, msg)
	// A socket has one write deadline. While an open-loop sender writes
	// on it, the sender's guard keeps one set (at most Silence away),
	// which bounds this write too; setting a shorter one here would cut
	// the sender's next probe, whose guard believes its own still holds.
	if r.openLoop == nil || r.openLoop.done.Load() {
		_ = r.guard.within(now, min(r.cfg.Timeout, helloEvery), true)
	}
	_, _ = r.conn.Write(msg) // an unreachable port is why we are here
	return nil
}

// resume takes the session the Cookie h opened and carries on in it.
func (r *run) resume(h *wire.Header, now int64) {
	g := segment{token: h.Token, nonce: r.recon.nonce}
	if r.openLoop == nil {
		g.first = r.seq + 1
	}
	r.segs = append(r.segs, g)
	r.token, r.nonce = g.token, g.nonce
	// The new session's reflector may read another clock (it restarted
	// after a step, or moved): the run's delays are measured only if
	// every session's were.
	r.sameClock = r.sameClock && sameClock(r.clk, h)
	// Its send times are not comparable with the last session's: a
	// reply's reordering down is judged within its session.
	r.maxT3 = 0
	if r.openLoop != nil {
		// The sender takes the new session for its next probe; drain
		// sets the segment's first probe when it sees it.
		r.openLoop.session.Store(&sessionKey{token: g.token, nonce: g.nonce, gen: uint32(len(r.segs) - 1)})
	}
	rc := &r.res.Reconnects[len(r.res.Reconnects)-1]
	rc.Resumed, rc.Gap = true, time.Duration(now-r.recon.at)
	r.recon, r.between = nil, false
	r.opened = now
	r.heardAt(now)
	r.countReconnect()
	r.handler.Reconnect(*rc)
}

// helloAnswered takes h, received at now while reconnecting, if it is the
// answer to the Hellos: a Cookie resumes the run in its session, an Error
// ends the run with err.
func (r *run) helloAnswered(h *wire.Header, now int64) (answered bool, err error) {
	if h.Seq != r.recon.nonce || (h.Type != wire.TypeCookie && h.Type != wire.TypeError) {
		return false, nil
	}
	if h.Type == wire.TypeError {
		r.stopSending("reflector-ended")
		return true, fmt.Errorf("%w at %s on reconnecting: %s", ErrRefused, r.peer, h.Code)
	}
	r.resume(h, now)
	return true, nil
}
