package stream

import (
	"context"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/deadline"
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

	handler   atomic.Pointer[Handler]
	readClock atomic.Pointer[func() int64] // SetReadClock's, or nil
	busy      atomic.Bool                  // connections' reads spin (SetBusyPoll)
	// blockers is how many peers read in the kernel (blockPeer), at most
	// maxBlockingPeers; spinners how many spin (spin), at most 1.
	blockers  atomic.Int32
	spinners  atomic.Int32
	sessions  atomic.Int32  // peers in a session, answered by the Handler
	spinQuiet time.Duration // the const spinQuiet, but in tests
}

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
	// AdmitTake hands the connection over to the Handler, which must be
	// a Taker: after the reply, it carries what the Handler makes of it
	// (a load stream's raw bytes).
	AdmitTake
)

// Taker is a Handler that can take a connection over. When Handle
// returns AdmitTake, the listener drops the peer's queued replies, sends
// the reply, stops reading messages from the connection, and calls Take
// with the connection (its socket, unframed) on the connection's own
// goroutine; it closes the connection when Take returns. Take is called
// for every AdmitTake, even when the reply could not be sent (the
// connection is closed then, and Take's first read or write fails), so
// that it can give back what Handle took. Meanwhile the connection keeps
// its place in the listener's limits (Limits.MaxConns and
// MaxConnsPerSource), and the listener neither evicts it nor times it
// out: Take sets every deadline of its own. Bytes the peer sent after its
// last message, before the reply, may be lost.
type Taker interface {
	Take(c net.Conn, from netip.AddrPort)
}

// Handler answers the messages of a listener's connections, each on its
// connection's goroutine, so it must be safe for concurrent use.
type Handler interface {
	// Handle answers msg from the peer at from, which came at readAt
	// (by the clock SetReadClock gave the listener, as the read that
	// brought its last byte returned; 0: no clock): it returns the reply
	// (or nil), which it may build in msg's memory up to its capacity,
	// how long to hold it before it is sent (then Send is called as it
	// goes), and how far the peer is admitted.
	Handle(msg []byte, from netip.AddrPort, readAt int64) (reply []byte, hold time.Duration, admit Admission)
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

// SetBusyPoll makes the connection in a session read by spinning instead
// of sleeping in the kernel, for the lowest latency, while its session is
// the only one (spin): busy polling is for one client at a time. With more
// sessions they wait in the poller, as do connections that have not
// opened a session, and all of them without a Handler: a connection that
// says nothing costs no CPU. (Every accepted connection spun once: ten
// silent ones cut a client's round trips on 2 cores from 43k to 4k a
// second.)
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

// SetReadClock has each connection accepted from now on note when each
// message came, by now(), as the read that brought its last byte returns
// (Conn.SetReadClock), for Handler.Handle.
func (l *Listener) SetReadClock(now func() int64) { l.readClock.Store(&now) }

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
		peers: make(map[netip.AddrPort]*peer), refusing: make(map[net.Conn]time.Time), deadline: deadline.New(),
		spinQuiet: spinQuiet}
	l.wg.Go(l.accept)
	return l
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
		// Every read waiting in the kernel is woken first, so that the
		// closes, each of which waits for its read to return, overlap.
		for _, p := range l.peers {
			p.c.block.Closing()
		}
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
