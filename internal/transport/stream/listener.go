package stream

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/deadline"
	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/quota"
)

// Listener is a reflector's stream socket. It accepts connections, each
// read on a goroutine of its own, and answers their messages with the
// Handler set by SetHandler on that goroutine; WriteTo answers on the
// connection of an address from another goroutine (a held reply), through
// a bounded queue that a writer of the connection's drains. Without a
// Handler, ReadFrom hands the messages over one at a time.
//
// No peer can stall another: nothing is written under a lock another
// connection needs, every write has a deadline (Limits.SendTimeout), and
// a peer that does not read loses its queued replies (ErrSlowReader).
// Until the Handler admits a peer (its handshake is done), the peer may
// send only small messages and must finish within Limits.HandshakeTimeout;
// after, a connection idle for Limits.IdleTimeout is closed. Buffers grow
// with the bytes a peer sends, within Limits.Memory, and connections are
// capped in all and per source (quota.Source): a refused peer is told why.
type Listener struct {
	ln        net.Listener
	lim       Limits
	afterRead func(net.Conn) func(msg []byte)
	frames    chan frame
	closed    chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
	conns     *quota.Counter

	mu       sync.Mutex
	peers    map[netip.AddrPort]*peer
	refusing map[net.Conn]time.Time // connections being told why they are refused, since when
	nextID   uint64

	deadline *deadline.Deadline

	handler atomic.Pointer[Handler]
	busy    atomic.Bool // connections' reads spin (SetBusyPoll)
}

// Limits bound what a listener's peers may take. The zero value of a
// field takes its default.
type Limits struct {
	// MaxConns bounds the connections open at once, and
	// MaxConnsPerSource those from one source (defaults 1000 and 64).
	MaxConns, MaxConnsPerSource int
	// HandshakeMessage is the largest message a peer may send before it
	// is admitted (default 1024 bytes).
	HandshakeMessage int
	// HandshakeTimeout closes a connection not admitted this long after
	// it was accepted (default 5s); IdleTimeout one that sent nothing
	// for this long (default 30s).
	HandshakeTimeout, IdleTimeout time.Duration
	// SendTimeout closes a connection whose write made no progress for
	// this long: its peer does not read (default 2s).
	SendTimeout time.Duration
	// Memory is the budget buffers and queued replies are taken from
	// (nil: no limit).
	Memory *quota.Memory
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxConns, 1000)
	def(&l.MaxConnsPerSource, 64)
	def(&l.HandshakeMessage, 1024)
	defDur(&l.HandshakeTimeout, 5*time.Second)
	defDur(&l.IdleTimeout, 30*time.Second)
	defDur(&l.SendTimeout, 2*time.Second)
	return l
}

// Errors of WriteTo, and of a connection closed for its peer's doing.
var (
	ErrSlowReader = errors.New("stream: the peer does not read its replies")
	ErrNoMemory   = errors.New("stream: the memory budget is spent")
)

// Refusal says why a listener refuses a connection or a message.
type Refusal int

// The reasons for a refusal.
const (
	RefusedConns       Refusal = iota + 1 // as many connections as MaxConns
	RefusedSourceConns                    // as many from the peer's source as MaxConnsPerSource
	RefusedMemory                         // the memory budget cannot hold the reply asked for
)

// Admission says how far a Handler lets a peer in.
type Admission int

// The steps of a peer's admission. Until AdmitLarge, a peer may send only
// Limits.HandshakeMessage bytes at a time; until AdmitSession, it must get
// there within Limits.HandshakeTimeout and may be closed to make room for
// another (see Listener).
const (
	AdmitNone    Admission = iota // nothing shown yet
	AdmitLarge                    // its handshake is done: messages of any size
	AdmitSession                  // it is in a session: idle timeout, and kept
)

