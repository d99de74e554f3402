package stream

import (
	"errors"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/spin"
)

// peer is one accepted connection: its reader's state (read), and the
// queue of replies its writer drains (flush).
type peer struct {
	c        *Conn
	after    func(msg []byte) // called with each message read, or nil
	addr     netip.AddrPort
	src      netip.Prefix
	free     chan struct{} // ReadFrom took the message
	buf      []byte        // the message read, after FrameHeaderLen bytes
	large    bool          // it may send messages of any size (AdmitLarge)
	admitted atomic.Bool   // it is in a session (AdmitSession)
	since    atomic.Int64  // when it came, or left its session (Unix ns): its wait to be admitted
	counted  atomic.Bool   // it holds a place in Listener.conns
	blocking bool          // its reader waits in the kernel (blockPeer); the reader's alone
	spinning bool          // its reader spins (spin); the reader's alone
	session  bool          // counted in the listener's sessions; the reader's alone
	yield    kwait.Yield   // the reader's, while it blocks
	wmu      sync.Mutex    // one write at a time: the reader's and the writer's

	// The queue WriteTo and held replies fill, and a writer goroutine
	// drains, each reply when it is due.
	qmu     sync.Mutex
	queue   queue     // framed replies, by due time
	queued  int       // their bytes
	arrived uint64    // replies queued so far
	spare   [][]byte  // written buffers to reuse
	writing bool      // the writer runs
	stuck   time.Time // when the writer's write began, while it lasts
	dead    bool      // the reader is gone: take nothing more
	// alarm wakes the writer when the first reply is due, precisely
	// (a Go timer would round a short hold up to about a millisecond);
	// an earlier one, or the reader's leaving, wakes it early.
	alarm  *pace.Alarm
	writer sync.WaitGroup
}

// grow returns a buffer of size bytes holding what p.buf holds, taken
// from the memory budget.
func (l *Listener) grow(p *peer, size int) ([]byte, error) {
	if l.lim.Memory.Take(p.src, size-len(p.buf)) != quota.OK {
		return p.buf, ErrNoMemory
	}
	b := make([]byte, size)
	copy(b, p.buf)
	return b, nil
}

// maxBlockingPeers is how many peers at a time read in the kernel, each
// on a thread of its own (Conn.SetBlockingReads), once in a session; the
// others wait in the poller. A measurement needs a handful; a crowd of
// peers does not make a crowd of threads.
const maxBlockingPeers = 4

// spinQuiet is how long a spinning peer's read spins with nothing to read
// before it looks whether another session opened meanwhile (checkSpin):
// far above a ping-pong's gaps (tens of µs), far below the idle timeout.
// Listener.spinQuiet is it but in tests.
const spinQuiet = time.Millisecond

// blockPeer has the reader of p, in a session, spin on a busy-polling
// listener (spin), or, on one that is not, wait in the kernel on its
// locked thread while fewer than maxBlockingPeers do (p.spinning,
// p.blocking say which it does). Only p's reader calls it, and
// unblockPeer, which gives the place back as p leaves its session, is
// taken over or ends.
func (l *Listener) blockPeer(p *peer) {
	if p.blocking || p.spinning || !busySupported {
		return
	}
	if l.busy.Load() {
		// A peer that does not spin waits in the poller, not the
		// kernel: beside a busy listener's spinners volley's server
		// leaves the runtime no processor to spare, and a reader locked
		// to its thread waited for one, on return from the kernel, for
		// up to hundreds of ms (outside tester, with two sessions and
		// one processor for them). In the poller it needs none.
		l.spin(p)
		return
	}
	if l.blockers.Add(1) > maxBlockingPeers {
		l.blockers.Add(-1)
		return
	}
	runtime.LockOSThread()
	p.wmu.Lock() // its writer, if it has one, is not writing meanwhile
	err := p.c.SetBlockingReads(true)
	p.wmu.Unlock()
	if err != nil {
		runtime.UnlockOSThread()
		l.blockers.Add(-1)
		return
	}
	p.blocking = true
}

// unblockPeer puts p's connection back in the poller, unlocks its
// reader's thread and gives its place back, if it had one.
func (l *Listener) unblockPeer(p *peer) error {
	if p.spinning {
		p.spinning = false
		l.spinners.Add(-1)
		return p.c.SetBusyPoll(false)
	}
	if !p.blocking {
		return nil
	}
	p.wmu.Lock()
	err := p.c.SetBlockingReads(false)
	p.wmu.Unlock()
	runtime.UnlockOSThread()
	l.blockers.Add(-1)
	p.blocking = false
	return err
}

