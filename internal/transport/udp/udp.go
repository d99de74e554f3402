// Package udp is volley's UDP transport: a connected socket for the client
// and a listening socket for the reflector, on the Go netpoller or, for
// blocking reads and busy polling, out of it, with calls that do not
// allocate per packet.
package udp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// BufferSize is the socket buffer volley asks for on each side, so that
// bursts (an open-loop sender catching up, many clients at once) are not
// dropped by volley's own sockets. The kernel grants at most its
// net.core.rmem_max and wmem_max; asking for more is not an error.
const BufferSize = 4 << 20

// MaxMessage is the largest message volley sends over UDP (a datagram
// holds up to 65,507 bytes over IPv4).
const MaxMessage = 65000

// Conn is the client's UDP socket, connected to the reflector.
type Conn struct {
	*net.UDPConn
	b     *batcher    // nil where batches are one datagram at a time
	busy  bool        // reads spin (SetBusyPoll)
	block atomic.Bool // reads wait in the kernel (SetBlockingReads)
	one   [1]Message
	// mark: SetReadClock's clock, for reads in the poller; at: when the
	// last Read's datagram came, whichever way it read (ReadAt).
	mark clock.ReadMark
	at   int64
}

// Dial opens a UDP socket connected to addr ("host:port"). A connected
// socket receives only the reflector's datagrams and reports ICMP port
// unreachable as an error on the next read or write.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	return DialWith(ctx, &net.Dialer{}, "udp", addr, true)
}

// DialWith is Dial through d (its socket options and local address), on
// network "udp", "udp4" or "udp6"; buffers asks for BufferSize each way.
func DialWith(ctx context.Context, d *net.Dialer, network, addr string, buffers bool) (*Conn, error) {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	uc := c.(*net.UDPConn)
	if buffers {
		setBuffers(uc)
	}
	b, _ := newBatcher(uc, true) // without it, batches of one
	return &Conn{UDPConn: uc, b: b}, nil
}

// readOne is ReadBatch one datagram at a time.
func (c *Conn) readOne(ms []Message) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	n, err := c.Read(ms[0].Buf)
	if err != nil {
		return 0, err
	}
	ms[0].N = n
	return 1, nil
}

// writeOne is WriteBatch one datagram at a time.
func (c *Conn) writeOne(ms []Message) (int, error) {
	for i := range ms {
		if _, err := c.Write(ms[i].Buf[:ms[i].N]); err != nil {
			return i, err
		}
	}
	return len(ms), nil
}

// setBuffers asks for BufferSize each way; a smaller grant is fine.
func setBuffers(c *net.UDPConn) {
	_ = c.SetReadBuffer(BufferSize)
	_ = c.SetWriteBuffer(BufferSize)
}

// PacketConn is a reflector's UDP socket.
type PacketConn struct {
	c     *net.UDPConn
	b     *batcher    // nil where batches are one datagram at a time
	busy  bool        // reads spin (SetBusyPoll)
	block atomic.Bool // reads wait in the kernel (SetBlockingReads)
	one   [1]Message
}

func newPacketConn(c *net.UDPConn) *PacketConn {
	setBuffers(c)
	b, _ := newBatcher(c, false) // without it, batches of one
	return &PacketConn{c: c, b: b}
}

// readOne is ReadBatch one datagram at a time.
func (p *PacketConn) readOne(ms []Message) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	n, addr, err := p.c.ReadFromUDPAddrPort(ms[0].Buf)
	if err != nil {
		return 0, err
	}
	ms[0].N, ms[0].Addr = n, addr
	return 1, nil
}

// writeOne is WriteBatch one datagram at a time.
func (p *PacketConn) writeOne(ms []Message) (int, error) {
	for i := range ms {
		if _, err := p.WriteTo(ms[i].Buf[:ms[i].N], ms[i].Addr); err != nil {
			return i, err
		}
	}
	return len(ms), nil
}

// Listen opens a UDP socket on addr (":7766", "127.0.0.1:0", "[::1]:0").
// An empty host listens on every address, IPv4 and IPv6.
func Listen(addr string) (*PacketConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", addr, err)
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	return newPacketConn(c), nil
}

// ListenSharedWith opens n sockets on the same addr with SO_REUSEPORT, for
// n reflector workers: the kernel gives each peer address to one of them.
// With port 0 the first socket picks the port and the others join it.
// control applies socket options to each (nil: none), and buffers asks
// for volley's buffers.
// With n = 1 the socket does not set SO_REUSEPORT.
func ListenSharedWith(ctx context.Context, addr string, n int, control func(network, address string, c syscall.RawConn) error, buffers bool) ([]*PacketConn, error) {
	lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		if n > 1 {
			if err := reusePort(network, address, c); err != nil {
				return err
			}
		}
		if control != nil {
			return control(network, address, c)
		}
		return nil
	}}
	var out []*PacketConn
	for i := 0; i < n; i++ {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			for _, p := range out {
				p.Close()
			}
			return nil, err // "listen udp ADDR: bind: ...": it names the network and address
		}
		c := pc.(*net.UDPConn)
		p := &PacketConn{c: c}
		if buffers {
			setBuffers(c)
		}
		p.b, _ = newBatcher(c, false) // without it, batches of one
		out = append(out, p)
		addr = c.LocalAddr().String() // the others join the port the first got
	}
	return out, nil
}

// ReadFrom reads one datagram into b and returns its length and sender.
func (p *PacketConn) ReadFrom(b []byte) (int, netip.AddrPort, error) {
	if p.b != nil && p.b.outOfPoller() {
		p.one[0].Buf = b
		n, err := p.b.read(p.one[:])
		p.one[0].Buf = nil
		if n == 0 {
			return 0, netip.AddrPort{}, err
		}
		return p.one[0].N, p.one[0].Addr, nil
	}
	return p.c.ReadFromUDPAddrPort(b)
}

// WriteTo sends b to addr.
func (p *PacketConn) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	if p.b != nil && p.b.outOfPoller() {
		return p.b.writeTo(b, addr)
	}
	n, err := p.c.WriteToUDPAddrPort(b, addr)
	if err == nil {
		p.countSent()
	}
	return n, err
}

// SetReadDeadline sets the deadline for ReadFrom and ReadBatch, busy
// polls included.
func (p *PacketConn) SetReadDeadline(t time.Time) error {
	if p.b != nil {
		p.b.setDeadline(t)
	}
	return p.c.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for WriteTo and WriteBatch: a send
// that waits for room in the socket's buffer waits no longer.
func (p *PacketConn) SetWriteDeadline(t time.Time) error {
	if p.b != nil {
		p.b.setWriteDeadline(t)
	}
	return p.c.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines.
func (p *PacketConn) SetDeadline(t time.Time) error {
	if err := p.SetReadDeadline(t); err != nil {
		return err
	}
	return p.SetWriteDeadline(t)
}

// LocalAddr returns the bound address.
func (p *PacketConn) LocalAddr() net.Addr { return p.c.LocalAddr() }

// Close closes the socket.
func (p *PacketConn) Close() error {
	if p.b != nil {
		p.b.markClosing() // a blocking read sees it
	}
	return p.c.Close()
}