// Handler answers the messages of a listener's connections, each on its
// connection's goroutine, so it must be safe for concurrent use.
type Handler interface {
	// Handle answers msg from the peer at from: it returns the reply
	// (or nil), which it may build in msg's memory up to its capacity,
	// how long to hold it before it is sent (then Send is called as it
	// goes), and how far the peer is admitted.
	Handle(msg []byte, from netip.AddrPort) (reply []byte, hold time.Duration, admit Admission)
	// Send is called with a held reply (in the listener's memory) just
	// before it is written, on the connection's writer; Drop with why a
	// held reply was not kept (ErrSlowReader, ErrNoMemory).
	Send(reply []byte, to netip.AddrPort)
	Drop(why error)
	// Gone says the connection of from has closed: its sessions cannot
	// go on (another connection has another address).
	Gone(from netip.AddrPort)
	// Room returns the capacity the reply to msg needs, when that is
	// more than msg's length (0 otherwise). It is asked of admitted
	// peers' messages only; the listener zeroes that room.
	Room(msg []byte) int
	// Refuse returns the answer to msg, from a peer refused for why (or
	// nil): the first message of a refused connection, or a message whose
	// reply the budget cannot hold.
	Refuse(msg []byte, from netip.AddrPort, why Refusal) []byte
}

// SetBusyPoll makes every connection accepted from now on read by
// spinning instead of sleeping in the kernel: a core for each connection,
// for the lowest latency (use it with one client at a time).
func (l *Listener) SetBusyPoll(on bool) error {
	if on && !busySupported {
		return errBusyUnsupported
	}
	l.busy.Store(on)
	return nil
}

// SetHandler makes each connection answer its messages on its own
// goroutine with h, instead of handing them to ReadFrom: one goroutine
// wake-up less per message. ReadFrom then only waits for its deadline.
func (l *Listener) SetHandler(h Handler) { l.handler.Store(&h) }

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

// streamSpinFor is how long a connection's writer spins before a held
// reply is due: next to nothing (see Accept).
const streamSpinFor = time.Nanosecond

// holdClock is the clock the writers wait for held replies on.
var holdClock = clock.NewSystem()

// queued is a framed reply waiting for its writer.
type queued struct {
	due  time.Time
	n    uint64 // its place in arrival order
	buf  []byte
	held bool // Handler.Send is to stamp it
}

// queue is a min-heap of replies by due time (container/heap), in
// arrival order among equals.
type queue []queued

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].due.Before(q[j].due) || (q[i].due.Equal(q[j].due) && q[i].n < q[j].n)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = queued{}
	*q = old[:len(old)-1]
	return e
}

type frame struct {
	p *peer
	n int
}

// Listen listens on network ("tcp" or "unix") at addr with default limits.
func Listen(network, addr string) (*Listener, error) {
	return ListenWith(context.Background(), &net.ListenConfig{}, network, addr, Limits{}, nil)
}

// ListenWith is Listen through lc (its socket options, which accepted
// connections inherit), within lim. afterRead, when not nil, is called
// with each accepted connection and returns what to call with each
// message read from it (a reflector's TCP_QUICKACK).
func ListenWith(ctx context.Context, lc *net.ListenConfig, network, addr string, lim Limits, afterRead func(net.Conn) func(msg []byte)) (*Listener, error) {
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, lim, afterRead), nil
}

// Serve takes the connections ln accepts, within lim; see Listen.
func Serve(ln net.Listener, lim Limits) *Listener { return serve(ln, lim, nil) }

func serve(ln net.Listener, lim Limits, afterRead func(net.Conn) func(msg []byte)) *Listener {
	lim = lim.withDefaults()
	l := &Listener{ln: ln, lim: lim, afterRead: afterRead, frames: make(chan frame), closed: make(chan struct{}),
		conns: quota.NewCounter(lim.MaxConns, lim.MaxConnsPerSource),
		peers: make(map[netip.AddrPort]*peer), refusing: make(map[net.Conn]time.Time), deadline: deadline.New()}
	l.wg.Go(l.accept)
	return l
}

// maxRefusing bounds the refused connections being told why at once; the
// rest are closed at once.
const maxRefusing = 64