// read answers p's messages until p's connection ends.
func (l *Listener) read(p *peer) {
	defer l.drop(p)
	defer func() {
		_ = l.unblockPeer(p)
		l.leaveSession(p)
	}()
	_ = p.c.SetReadDeadline(time.Now().Add(l.lim.HandshakeTimeout))
	grow := func(buf []byte, size int) ([]byte, error) {
		p.buf = buf
		b, err := l.grow(p, size)
		p.buf = b // not the one it outgrew: that is garbage now
		return b, err
	}
	if now := l.readClock.Load(); now != nil {
		p.c.SetReadClock(*now)
	}
	var last time.Time // when the last message of a session came
	for {
		limit := l.lim.HandshakeMessage
		if p.large {
			limit = MaxMessage
		}
		var n int
		var err error
		p.buf, n, err = p.c.ReadFrame(p.buf, limit, grow)
		if err != nil {
			if p.spinning && errors.Is(err, spin.ErrQuiet) {
				l.checkSpin(p)
				continue
			}
			if l.stillIdle(p, err, last) {
				continue // it sent since the deadline was set
			}
			return // the peer left, idled out, or broke the framing or a limit
		}
		now := time.Now()
		if p.after != nil {
			p.after(p.buf[headerLen : headerLen+n])
		}
		h := l.handler.Load()
		if h == nil {
			if !l.handOver(p, n, now, &last) {
				return
			}
			continue
		}
		if !l.answer(p, *h, n, now, &last) {
			return
		}
		l.settle(p, now)
	}
}

// spin has the reader of p spin, on a busy-polling listener where p's is
// the only session (and no other peer spins: one that just left its
// session may not have stopped yet). Busy polling is for one client at a
// time. A spinner holds a processor, and volley's server gives the
// runtime one per busy stream listener (server.Listeners.SetBusyPoll),
// no more: beside a spinner, other sessions' readers, in the kernel or
// the poller, got a processor only when the scheduler preempted it, in
// steps of 10 ms. So with two sessions or more, none spins, and each
// waits in the poller (blockPeer): a session, quiet or not, cannot keep
// the core from the others.
func (l *Listener) spin(p *peer) {
	if l.sessions.Load() != 1 {
		return
	}
	if l.spinners.Add(1) > 1 || p.c.spinFor(l.spinQuiet) != nil {
		l.spinners.Add(-1)
		return
	}
	p.spinning = true
}

// settle has the reader of p, after an answer, wait for the next message
// as it now should: a spinner stops once its session is not the only one
// (checkSpin); a blocking reader gives way to the scheduler now and then;
// a peer in a session waiting in the poller spins, or takes a place in
// the kernel that came free (blockPeer).
func (l *Listener) settle(p *peer, now time.Time) {
	switch {
	case p.spinning:
		l.checkSpin(p)
	case p.blocking:
		p.yield.Maybe(now.UnixNano()) // a message that comes meanwhile waits (one in 5 ms at most)
	case p.admitted.Load() && l.blockers.Load() < maxBlockingPeers:
		l.blockPeer(p)
	}
}

// checkSpin stops p's spin, back to the poller, if another session has
// opened: after each answer (settle), and after spinQuiet with nothing to
// read (a spinner that gets no message would keep the core until its
// idle timeout). A connection that cannot go back to the poller is
// closed: a read or write there would wait until its deadline.
func (l *Listener) checkSpin(p *peer) {
	if l.sessions.Load() > 1 && l.unblockPeer(p) != nil {
		p.c.Close()
	}
}

// joinSession and leaveSession count p's session in l.sessions.
func (l *Listener) joinSession(p *peer) {
	if !p.session {
		p.session = true
		l.sessions.Add(1)
	}
}

func (l *Listener) leaveSession(p *peer) {
	if p.session {
		p.session = false
		l.sessions.Add(-1)
	}
}

// stillIdle reports whether the read of an admitted peer, cut by its
// deadline, is to go on: the peer sent since the deadline was set, and
// gets a new one, IdleTimeout after its last message.
func (l *Listener) stillIdle(p *peer, err error, last time.Time) bool {
	if !p.admitted.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	idle := time.Since(last)
	return idle < l.lim.IdleTimeout && p.c.SetReadDeadline(last.Add(l.lim.IdleTimeout)) == nil
}

// handOver gives p's message of n bytes to ReadFrom, without a Handler,
// and waits until ReadFrom has copied it; false when the listener closed.
func (l *Listener) handOver(p *peer, n int, now time.Time, last *time.Time) bool {
	if !p.admitted.Load() {
		p.large = true
		p.admitted.Store(true)
		_ = p.c.SetReadDeadline(time.Time{})
	}
	*last = now
	select {
	case l.frames <- frame{p: p, n: n}:
	case <-l.closed:
		return false
	}
	select {
	case <-p.free:
	case <-l.closed:
		return false
	}
	return true
}

