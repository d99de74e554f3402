package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/deadline"
)

// Listener is a reflector's stream socket: it accepts connections and
// hands their messages to ReadFrom one at a time, each from its
// connection's address; WriteTo answers on the connection of that
// address. Each connection's reader waits until ReadFrom took its message
// before reading the next, so a connection's messages stay in order and
// nothing is buffered beyond one message per connection.
type Listener struct {
	ln        net.Listener
	maxPeers  int
	afterRead func(net.Conn) func(msg []byte)
	frames    chan frame
	closed    chan struct{}
	once      sync.Once
	wg        sync.WaitGroup

	mu     sync.Mutex
	peers  map[netip.AddrPort]*peer
	nextID uint64

	deadline *deadline.Deadline

	handler atomic.Pointer[Handler]
	busy    atomic.Bool // connections' reads spin (SetBusyPoll)
}

// Handler answers a message from a connection: it returns the reply to
// send on it, or nil. It may build the reply in msg's memory, up to its
// capacity (MaxMessage+1). It runs on the connection's goroutine, so it
// must be safe for concurrent use.
type Handler = func(msg []byte, from netip.AddrPort) []byte

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
	wmu   sync.Mutex // a connection's replies come from its reader and from held replies
	c     *Conn
	after func(msg []byte) // called with each message read, or nil
	addr  netip.AddrPort
	free  chan struct{} // ReadFrom took the message
	buf   []byte
}

type frame struct {
	p *peer
	n int
}

// Listen listens on network ("tcp" or "unix") at addr. It takes at most
// maxPeers connections at once (0: no limit); more are closed as they come.
func Listen(network, addr string, maxPeers int) (*Listener, error) {
	return ListenWith(context.Background(), &net.ListenConfig{}, network, addr, maxPeers, nil)
}

// ListenWith is Listen through lc (its socket options, which accepted
// connections inherit). afterRead, when not nil, is called with each
// accepted connection and returns what to call with each message read
// from it (a reflector's TCP_QUICKACK).
func ListenWith(ctx context.Context, lc *net.ListenConfig, network, addr string, maxPeers int, afterRead func(net.Conn) func(msg []byte)) (*Listener, error) {
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, maxPeers, afterRead), nil
}

// Serve takes the connections ln accepts; see Listen.
func Serve(ln net.Listener, maxPeers int) *Listener { return serve(ln, maxPeers, nil) }

func serve(ln net.Listener, maxPeers int, afterRead func(net.Conn) func(msg []byte)) *Listener {
	l := &Listener{ln: ln, maxPeers: maxPeers, afterRead: afterRead, frames: make(chan frame), closed: make(chan struct{}),
		peers: make(map[netip.AddrPort]*peer), deadline: deadline.New()}
	l.wg.Go(l.accept)
	return l
}

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
		if l.maxPeers > 0 && len(l.peers) >= l.maxPeers {
			l.mu.Unlock()
			c.Close()
			continue
		}
		p := &peer{c: NewConn(c), addr: l.peerAddr(c), free: make(chan struct{})}
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

// peerAddr names c: its TCP address, or one standing for a Unix
// connection. l.mu is held.
func (l *Listener) peerAddr(c net.Conn) netip.AddrPort {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	l.nextID++
	var a [16]byte
	a[0], a[1], a[2] = 0xfd, 0x76, 0x6c // fd76:6c00::/32, "vl"
	binary.BigEndian.PutUint64(a[8:], l.nextID)
	return netip.AddrPortFrom(netip.AddrFrom16(a), 0)
}

// read hands p's messages over until p's connection ends.
func (l *Listener) read(p *peer) {
	defer func() {
		l.mu.Lock()
		if l.peers[p.addr] == p {
			delete(l.peers, p.addr)
		}
		l.mu.Unlock()
		p.c.Close()
	}()
	p.buf = make([]byte, 4096)
	for {
		var n int
		var err error
		p.buf, n, err = p.c.ReadGrow(p.buf)
		if err != nil {
			return // the peer left, or broke the framing
		}
		if p.after != nil {
			p.after(p.buf[:n])
		}
		if h := l.handler.Load(); h != nil {
			if cap(p.buf) <= MaxMessage {
				// Room for a reply of any size, built in place.
				b := make([]byte, len(p.buf), MaxMessage+1)
				copy(b, p.buf[:n])
				p.buf = b
			}
			if reply := (*h)(p.buf[:n], p.addr); reply != nil {
				if _, err := p.write(reply); err != nil {
					return
				}
			}
			continue
		}
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
	}
}

// ReadFrom copies the next message of any connection into b (cut to b)
// and returns its length and the connection's address.
func (l *Listener) ReadFrom(b []byte) (int, netip.AddrPort, error) {
	f, o := deadline.Wait(l.deadline, l.frames, l.closed)
	switch o {
	case deadline.Expired:
		return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
	case deadline.Closed:
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	n := copy(b, f.p.buf[:f.n])
	f.p.free <- struct{}{}
	return n, f.p.addr, nil
}

// WriteTo sends b as one message on the connection of addr.
func (l *Listener) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	l.mu.Lock()
	p := l.peers[addr]
	l.mu.Unlock()
	if p == nil {
		return 0, net.ErrClosed // the connection ended
	}
	return p.write(b)
}

func (p *peer) write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.c.Write(b)
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
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}