func (l *Listener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors: let some go
			continue
		}
		l.mu.Lock()
		addr := l.peerAddr(c)
		src := quota.Source(addr)
		if why := l.place(src); why != 0 {
			l.refuse(c, addr, why)
			l.mu.Unlock()
			continue
		}
		p := &peer{c: NewConn(c), addr: addr, src: src, free: make(chan struct{}), alarm: pace.NewAlarm(holdClock)}
		// Each connection's writer waits on its own alarm: one that spun
		// before each held reply would let a peer with many connections
		// keep every CPU spinning. The kernel sleep alone (timer slack
		// 1ns) ends within some tens of µs of the time.
		p.alarm.SpinFor = streamSpinFor
		p.since.Store(time.Now().UnixNano())
		p.counted.Store(true)
		if l.busy.Load() {
			_ = p.c.SetBusyPoll(true) // checked by SetBusyPoll
		}
		if l.afterRead != nil {
			p.after = l.afterRead(c)
		}
		l.peers[p.addr] = p
		l.mu.Unlock()
		l.wg.Go(func() { l.read(p) })
	}
}

// place takes a place for a connection from src, making room at a cap by
// closing the connection that has waited longest without finishing its
// handshake (of src, at src's cap): a legitimate client's handshake takes
// a round trip, so idle or slow connections cannot keep it out. It
// returns why there is no place. l.mu is held.
func (l *Listener) place(src netip.Prefix) Refusal {
	for {
		switch l.conns.Take(src) {
		case quota.OK:
			return 0
		case quota.Total:
			if !l.evict(netip.Prefix{}, 0) {
				return RefusedConns
			}
		case quota.PerSource:
			// A source competing with itself (a client's -P flows all
			// connecting at once) spares its connections' first second.
			if !l.evict(src, evictAge) {
				return RefusedSourceConns
			}
		}
	}
}

// evictAge is how long a connection waits without a session before a
// newcomer of its own source may close it to make room: a client's
// handshake takes a round trip, so a sibling that came at the same moment
// is not taken for idle. At the total cap any source's oldest goes,
// however young: many sources may be refreshing their connections.
const evictAge = time.Second

// evict closes the connection of src (any, when src is not valid) that
// has waited longest, and at least age, without being admitted, and gives
// its place back at once. It reports whether it found one. l.mu is held.
func (l *Listener) evict(src netip.Prefix, age time.Duration) bool {
	var old *peer
	young := time.Now().Add(-age).UnixNano()
	for _, p := range l.peers {
		if !p.admitted.Load() && p.since.Load() <= young && (!src.IsValid() || p.src == src) && (old == nil || p.since.Load() < old.since.Load()) {
			old = p
		}
	}
	if old == nil {
		return false
	}
	delete(l.peers, old.addr)
	if old.counted.CompareAndSwap(true, false) {
		l.conns.Give(old.src)
	}
	old.c.Close() // its reader ends, and gives back the rest
	return true
}

// refuse tells the peer of c why it is refused: it reads the peer's first
// message (a Hello) and answers it as the Handler says, within a second.
// l.mu is held.
func (l *Listener) refuse(c net.Conn, addr netip.AddrPort, why Refusal) {
	h := l.handler.Load()
	if h == nil {
		c.Close()
		return
	}
	if len(l.refusing) >= maxRefusing {
		// Those that sent nothing yet make room: the newest is likelier
		// a client that will.
		var old net.Conn
		var at time.Time
		for rc, since := range l.refusing {
			if old == nil || since.Before(at) {
				old, at = rc, since
			}
		}
		delete(l.refusing, old)
		old.Close()
	}
	l.refusing[c] = time.Now()
	l.wg.Go(func() {
		defer func() {
			l.mu.Lock()
			delete(l.refusing, c)
			l.mu.Unlock()
			c.Close()
		}()
		if c.SetDeadline(time.Now().Add(time.Second)) != nil {
			return
		}
		fc := NewConn(c)
		buf, n, err := fc.ReadFrame(nil, l.lim.HandshakeMessage, func(buf []byte, size int) ([]byte, error) {
			return append(buf, make([]byte, size-len(buf))...), nil // within HandshakeMessage
		})
		if err != nil {
			return
		}
		if reply := (*h).Refuse(buf[headerLen:headerLen+n], addr, why); reply != nil {
			_, _ = fc.Write(reply)
		}
	})
}

