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
// and handles replies until the run is over. Each turn it takes in what
// the open-loop sender sent, declares timed-out probes lost, ends
// intervals that are over, decides whether sending goes on, looks after
// the session, lets the closed-loop sender send, and reads until the
// earliest thing it must wake for.
func (r *run) loop(ctx context.Context) error {
	now := r.clk.Now()
	r.begin(ctx, now)
	var deadline int64 // the read deadline currently set
	for {
		if r.openLoop != nil {
			r.takeSent()
		}
		r.expire(now)
		if r.openLoop == nil {
			r.closedWarmup(now)
		}
		r.flushDue(now)
		if err := r.checkSending(ctx, now); err != nil {
			return err
		}
		if !r.sending && (r.inflight == 0 || now >= r.drainBy) {
			return nil // what is still in flight is lost
		}
		if lost, err := r.watchSession(now); err != nil {
			return err
		} else if lost {
			continue
		}
		if r.openLoop == nil {
			var err error
			if now, err = r.sendClosed(now); err != nil {
				return err
			}
		}
		// A deadline already set earlier than needed is left alone: an
		// early wake-up costs one loop, a new deadline per probe costs
		// more.
		if want := r.wakeAt(now); deadline <= now || want < deadline {
			deadline = want
			if err := r.conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil && r.sending && r.openLoop == nil {
			continue // stop sending at the top of the loop, then drain
		}
		n, err := r.read()
		now = r.in[0].At // T4 as the read returned (SetReadClock)
		if err != nil || n == 0 || now == 0 {
			now = r.clk.Now()
		}
		if err != nil {
			if forced, err := r.readFailed(ctx, err, now, deadline); err != nil {
				return err
			} else if forced {
				deadline = 0
			}
			continue
		}
		for i := range n {
			m := &r.in[i]
			if err := r.receive(m.Buf[:m.N], now, m.Stamp, m.Path); err != nil {
				return err
			}
		}
	}
}

// begin starts the loop at now: the warm-up or the measurement, and the
// open-loop sender.
func (r *run) begin(ctx context.Context, now int64) {
	cfg := &r.cfg
	// An open-loop run measures from its first measured slot, which the
	// sender's start and set-up delay: until the sender says it sent that
	// probe, the run is warming up (found by an outside test: "-n 5
	// --rate 100k" reported its rate 89-97% short).
	r.warm = cfg.WarmupDuration > 0 || cfg.WarmupCount > 0 || r.openLoop != nil
	r.closedLoop.warmUntil = now + int64(cfg.WarmupDuration)
	if !r.warm {
		r.startMeasuring(now)
	}
	r.sending = true
	r.oldest = 1
	if r.openLoop != nil {
		r.openLoop.wg.Go(func() { r.sender(ctx, now) })
	}
}

// checkSending stops sending when it is time to: the open-loop sender
// stopped, ctx is done, or the count or the duration is reached. An error
// ends the run.
func (r *run) checkSending(ctx context.Context, now int64) error {
	cfg := &r.cfg
	switch {
	case !r.sending:
	case r.openLoop != nil:
		return r.senderStopped(now)
	case ctx.Err() != nil:
		r.stopSending("interrupted")
		if r.warm {
			r.endWarmup(r.seq, now)
		}
	case r.warm:
	case cfg.Count > 0 && r.closedLoop.measured >= cfg.Count:
		r.stopSending("count")
	case r.sendUntil != 0 && now >= r.sendUntil:
		r.stopSending("duration")
	}
	return nil
}

// watchSession looks after the session at now: while reconnecting, it
// sends the next Hello; otherwise it notices a reflector gone silent. lost
// says the session was lost just now (the loop starts its turn again); an
// error ends the run.
func (r *run) watchSession(now int64) (lost bool, err error) {
	if r.recon != nil {
		return false, r.reconnectStep(now)
	}
	if r.silent(now) {
		if r.answeredSince() {
			r.heardAt(now) // refused, not silent
			return false, nil
		}
		// How long it has been: Silence or more, a whole send gap more
		// where the probes are farther apart.
		quiet := time.Duration(now - r.lastHeard).Round(time.Millisecond)
		if err := r.lostSession(now, "silent", fmt.Errorf("%w: %s sent no reply for %s", ErrSilent, r.peer, quiet)); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// heardAt notes that the reflector was heard from at t (or a session
// opened then): a reply, or a foreign peer's answer.
func (r *run) heardAt(t int64) { r.lastHeard, r.firstUnanswered = t, 0 }

// quietSince is when the reflector's silence, if it is silent, began: the
// last time it was heard from, or the later send of the first probe since
// (an open-loop gap longer than Silence, or a monitor's probe a few seconds
// apart, is no silence), moved on by the stalls of the loop's own since
// (see readFailed). Found by an outside test: a 4 s send interval ended
// every run at its second probe as "reflector silent".
func (r *run) quietSince() int64 { return max(r.lastHeard, r.firstUnanswered, r.afterStall) }

// silent reports whether the reflector is silent at now: a probe sent since
// it was last heard from was lost, and from quietSince to the end of that
// probe's timeout is Silence or more. Only whole timeouts count, so it is
// judged as probes are declared lost (the loop wakes for those), and one
// loss among probes more than Silence apart is no silence (found by a
// reviewer: it ended the run as the next probe was sent).
func (r *run) silent(now int64) bool {
	if r.lastLostSent < r.lastHeard {
		return false
	}
	return min(r.lastLostSent+int64(r.cfg.Timeout), now)-r.quietSince() >= int64(r.cfg.Silence)
}

// wakeAt is when the loop must wake after now, at the earliest of: the
// oldest probe's timeout, the next report, the end of sending, the end of
// warm-up, the next burst or workload gap, the next Hello or the end of
// trying while reconnecting, the end of the wind-down; and, while an
// open-loop sender runs, soon enough to take in what it sent.
func (r *run) wakeAt(now int64) int64 {
	cfg := &r.cfg
	// Silence is judged as probes time out (see silent): nothing else to
	// wake for. (Waking at the last reply plus Silence, a time already
	// past with nothing in flight, spun a core in the gaps of a 3.8 s
	// send interval.)
	want := now + int64(cfg.Silence)
	if r.recon != nil {
		want = min(r.recon.nextHello, r.recon.at+int64(cfg.Reconnect))
	}
	if due, ok := r.oldestDue(); ok {
		want = min(want, due)
	}
	if r.reportDue(r.nextReport) {
		want = min(want, r.nextReport)
	}
	if r.openLoop == nil {
		want = r.closedWake(now, want)
	} else if r.sending {
		drain := drainEvery
		if cfg.Shared {
			drain = sharedDrainEvery
		}
		want = min(want, now+int64(drain))
	}
	if !r.sending {
		want = min(want, r.drainBy)
	}
	return want
}

// stallAfter is how late past its read deadline the loop must wake to
// take it that the process itself stalled (stopped, or starved of CPU),
// and that the replies waiting on its socket had no chance to be read: the
// stall is not counted as the reflector's silence. (kwait's reads wake up
// to two ticks, 8 ms, late.)
const stallAfter = 100 * time.Millisecond

// readFailed handles the error err of a read with the deadline deadline
// that ended at now. forced says ctx is done and forced the read's
// deadline (the loop's is no longer set); an error ends the run.
func (r *run) readFailed(ctx context.Context, err error, now, deadline int64) (forced bool, _ error) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if stall := now - deadline; stall > int64(stallAfter) {
			// Only the stall is forgiven: stalls that keep coming delay
			// the silence by their length, not for ever.
			r.afterStall = min(now, r.quietSince()+stall)
		}
		if r.stamps != nil && r.openLoop == nil {
			// Nothing came: the transmit stamps of what got no answer
			// (lost probes, Hellos while reconnecting) would stay on
			// the socket, taking receive buffer room, until the next
			// reply. The open loop drains at every turn.
			r.drainTx()
		}
		if ctx.Err() != nil {
			// Interrupted: the deadline was forced. Stop sending (the
			// open-loop sender sees ctx itself) and give in-flight
			// probes their timeout.
			if r.sending && r.openLoop == nil {
				r.stopSending("interrupted")
			}
			return true, nil
		}
	case transport.IsPeerGone(err):
		return false, r.lostSession(now, "gone", r.gone(err))
	case errors.Is(err, net.ErrClosed):
		return false, err
	case r.stream:
		// A stream's read fails for the stream, not for a message: one
		// that says so again at every read (a frame longer than a
		// stream carries) would spin.
		r.stopSending("reflector-broken")
		r.broken = true
		return false, fmt.Errorf("%w: %s: %w", ErrBroken, r.peer, err)
	default:
		r.countErrors(1)
	}
	return false, nil
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
		if rc, ok := r.conn.(transport.ReadClocker); ok {
			rc.SetReadClock(r.clk.Now) // T4 as the read returns
		}
		r.timer, _ = r.conn.(transport.ReadTimer)
		if bc, ok := r.conn.(transport.BatchConn); ok && r.readsBatches() {
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
		in := r.in
		if r.openLoop == nil {
			// No more replies than probes in flight are waiting, as a
			// rule: asking for more costs a receive that finds nothing
			// (recvmmsg tries again after the first).
			in = in[:max(1, min(r.inflight, len(in)))]
		}
		return r.batch.ReadBatch(in)
	}
	n, err := r.conn.Read(r.in[0].Buf)
	if err != nil {
		return 0, err
	}
	r.in[0].N = n
	if r.timer != nil {
		r.in[0].At = r.timer.ReadAt() // T4 as the read's system call returned
	}
	return 1, nil
}

// readsBatches reports whether the run reads several messages a call
// (where its connection moves batches): with more than one probe in
// flight, or for the replies' kernel stamps, which only batch reads bring.
func (r *run) readsBatches() bool {
	return r.openLoop != nil || r.cfg.Window > 1 || r.stamps != nil
}

// receive handles the message msg received at now, whose IP header said
// path (where the socket reads it); an error ends the run.
func (r *run) receive(msg []byte, now int64, rx tstamp.Stamp, path transport.Path) error {
	var h wire.Header
	if h.Decode(msg) != nil || !r.verified(&h, msg) {
		r.countErrors(1)
		return nil
	}
	if r.recon != nil {
		if answered, err := r.helloAnswered(&h, now); answered {
			return err
		}
	}
	seg := r.tokenSeg(h.Token)
	if seg < 0 {
		r.countErrors(1)
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
		r.seePath(&h, path, now)
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
		r.heardAt(t4)
	case heardThreshold:
		r.heardAt(t4)
		r.stopSending("threshold")
	}
}

// drainEvery is how often the receiver of an open-loop run wakes to take
// in the sender's probes when no reply wakes it.
const drainEvery = 5 * time.Millisecond

// sharedDrainEvery is drainEvery for a run that shares its process with
// many (Config.Shared): a receiver that wakes 200 times a second cost a
// monitored target 3% of a core at one probe a second. A reply still wakes
// it at once; a lost probe is declared lost up to this much later.
const sharedDrainEvery = 50 * time.Millisecond

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
		r.res.CPU = r.cpu.until()
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
