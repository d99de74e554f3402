// Package stream carries volley's messages over stream sockets, TCP and
// Unix stream. Each message is framed by its length, 4 bytes big-endian,
// so that any request and reply size works (up to MaxMessage), and a
// message is read whole: a client's round trip ends at the last byte of
// the reply.
//
// The client's side is a Conn; the reflector's is a Listener, which takes
// every connection and hands their messages to one reflecting loop as if
// they were datagrams from one socket, each connection with its own
// address: a TCP peer's own, and for a Unix peer an address in
// fd76:6c00::/32 standing for the connection (Unix peers have none).
package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// MaxMessage is the largest message a stream carries.
const MaxMessage = 4 << 20

// ErrTooLarge: a frame is longer than MaxMessage, or than the buffer given.
var ErrTooLarge = errors.New("stream: message too large")

const headerLen = 4

// TCPInfo is what the kernel says of a TCP connection.
type TCPInfo struct {
	TotalRetrans uint32        // segments retransmitted since the connection opened
	Cwnd         uint32        // congestion window, in segments
	MSS          uint32        // sender's maximum segment size
	RTT, RTTVar  time.Duration // smoothed round trip and its variance
}

// Conn is a framed stream connection: Read returns one whole message and
// Write sends one. A read cut by its deadline keeps what it got and goes
// on with the same message at the next Read.
type Conn struct {
	net.Conn
	hdr     [headerLen]byte
	hdrN    int    // header bytes read of the message being read
	size    int    // its length, once the header is in
	partial []byte // what a read cut by its deadline had of the body
	wbuf    []byte
	ahead   []byte // read ahead of the current message: ahead[as:ae] is unread
	as, ae  int
	dropped int           // bytes of a too-large message read and dropped so far
	connect time.Duration // how long Dial took to connect
	busy    *busyReader   // reads spin (SetBusyPoll); nil: they sleep
}

var errBusyUnsupported = errors.New("stream: busy polling is for TCP and Unix sockets on Linux")

// SetBusyPoll makes reads spin on the socket until data comes or the read
// deadline passes, instead of sleeping in the kernel: lower and steadier
// latency for a core's worth of CPU.
func (c *Conn) SetBusyPoll(on bool) error {
	if !on {
		c.busy = nil
		return nil
	}
	b, err := newBusyReader(c.Conn)
	if err != nil {
		return err
	}
	c.busy = b
	return nil
}

// SetReadDeadline sets the deadline for reads, busy or not.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.busy != nil {
		var d int64
		if !t.IsZero() {
			d = t.UnixNano()
		}
		c.busy.deadline.Store(d)
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes the connection, and stops a busy read.
func (c *Conn) Close() error {
	if c.busy != nil {
		c.busy.closed.Store(true)
	}
	return c.Conn.Close()
}

// rawRead reads from the connection: spinning when busy.
func (c *Conn) rawRead(p []byte) (int, error) {
	if c.busy != nil {
		return c.busy.read(p)
	}
	return c.Conn.Read(p)
}

// NewConn frames c.
func NewConn(c net.Conn) *Conn { return &Conn{Conn: c} }

// Dial connects to addr on network ("tcp" or "unix") and frames the
// connection. TCP connections get TCP_NODELAY (Go's default).
func Dial(network, addr string, timeout time.Duration) (*Conn, error) {
	return DialWith(context.Background(), &net.Dialer{Timeout: timeout}, network, addr)
}

// DialWith is Dial through d (its socket options and local address).
func DialWith(ctx context.Context, d *net.Dialer, network, addr string) (*Conn, error) {
	start := time.Now()
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	fc := NewConn(c)
	fc.connect = time.Since(start)
	return fc, nil
}

// ConnectTime returns how long Dial took to connect.
func (c *Conn) ConnectTime() time.Duration { return c.connect }

// Read reads the next message into b and returns its length. A message
// longer than b is read and dropped, and Read returns ErrTooLarge.
func (c *Conn) Read(b []byte) (int, error) {
	_, n, err := c.read(b, false)
	return n, err
}

// ReadGrow reads the next message into buf, or into a new buffer when it
// does not fit, and returns the buffer and the message's length.
func (c *Conn) ReadGrow(buf []byte) ([]byte, int, error) { return c.read(buf, true) }

func (c *Conn) read(b []byte, grow bool) ([]byte, int, error) {
	for c.hdrN < headerLen {
		n, err := c.readSome(c.hdr[c.hdrN:])
		c.hdrN += n
		if err != nil && c.hdrN < headerLen {
			return b, 0, err
		}
		if c.hdrN == headerLen {
			c.size = int(binary.BigEndian.Uint32(c.hdr[:]))
			c.partial = c.partial[:0]
		}
	}
	if c.size > MaxMessage {
		// The peer does not speak this framing, or lies: the stream
		// cannot be resynchronised.
		return b, 0, fmt.Errorf("%w: a frame of %d bytes (the most is %d)", ErrTooLarge, c.size, MaxMessage)
	}
	if c.size > len(b) {
		if grow {
			b = make([]byte, c.size)
		} else {
			if err := c.discard(); err != nil {
				return b, 0, err
			}
			return b, 0, fmt.Errorf("%w: %d bytes for a %d-byte buffer", ErrTooLarge, c.size, len(b))
		}
	}
	got := copy(b, c.partial)
	for got < c.size {
		n, err := c.readSome(b[got:c.size])
		got += n
		if err != nil && got < c.size {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.partial = append(c.partial[:0], b[:got]...)
			}
			return b, 0, err
		}
	}
	c.hdrN = 0
	return b, c.size, nil
}

// readAhead is the most read in one call beyond what a message needs:
// the next messages' headers and small bodies come with it, one system
// call per message instead of two.
const readAhead = 16 << 10

// readSome fills dst with what was read ahead, or reads: into dst itself
// when it is large, or ahead into c.ahead otherwise.
func (c *Conn) readSome(dst []byte) (int, error) {
	if c.as < c.ae {
		n := copy(dst, c.ahead[c.as:c.ae])
		c.as += n
		return n, nil
	}
	if len(dst) >= readAhead {
		return c.rawRead(dst)
	}
	if c.ahead == nil {
		c.ahead = make([]byte, readAhead)
	}
	n, err := c.rawRead(c.ahead)
	c.as, c.ae = 0, n
	m := copy(dst, c.ahead[:n])
	c.as = m
	return m, err
}

// discard reads and drops the rest of the current message.
func (c *Conn) discard() error {
	var scratch [4096]byte
	for c.dropped < c.size {
		n, err := c.readSome(scratch[:min(c.size-c.dropped, len(scratch))])
		c.dropped += n
		if err != nil && c.dropped < c.size {
			return err
		}
	}
	c.hdrN, c.dropped = 0, 0
	return nil
}

// Write sends b as one message, in one write.
func (c *Conn) Write(b []byte) (int, error) {
	if len(b) > MaxMessage {
		return 0, fmt.Errorf("%w: %d bytes (the most is %d)", ErrTooLarge, len(b), MaxMessage)
	}
	if cap(c.wbuf) < headerLen+len(b) {
		c.wbuf = make([]byte, headerLen+len(b))
	}
	w := c.wbuf[:headerLen+len(b)]
	binary.BigEndian.PutUint32(w, uint32(len(b)))
	copy(w[headerLen:], b)
	if _, err := c.Conn.Write(w); err != nil {
		return 0, err
	}
	return len(b), nil
}

// MaxMessage returns the largest message the connection carries.
func (c *Conn) MaxMessage() int { return MaxMessage }
