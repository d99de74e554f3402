package client

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

// An open-loop run (--rate, --send-interval) has two goroutines: the
// sender paces probes and writes them, the receiver (the run's loop) reads
// replies and does all the accounting. The sender hands each probe over
// through a single-producer single-consumer queue before writing it, so the
// receiver knows a probe before its reply can arrive. Neither side locks.

// sentRecord is what the sender tells the receiver about one probe.
type sentRecord struct {
	seq     uint64
	sent    int64  // when it was written (T1)
	sched   int64  // when the schedule said it should leave
	skipped uint64 // slots skipped just before it (after a stall)
	size    int    // bytes
	entry   uint16 // workload entry
	gen     uint32 // segment (session) it was sent in
	txID    uint32 // its transmit stamp's ID, with kernel stamps
	warm    bool
}

// sentQueue is a lock-free single-producer single-consumer ring.
type sentQueue struct {
	buf  []sentRecord
	mask uint64
	head atomic.Uint64 // next slot to write; the producer's
	tail atomic.Uint64 // next slot to read; the consumer's
}

func newSentQueue(size int) *sentQueue {
	return &sentQueue{buf: make([]sentRecord, size), mask: uint64(size - 1)}
}

// push adds rec and reports false when the queue is full.
func (q *sentQueue) push(rec sentRecord) bool {
	h := q.head.Load()
	if h-q.tail.Load() == uint64(len(q.buf)) {
		return false
	}
	q.buf[h&q.mask] = rec
	q.head.Store(h + 1)
	return true
}

// pop takes the oldest record, if any.
func (q *sentQueue) pop() (sentRecord, bool) {
	t := q.tail.Load()
	if t == q.head.Load() {
		return sentRecord{}, false
	}
	rec := q.buf[t&q.mask]
	q.tail.Store(t + 1)
	return rec, true
}

// sender paces and writes the probes of an open-loop run, starting its
// schedule at start. It stops when the duration or count is reached, ctx
// is done, or the receiver asks it to.
func (r *run) sender(ctx context.Context, start int64) {
	reason := ""
	var end int64
	defer func() {
		r.openLoop.stop = reason
		if end == 0 {
			end = r.clk.Now()
		}
		r.openLoop.end = end
		r.openLoop.done.Store(true) // publishes senderStop
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = pace.PrepareThread() // best effort: without it sleeps are coarser
	if r.cfg.Thread != nil {
		_ = r.cfg.Thread(r.flow, "sender") // checked before the run
	}

	cfg := &r.cfg
	var sched *pace.Schedule
	switch {
	case cfg.Poisson:
		sched = pace.NewPoisson(start, r.meanGap(), cfg.Seed)
	case cfg.SendInterval > 0:
		sched = pace.NewFixed(start, cfg.SendInterval)
	default:
		sched = pace.NewRate(start, cfg.Rate)
	}
	// Spin at most a tenth of each gap: at high rates the sender sleeps
	// and sends the slots that came due back to back, so that it leaves
	// CPU to the receiver and, on one machine, the reflector. The send
	// error this costs is measured and reported.
	w := pace.Waiter{Clock: r.clk, Sleep: cfg.sleep, SpinFor: min(pace.DefaultSpinFor, r.meanGap()/10)}
	ob := newOutBatch(r.conn, cfg.Size)
	h := wire.Header{Type: wire.TypeProbe,
		ReplySize: uint32(r.grant.ReplySize), HoldMicro: uint32(r.grant.Hold / time.Microsecond)}
	warm := cfg.WarmupDuration > 0 || cfg.WarmupCount > 0
	warmUntil := start + int64(cfg.WarmupDuration)
	var seq, measured uint64
	var sendUntil int64
	var signer *wire.Signer // the receiver's is its own: a hash is not shared
	if len(cfg.Key) > 0 {
		signer = wire.NewSigner(cfg.Key)
	}
	var picker *workload.Picker
	if len(cfg.Workload) > 0 {
		picker = workload.NewPicker(cfg.Workload, cfg.Seed)
	}
	const check = int64(50 * time.Millisecond) // longest wait between looks at ctx
	stopped := func() bool {
		switch {
		case ctx.Err() != nil:
			reason = "interrupted"
			return true
		case r.openLoop.halt.Load():
			return true
		}
		return false
	}
	g := newWriteGuard(r) // the receiver's is its own
	// flush sends what came due together; false when the reflector's port
	// is unreachable, or a write did not finish in time, and the run
	// cannot go on.
	flush := func() bool {
		if len(ob.msgs) == 0 {
			return true
		}
		start := r.clk.Now()
		if err := g.probe(start, sendUntil); err != nil {
			r.openLoop.errors.Add(uint64(len(ob.msgs)))
			ob.msgs = ob.msgs[:0]
			return true
		}
		errs, refused, stalled := ob.flush(r.cfg.Reconnect == 0)
		if errs > 0 {
			r.openLoop.errors.Add(errs)
		}
		switch {
		case refused:
			r.openLoop.gone.Store(true)
			reason = "reflector-gone"
		case stalled > 0:
			r.openLoop.err = r.stallError(stalled, start, r.clk.Now())
			reason = "reflector-stalled"
		}
		return !refused && stalled == 0
	}
	defer func() { _ = flush() }() // the probes already handed over
	for !stopped() {
		now := r.clk.Now()
		at, skipped := now, uint64(0) // unpaced: every probe is due now
		if !cfg.Unpaced {
			at, skipped = sched.Next(now)
		}
		if at > now && !flush() {
			break // sent what was due before waiting for the next slot
		}
		if !warm && sendUntil != 0 && at > sendUntil {
			at = sendUntil // the next slot is past the end: wait for the end only
		}
		for at-now > check && !stopped() {
			now = w.Until(now + check)
		}
		if reason != "" || r.openLoop.halt.Load() {
			break
		}
		if at > now {
			now = w.Until(at)
		}
		if warm && ((cfg.WarmupDuration > 0 && at >= warmUntil) || (cfg.WarmupCount > 0 && seq >= cfg.WarmupCount)) {
			warm = false
			skipped = 0 // slots skipped while warming up are not the measurement's
		}
		if !warm {
			if sendUntil == 0 && cfg.Duration > 0 {
				sendUntil = at + int64(cfg.Duration)
			}
			if cfg.Count > 0 && measured >= cfg.Count {
				reason, end = "count", at
				break
			}
			if sendUntil != 0 && at >= sendUntil {
				reason, end = "duration", sendUntil
				break
			}
		}
		seq++
		key := r.openLoop.session.Load() // a new one after a reconnection
		h.Token, h.Nonce = key.token, key.nonce
		h.Seq, h.T1, h.Flags = seq, now, 0
		if warm {
			h.Flags = wire.FlagWarmup
		}
		if cfg.OneWay {
			h.Flags |= wire.FlagOneWay
		}
		if cfg.NoQuickAck {
			h.Flags |= wire.FlagNoQuickAck
		}
		out, entry := ob.next(), uint16(0)
		if picker != nil {
			entry = uint16(picker.Pick())
			e := &cfg.Workload[entry]
			out = out[:e.Size]
			h.ReplySize, h.HoldMicro = uint32(e.ReplySize), uint32(time.Duration(e.Hold)/time.Microsecond)
		}
		var txID uint32
		if r.stamps != nil {
			h.Flags |= stampsFlag(h.ReplySize, len(out), signer != nil)
			// The probes of a batch take the IDs after the socket's
			// next, in order.
			txID = r.stamps.sock.NextTxID() + uint32(len(ob.msgs))
		}
		h.Seal(out, signer)
		for !r.openLoop.sent.push(sentRecord{seq: seq, sent: now, sched: at, skipped: skipped, size: len(out), entry: entry, gen: key.gen, warm: warm, txID: txID}) {
			// The receiver drains at least every few milliseconds; a
			// full queue means it is starved of CPU.
			runtime.Gosched()
			if stopped() {
				return
			}
		}
		if ob.add(out) && !flush() {
			break
		}
		if !warm {
			measured++
		}
	}
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
		if transport.IsRefused(err) && stopOnRefused {
			return errs + uint64(len(ms)-sent), true, 0
		}
		errs++
		ms = ms[sent+1:]
	}
	return errs, false, 0
}