// answer has h answer p's message of n bytes, moves p's admission on as h
// says, and sends or queues the reply; false when the connection is to
// end.
func (l *Listener) answer(p *peer, h Handler, n int, now time.Time, last *time.Time) bool {
	msg, err := l.makeRoom(p, h, n)
	if err != nil {
		reply := h.Refuse(msg, p.addr, RefusedMemory)
		return reply != nil && p.write(reply, l.lim.SendTimeout) == nil
	}
	reply, hold, admit := h.Handle(msg, p.addr, p.c.ReadAt())
	if admit == AdmitTake {
		l.takeOver(p, h, reply)
		return false // the connection ends with Take
	}
	l.admit(p, admit, now, last)
	switch {
	case reply == nil:
	case hold > 0:
		// Its writer sends it when due, from now (the Handler's
		// receive time is past: a hold is never cut short); one
		// that cannot be queued is the Handler's to count.
		if err := l.enqueue(p, reply, time.Now().Add(hold), true); err != nil {
			h.Drop(err)
		}
	default:
		return p.write(reply, l.lim.SendTimeout) == nil
	}
	return true
}

// takeOver hands p's connection over to h (see Taker) after sending
// reply, and returns when h is done with it.
func (l *Listener) takeOver(p *peer, h Handler, reply []byte) {
	// The Handler's now: kept, never evicted, and no reply of the
	// listener's will follow the Handler's bytes.
	p.admitted.Store(true)
	p.qmu.Lock()
	p.dead = true
	p.qmu.Unlock()
	p.alarm.Wake()
	p.writer.Wait()
	var err error
	if reply != nil {
		err = p.write(reply, l.lim.SendTimeout)
	}
	t, ok := h.(Taker)
	if !ok {
		return
	}
	if err != nil {
		p.c.Close()
	}
	_ = p.c.SetReadDeadline(time.Time{})
	l.leaveSession(p) // the Taker's now: another session may spin
	if l.unblockPeer(p) != nil {
		// Out of the poller, the Taker's reads would wait for ever.
		p.c.Close()
		return
	}
	t.Take(p.c.Conn, p.addr)
}

// makeRoom returns p's message of n bytes, in a buffer with the room its
// reply needs (Handler.Room, asked of admitted peers only) zeroed after
// it; ErrNoMemory when the budget cannot hold that room.
func (l *Listener) makeRoom(p *peer, h Handler, n int) ([]byte, error) {
	msg := p.buf[headerLen : headerLen+n]
	if !p.large {
		return msg, nil
	}
	room := h.Room(msg)
	if room <= n {
		return msg, nil
	}
	if headerLen+room > len(p.buf) {
		b, err := l.grow(p, headerLen+room)
		if err != nil {
			return msg, err
		}
		p.buf = b
		msg = p.buf[headerLen : headerLen+n]
	}
	// Never echo what an earlier message left there.
	clear(p.buf[headerLen+n : headerLen+room])
	return msg, nil
}

// admit moves p's admission on as the Handler said of its message that
// came at now.
func (l *Listener) admit(p *peer, admit Admission, now time.Time, last *time.Time) {
	if admit >= AdmitLarge {
		p.large = true
	}
	switch {
	case admit == AdmitSession:
		// Only a session's messages keep a connection: a Hello a
		// second, or probes of a dead session, do not.
		*last = now
		if !p.admitted.Load() {
			p.admitted.Store(true)
			l.joinSession(p)
			_ = p.c.SetReadDeadline(now.Add(l.lim.IdleTimeout))
		}
	case p.admitted.Load():
		// Out of its session (it closed it, or lost it): as a new
		// connection, it has the handshake timeout to open another,
		// and makes room for others meanwhile, its place to wait in
		// the kernel too.
		_ = l.unblockPeer(p)
		l.leaveSession(p)
		p.admitted.Store(false)
		p.since.Store(now.UnixNano())
		_ = p.c.SetReadDeadline(now.Add(l.lim.HandshakeTimeout))
	}
}

// write sends reply on p's connection: in place when the Handler built it
// where the message was read (the usual case), copied otherwise.
func (p *peer) write(reply []byte, stall time.Duration) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if len(reply) > 0 && len(p.buf) > headerLen && &reply[0] == &p.buf[headerLen] {
		return p.c.WriteFrame(p.buf, len(reply), stall)
	}
	f := make([]byte, headerLen+len(reply))
	copy(f[headerLen:], reply)
	return p.c.WriteFrame(f, len(reply), stall)
}

// drop closes p's connection once its reader is done, waits for its
// writer, and gives back what p took.
func (l *Listener) drop(p *peer) {
	l.mu.Lock()
	if l.peers[p.addr] == p {
		delete(l.peers, p.addr)
	}
	l.mu.Unlock()
	p.qmu.Lock()
	p.dead = true
	p.qmu.Unlock()
	p.alarm.Wake() // a writer waiting for a held reply
	p.c.Close()
	p.writer.Wait()
	taken := len(p.buf)
	for _, q := range p.queue {
		taken += cap(q.buf)
	}
	for _, b := range p.spare {
		taken += cap(b)
	}
	p.buf, p.queue, p.spare = nil, nil, nil
	l.lim.Memory.Give(p.src, taken)
	if p.counted.CompareAndSwap(true, false) {
		l.conns.Give(p.src)
	}
	if h := l.handler.Load(); h != nil {
		(*h).Gone(p.addr)
	}
}
