package client

import (
	"context"
	"runtime"
	"time"

	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

// The open-loop sender's goroutine (see openloop.go for what it shares
// with the receiver).

// sender is the open-loop sender's own state: only its goroutine touches
// it.
type sender struct {
	r      *run
	ol     *openLoop
	sched  *pace.Schedule
	w      pace.Waiter
	ob     *outBatch
	guard  *writeGuard      // the receiver's is its own
	signer *wire.Signer     // the receiver's is its own: a hash is not shared
	picker *workload.Picker // nil without a workload
	h      wire.Header      // the next probe's

	// When the sender last woke to send, and the shortest time it waits
	// from then for the next slot (0: each slot's time; see wakeEvery).
	woke, wakeGap int64
	warm          bool
	warmUntil     int64
	seq, measured uint64
	sendUntil     int64
	reason        string // why it stopped ("": the receiver asked)
	end           int64  // when it stopped (0: now)
}

// wakeEvery is the shortest time between two of an open-loop sender's
// wake-ups, where the mean gap is shorter: it then sends the slots that
// came due meanwhile in one call, late by up to wakeEvery, which the send
// error reports. On this kind of machine (a 2-core VM) each wake-up (a
// sleep, a context switch, a sendmmsg) costs several µs of CPU that the
// receiver and the reflector need: at 100k probes/s, waking for each slot
// used 1.37 CPUs and fell 5 ms behind (send error p50 0.2-0.4 ms, p99
// 4 ms), waking every 50 µs used 1.18 and kept up (p50 60 µs, p99 0.6-1 ms).
// Slower rates, 20k probes/s and below, wake for each slot.
const wakeEvery = int64(50 * time.Microsecond)

// maxSpin is the longest an open-loop sender spins before a slot whose
// sleeps wake late: a fifth of the mean gap, and at most 1 ms (a VM's
// sleeps wake 60-130 µs late; a stall of seconds, such as a SIGSTOP, is
// no lateness to spin for, and the waits are at most checkEvery long).
func maxSpin(gap time.Duration) time.Duration { return min(gap/5, time.Millisecond) }

// checkEvery is the longest the sender waits between looks at ctx and
// at the receiver's request to stop.
const checkEvery = int64(50 * time.Millisecond)

// sender paces and writes the probes of an open-loop run, starting its
// schedule at start, or as it is ready if that is later. It stops when the duration or count is reached, ctx
// is done, or the receiver asks it to.
func (r *run) sender(ctx context.Context, start int64) {
	s := &sender{r: r, ol: r.openLoop}
	defer func() {
		s.ol.stop = s.reason
		if s.end == 0 {
			s.end = r.clk.Now()
		}
		s.ol.end = s.end
		s.ol.done.Store(true) // publishes stop
	}()
	if !r.cfg.Shared {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_ = pace.PrepareThread() // best effort: without it sleeps are coarser
	}
	if r.cfg.Thread != nil {
		_ = r.cfg.Thread(r.flow, "sender") // checked before the run
	}
	// The schedule starts when the sender is ready to keep it: its
	// goroutine's start and its thread's set-up are no missed slots.
	s.init(max(start, r.clk.Now()))
	defer func() { _ = s.flush() }() // the probes already handed over
	s.run(ctx)
}

// init prepares the schedule starting at start, the batch and the probes'
// header.
func (s *sender) init(start int64) {
	r := s.r
	cfg := &r.cfg
	switch {
	case cfg.Poisson:
		s.sched = pace.NewPoisson(start, r.meanGap(), cfg.Seed)
	case cfg.SendInterval > 0:
		s.sched = pace.NewFixed(start, cfg.SendInterval)
	default:
		s.sched = pace.NewRate(start, cfg.Rate)
	}
	// Spin at most a tenth of each gap, and wake at most every
	// wakeEvery: at high rates the sender sleeps and sends the slots that
	// came due back to back, so that it leaves CPU to the receiver and,
	// on one machine, the reflector. The send error this costs is
	// measured and reported.
	s.w = pace.Waiter{Clock: r.clk, Sleep: cfg.sleep, SpinFor: min(pace.DefaultSpinFor, r.meanGap()/10)}
	if int64(r.meanGap()) < wakeEvery {
		s.wakeGap = wakeEvery
	}
	if cfg.Shared && cfg.sleep == nil {
		s.w.Sleep = time.Sleep // the runtime's timers: no thread held, no spin
	} else {
		// Where the kernel's sleeps wake late (a VM), spin longer: at
		// 1k probes/s on this 2-core VM, the send error's p99 went from
		// 47-100 µs to 24-31 µs for 0.07 CPU.
		s.w.MaxSpin = maxSpin(r.meanGap())
	}
	s.ob = newOutBatch(r.conn, cfg.Size)
	s.h = wire.Header{Type: wire.TypeProbe,
		ReplySize: uint32(r.grant.ReplySize), HoldMicro: uint32(r.grant.Hold / time.Microsecond)}
	s.warm = cfg.WarmupDuration > 0 || cfg.WarmupCount > 0
	s.warmUntil = start + int64(cfg.WarmupDuration)
	if len(cfg.Key) > 0 {
		s.signer = wire.NewSigner(cfg.Key)
	}
	if len(cfg.Workload) > 0 {
		s.picker = workload.NewPicker(cfg.Workload, cfg.Seed)
	}
	s.guard = newWriteGuard(r)
}

// run sends until it is time to stop.
func (s *sender) run(ctx context.Context) {
	cfg := &s.r.cfg
	for !s.stopped(ctx) {
		now := s.r.clk.Now()
		at, skipped := now, uint64(0) // unpaced: every probe is due now
		if !cfg.Unpaced {
			at, skipped = s.sched.Next(now)
		}
		if at > now && !s.flush() {
			break // sent what was due before waiting for the next slot
		}
		if !s.warm && s.sendUntil != 0 && at > s.sendUntil {
			at = s.sendUntil // the next slot is past the end: wait for the end only
		}
		for at-now > checkEvery && !s.stopped(ctx) {
			now = s.w.Until(now + checkEvery)
		}
		if s.reason != "" || s.ol.halt.Load() {
			break
		}
		if at > now {
			now = s.w.Until(max(at, s.woke+s.wakeGap))
			s.woke = now
		}
		if s.warm && ((cfg.WarmupDuration > 0 && at >= s.warmUntil) || (cfg.WarmupCount > 0 && s.seq >= cfg.WarmupCount)) {
			s.warm = false
			skipped = 0 // slots skipped while warming up are not the measurement's
		}
		if !s.warm && s.over(at) {
			break
		}
		if !s.probe(ctx, now, at, skipped) {
			break
		}
	}
}

// over reports whether the measured probe due at at is past the count or
// the duration, and the sender stops.
func (s *sender) over(at int64) bool {
	cfg := &s.r.cfg
	if s.sendUntil == 0 && cfg.Duration > 0 {
		s.sendUntil = at + int64(cfg.Duration)
	}
	if cfg.Count > 0 && s.measured >= cfg.Count {
		s.reason, s.end = "count", at
		return true
	}
	if s.sendUntil != 0 && at >= s.sendUntil {
		s.reason, s.end = "duration", s.sendUntil
		return true
	}
	return false
}

// probe encodes the next probe, written at now for the slot at at after
// skipped skipped ones, hands it to the receiver and queues it to be sent;
// false stops the sender.
func (s *sender) probe(ctx context.Context, now, at int64, skipped uint64) bool {
	r, cfg, h := s.r, &s.r.cfg, &s.h
	s.seq++
	key := s.ol.session.Load() // a new one after a reconnection
	h.Token, h.Nonce = key.token, key.nonce
	h.Seq, h.T1, h.Flags = s.seq, now, 0
	if s.warm {
		h.Flags = wire.FlagWarmup
	}
	if cfg.OneWay {
		h.Flags |= wire.FlagOneWay
	}
	if cfg.NoQuickAck {
		h.Flags |= wire.FlagNoQuickAck
	}
	h.Flags |= r.pathFlag
	out, entry := s.ob.next(), uint16(0)
	if s.picker != nil {
		entry = uint16(s.picker.Pick())
		e := &cfg.Workload[entry]
		out = out[:e.Size]
		h.ReplySize, h.HoldMicro = uint32(e.ReplySize), uint32(time.Duration(e.Hold)/time.Microsecond)
	}
	var txID uint32
	if r.stamps != nil {
		h.Flags |= stampsFlag(h.ReplySize, len(out), s.signer != nil)
		// The probes of a batch take the IDs after the socket's next,
		// in order.
		txID = r.stamps.sock.NextTxID() + uint32(len(s.ob.msgs))
	}
	h.Seal(out, s.signer)
	for !s.ol.sent.push(sentRecord{seq: s.seq, sent: now, sched: at, skipped: skipped, size: len(out), entry: entry, gen: key.gen, warm: s.warm, txID: txID}) {
		// The receiver drains at least every few milliseconds; a full
		// queue means it is starved of CPU.
		runtime.Gosched()
		if s.stopped(ctx) {
			return false
		}
	}
	if s.ob.add(out) && !s.flush() {
		return false
	}
	if !s.warm {
		s.measured++
	}
	return true
}

// stopped reports whether the sender must stop: ctx is done, or the
// receiver asked.
func (s *sender) stopped(ctx context.Context) bool {
	switch {
	case ctx.Err() != nil:
		s.reason = "interrupted"
		return true
	case s.ol.halt.Load():
		return true
	}
	return false
}

// flush sends what came due together; false when the reflector's port is
// unreachable, or a write did not finish in time, and the run cannot go
// on.
func (s *sender) flush() bool {
	r, ob := s.r, s.ob
	if len(ob.msgs) == 0 {
		return true
	}
	start := r.clk.Now()
	if err := s.guard.probe(start, s.sendUntil); err != nil {
		s.ol.errors.Add(uint64(len(ob.msgs)))
		ob.msgs = ob.msgs[:0]
		return true
	}
	errs, refused, stalled := ob.flush(r.cfg.Reconnect == 0)
	if errs > 0 {
		s.ol.errors.Add(errs)
	}
	switch {
	case refused:
		s.ol.gone.Store(true)
		s.reason = "reflector-gone"
	case stalled > 0:
		s.ol.err = r.stallError(stalled, start, r.clk.Now())
		s.reason = "reflector-stalled"
	}
	return !refused && stalled == 0
}

// outBatch gathers the probes of an open-loop sender that came due
// together, to send them in one system call where the connection moves
// batches (each is stamped when it is encoded, a few hundred nanoseconds
// apart; the send error includes the wait). Elsewhere it sends each alone.
type outBatch struct {
	bc   transport.BatchConn // nil: one at a time
	conn transport.Conn
	bufs [][]byte
	msgs []transport.Message
}

// sendBatch is the most probes an open-loop sender sends in one call.
const sendBatch = 32

func newOutBatch(conn transport.Conn, size int) *outBatch {
	b := &outBatch{conn: conn}
	n := 1
	if bc, ok := conn.(transport.BatchConn); ok {
		b.bc, n = bc, sendBatch
	}
	b.bufs = make([][]byte, n)
	for i := range b.bufs {
		b.bufs[i] = make([]byte, size)
	}
	b.msgs = make([]transport.Message, 0, n)
	return b
}

// next returns the buffer for the next probe.
func (b *outBatch) next() []byte { return b.bufs[len(b.msgs)] }

// add queues out, a prefix of the buffer next returned, and reports
// whether the batch must be flushed now.
func (b *outBatch) add(out []byte) bool {
	b.msgs = append(b.msgs, transport.Message{Buf: out, N: len(out)})
	return len(b.msgs) == cap(b.msgs)
}

// flush sends the queued probes, and returns how many failed, whether the
// peer's port was unreachable, and the size of a probe whose write was cut
// by its deadline (0: none). When stopOnRefused, the probes after an
// unreachable port are not sent; after a cut write, none are.
func (b *outBatch) flush(stopOnRefused bool) (errs uint64, refused bool, stalled int) {
	ms := b.msgs
	b.msgs = b.msgs[:0]
	for len(ms) > 0 {
		var sent int
		var err error
		if b.bc != nil {
			sent, err = b.bc.WriteBatch(ms)
		} else if _, err = b.conn.Write(ms[0].Buf[:ms[0].N]); err == nil {
			sent = 1
		}
		if err == nil {
			ms = ms[sent:]
			continue
		}
		if isStall(err) {
			return errs + uint64(len(ms)-sent), false, ms[sent].N
		}
		if transport.IsPeerGone(err) && stopOnRefused {
			return errs + uint64(len(ms)-sent), true, 0
		}
		errs++
		ms = ms[sent+1:]
	}
	return errs, false, 0
}