// meanGap is the mean time between probes of an open-loop run.
func (r *run) meanGap() time.Duration {
	if r.cfg.SendInterval > 0 {
		return r.cfg.SendInterval
	}
	return time.Duration(1e9 / r.cfg.Rate)
}

// drain takes in what the sender sent since the last call.
func (r *run) drain() {
	if e := r.openLoop.errors.Swap(0); e > 0 {
		r.cur.counts.Errors += e
	}
	for {
		rec, ok := r.openLoop.sent.pop()
		if !ok {
			return
		}
		if r.warm && !rec.warm {
			r.endWarmup(rec.seq-1, rec.sched)
		}
		if g := &r.segs[rec.gen]; g.first == 0 {
			g.first = rec.seq // the first probe of a new session
		}
		measured := r.measured(rec.seq)
		if measured {
			r.flushDue(rec.sched) // a probe belongs to the interval of its slot
		}
		if r.cfg.OneWay {
			r.seq = rec.seq // no reply will come: nothing to wait for
		} else {
			r.track(rec.seq, rec.sent, rec.sched, rec.entry)
			if r.stamps != nil {
				r.stamps.mapID(rec.txID, rec.seq)
			}
		}
		if measured {
			r.cur.counts.Sent++
			r.cur.counts.Skipped += rec.skipped
			r.cur.bytesUp += uint64(rec.size)
			r.cur.d[distSendError].Record(rec.sent - rec.sched)
		}
	}
}

// openLoop is what the two goroutines of an open-loop run share. The
// sender writes stop, end and err before it sets done, and the receiver
// reads them after.
type openLoop struct {
	sent    *sentQueue
	done    atomic.Bool   // set by the sender as it returns
	stop    string        // why the sender stopped
	end     int64         // when the sender stopped
	err     error         // the sender's write that stalled
	halt    atomic.Bool   // set by the receiver: the sender stops
	gone    atomic.Bool   // the sender saw the port unreachable
	errors  atomic.Uint64 // write errors the receiver has not counted yet
	wg      sync.WaitGroup
	session atomic.Pointer[sessionKey] // the sender's session
}

func newOpenLoop() *openLoop { return &openLoop{sent: newSentQueue(1 << 16)} }

// takeSent takes in what the open-loop sender sent since the last look,
// and the transmit stamps of the probes that get no reply, which take
// receive buffer room on the socket.
func (r *run) takeSent() {
	r.drain()
	if r.stamps != nil {
		r.drainTx()
	}
}

// senderStopped ends sending once the open-loop sender has stopped, at
// now; an error (the sender found the reflector gone, or a write stalled)
// ends the run.
func (r *run) senderStopped(now int64) error {
	ol := r.openLoop
	if !ol.done.Load() {
		return nil
	}
	r.drain() // what it sent between the last drain and stopping
	if r.warm {
		r.endWarmup(r.seq, now) // stopped while warming up
	}
	r.stopSending(ol.stop)
	if ol.gone.Load() { // only without Reconnect
		return r.gone(nil)
	}
	if ol.err != nil {
		return r.stalled(ol.err)
	}
	return nil
}