// peerAddr names c: its TCP address, or one standing for a Unix
// connection, fd76:6c00:UUUU:UUUU::N with the peer's user ID U (so that
// its /64 is its source) and a number N of the listener's. l.mu is held.
func (l *Listener) peerAddr(c net.Conn) netip.AddrPort {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	l.nextID++
	var a [16]byte
	a[0], a[1], a[2] = 0xfd, 0x76, 0x6c // fd76:6c00::/32, "vl"
	binary.BigEndian.PutUint32(a[4:], peerUID(c))
	binary.BigEndian.PutUint64(a[8:], l.nextID)
	return netip.AddrPortFrom(netip.AddrFrom16(a), 0)
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

// read answers p's messages until p's connection ends.
func (l *Listener) read(p *peer) {
	defer l.drop(p)
	_ = p.c.SetReadDeadline(time.Now().Add(l.lim.HandshakeTimeout))
	grow := func(buf []byte, size int) ([]byte, error) {
		p.buf = buf
		b, err := l.grow(p, size)
		p.buf = b // not the one it outgrew: that is garbage now
		return b, err
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
			if p.admitted.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
				if idle := time.Since(last); idle < l.lim.IdleTimeout && p.c.SetReadDeadline(last.Add(l.lim.IdleTimeout)) == nil {
					continue // it sent since the deadline was set
				}
			}
			return // the peer left, idled out, or broke the framing or a limit
		}
		now := time.Now()
		msg := p.buf[headerLen : headerLen+n]
		if p.after != nil {
			p.after(msg)
		}
		h := l.handler.Load()
		if h == nil {
			if !p.admitted.Load() {
				p.large = true
				p.admitted.Store(true)
				_ = p.c.SetReadDeadline(time.Time{})
			}
			last = now
			select {
			case l.frames <- frame{p: p, n: n}:
			case <-l.closed:
				return
			}
			select {
			case <-p.free:
			case <-l.closed:
				return
			}
			continue
		}
		if p.large {
			if room := (*h).Room(msg); room > n {
				if headerLen+room > len(p.buf) {
					b, err := l.grow(p, headerLen+room)
					if err != nil {
						if reply := (*h).Refuse(msg, p.addr, RefusedMemory); reply == nil || p.write(reply, l.lim.SendTimeout) != nil {
							return
						}
						continue
					}
					p.buf = b
					msg = p.buf[headerLen : headerLen+n]
				}
				// Never echo what an earlier message left there.
				clear(p.buf[headerLen+n : headerLen+room])
			}
		}
		reply, hold, admit := (*h).Handle(msg, p.addr)
		if admit >= AdmitLarge {
			p.large = true
		}
		switch {
		case admit == AdmitSession:
			// Only a session's messages keep a connection: a Hello a
			// second, or probes of a dead session, do not.
			last = now
			if !p.admitted.Load() {
				p.admitted.Store(true)
				_ = p.c.SetReadDeadline(last.Add(l.lim.IdleTimeout))
			}
		case p.admitted.Load():
			// Out of its session (it closed it, or lost it): as a new
			// connection, it has the handshake timeout to open another,
			// and makes room for others meanwhile.
			p.admitted.Store(false)
			p.since.Store(now.UnixNano())
			_ = p.c.SetReadDeadline(now.Add(l.lim.HandshakeTimeout))
		}
		switch {
		case reply == nil:
		case hold > 0:
			// Its writer sends it when due, from now (the Handler's
			// receive time is past: a hold is never cut short); one
			// that cannot be queued is the Handler's to count.
			if err := l.enqueue(p, reply, time.Now().Add(hold), true); err != nil {
				(*h).Drop(err)
			}
		default:
			if p.write(reply, l.lim.SendTimeout) != nil {
				return
			}
		}
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

// ReadFrom copies the next message of any connection into b (cut to b)
// and returns its length and the connection's address. With a Handler
// set, it only waits for its deadline or Close.
func (l *Listener) ReadFrom(b []byte) (int, netip.AddrPort, error) {
	f, o := deadline.Wait(l.deadline, l.frames, l.closed)
	switch o {
	case deadline.Expired:
		return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
	case deadline.Closed:
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	n := copy(b, f.p.buf[headerLen:headerLen+f.n])
	f.p.free <- struct{}{}
	return n, f.p.addr, nil
}

// WriteTo sends b as one message on the connection of addr. It does not
// wait for the write: b is copied to the connection's queue, and a writer
// sends it. A peer whose queue holds Limits.QueueBytes already is not
// reading: ErrSlowReader; a copy the budget cannot hold: ErrNoMemory.
func (l *Listener) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	l.mu.Lock()
	p := l.peers[addr]
	l.mu.Unlock()
	if p == nil {
		return 0, net.ErrClosed // the connection ended
	}
	if err := l.enqueue(p, b, time.Time{}, false); err != nil {
		return 0, err
	}
	return len(b), nil
}

// maxSpare bounds the written buffers a connection keeps for reuse.
const maxSpare = 4

// enqueue copies b into p's queue, to be sent at due (at once when zero);
// a held reply is given to Handler.Send as it goes.
func (l *Listener) enqueue(p *peer, b []byte, due time.Time, held bool) error {
	if len(b) > MaxMessage {
		return ErrTooLarge
	}
	p.qmu.Lock()
	defer p.qmu.Unlock()
	switch {
	case p.dead:
		return net.ErrClosed
	case p.queued > 0 && !p.stuck.IsZero() && time.Since(p.stuck) > l.lim.SendTimeout/4:
		// A write to it has made no progress for a while: it does not
		// read. (Replies waiting out their holds are bounded by the
		// memory budget.)
		return ErrSlowReader
	}
	need := headerLen + len(b)
	var f []byte
	for i, s := range p.spare {
		if cap(s) >= need {
			f = s[:need]
			p.spare = append(p.spare[:i], p.spare[i+1:]...)
			break
		}
	}
	if f == nil {
		if l.lim.Memory.Take(p.src, need) != quota.OK {
			return ErrNoMemory
		}
		f = make([]byte, need)
	}
	copy(f[headerLen:], b)
	p.arrived++
	heap.Push(&p.queue, queued{due: due, n: p.arrived, buf: f, held: held})
	p.queued += len(b)
	if !p.writing {
		p.writing = true
		p.writer.Go(func() { l.flush(p) })
	} else if p.queue[0].n == p.arrived {
		p.alarm.Wake() // it waits for a later one
	}
	return nil
}

// flush writes p's queue, each reply when it is due, until the queue is
// empty, p's reader is gone, or the connection fails (then it closes it,
// and the reader ends).
func (l *Listener) flush(p *peer) {
	for {
		p.qmu.Lock()
		if len(p.queue) == 0 || p.dead {
			p.writing = false
			p.qmu.Unlock()
			return
		}
		if wait := time.Until(p.queue[0].due); wait > 0 {
			p.qmu.Unlock()
			// Until the first is due, or an earlier one came, or the
			// reader left.
			p.alarm.Until(holdClock.Now() + int64(wait))
			continue
		}
		q := heap.Pop(&p.queue).(queued)
		p.stuck = time.Now()
		p.qmu.Unlock()
		f := q.buf
		if q.held {
			if h := l.handler.Load(); h != nil {
				(*h).Send(f[headerLen:], p.addr)
			}
		}
		p.wmu.Lock()
		err := p.c.WriteFrame(f, len(f)-headerLen, l.lim.SendTimeout)
		p.wmu.Unlock()
		p.qmu.Lock()
		p.stuck = time.Time{}
		p.queued -= len(f) - headerLen
		if len(p.spare) < maxSpare && !p.dead {
			p.spare = append(p.spare, f)
		} else {
			l.lim.Memory.Give(p.src, cap(f))
		}
		p.qmu.Unlock()
		if err != nil {
			p.c.Close()
			p.qmu.Lock()
			p.writing = false
			p.qmu.Unlock()
			return
		}
	}
}

// SetReadDeadline sets the deadline for ReadFrom.
func (l *Listener) SetReadDeadline(t time.Time) error {
	l.deadline.Set(t)
	return nil
}

// LocalAddr returns the listening address.
func (l *Listener) LocalAddr() net.Addr { return l.ln.Addr() }

// MaxMessage returns the largest message the listener carries.
func (l *Listener) MaxMessage() int { return MaxMessage }

// Close stops listening and closes every connection.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.closed)
		err = l.ln.Close()
		l.mu.Lock()
		for _, p := range l.peers {
			p.c.Close()
		}
		for c := range l.refusing {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}
