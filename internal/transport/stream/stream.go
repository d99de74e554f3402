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
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
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
	got     int           // bytes of the body ReadFrame has of the message
	wset    time.Time     // when WriteFrame last moved the write deadline
	dropped int           // bytes of a too-large message read and dropped so far
	connect time.Duration // how long Dial took to connect
	// busy: reads spin (SetBusyPoll); nil: they sleep. Atomic: a
	// listener's peer starts spinning once in a session, while the
	// listener's Close may close it.
	busy    atomic.Pointer[busyReader]
	rdl     atomic.Int64 // the read deadline, clock.Deadline (0: none), for busy reads
	closing atomic.Bool  // Close was called: a busy read ends, begun before or after
	network string       // as dialled ("tcp4"...), for errors; "": the address's
	// block: reads and writes wait in the kernel (SetBlockingReads),
	// or in the poller. Atomic: a listener's Close closes its peers from
	// another goroutine.
	block kwait.Slot
	// mark: SetReadClock's clock, for reads in the poller (the busy and
	// blocking readers have their own); at: when the last read that got
	// bytes returned, whichever way it read; msgAt: at, when the last
	// message Read or ReadFrame returned was whole.
	mark      clock.ReadMark
	at, msgAt int64
}

// SetReadClock has Read note when each message came, by now(), read as
// the system call that brought its last byte returns, before the way back
// through the framing (ReadAt): on a TCP client that way took 540-640 ns
// of a round trip, most of it the first touches of memory after the
// reader's thread slept. Call it before reading, on the reader's
// goroutine.
func (c *Conn) SetReadClock(now func() int64) {
	c.mark.SetClock(now)
	c.block.SetReadClock(now)
	if b := c.busy.Load(); b != nil {
		b.setClock(now)
	}
}

// ReadAt returns when the message the last Read returned came, by the
// clock SetReadClock gave (0 without one).
func (c *Conn) ReadAt() int64 { return c.msgAt }

var errBusyUnsupported = errors.New("stream: busy polling is for TCP and Unix sockets on Linux")

// ErrBusyBlocking: busy polling and blocking reads are two ways to wait;
// a connection takes one.
var ErrBusyBlocking = errors.New("stream: busy polling and blocking reads at once")

// SetBusyPoll makes reads spin on the socket until data comes or the read
// deadline passes, instead of sleeping in the kernel: lower and steadier
// latency for a core's worth of CPU. Turning it off is the reader's to
// do, between its reads (see kwait.Copy.Release).
func (c *Conn) SetBusyPoll(on bool) error {
	if !on {
		if b := c.busy.Swap(nil); b != nil {
			b.release()
		}
		return nil
	}
	return c.spinFor(0)
}

// spinFor makes reads spin as SetBusyPoll does, each for at most quiet
// with nothing to read (0: no limit): then it fails with spin.ErrQuiet,
// and the next ReadFrame goes on with the message, as after a deadline.
func (c *Conn) spinFor(quiet time.Duration) error {
	if c.block.Conn() != nil {
		return ErrBusyBlocking
	}
	b, err := newBusyReader(c.Conn, &c.rdl, &c.closing, quiet, c.mark.Clock())
	if err != nil {
		return err
	}
	if old := c.busy.Swap(b); old != nil {
		old.release()
	}
	if c.closing.Load() {
		b.release() // Close looked before the swap
	}
	return nil
}

// SetReadDeadline sets the deadline for reads, busy, blocking or not.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.rdl.Store(clock.Deadline(t))
	c.block.SetReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for writes, blocking or not.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.block.SetWriteDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// Close closes the connection, and stops a busy or blocking read.
func (c *Conn) Close() error {
	c.closing.Store(true)
	c.block.Closing()
	if b := c.busy.Load(); b != nil {
		b.release()
	}
	return c.Conn.Close()
}

// rawRead reads from the connection: spinning when busy, in the kernel
// when blocking (the rest of a message begun as kwait.Conn.ReadRest
// says).
func (c *Conn) rawRead(p []byte) (int, error) {
	if b := c.busy.Load(); b != nil {
		n, err := b.read(p)
		c.at = b.readAt()
		return n, err
	}
	if b := c.block.Conn(); b != nil {
		n, err := readBlocking(b, p, c.hdrN > 0)
		c.at = b.ReadAt()
		return n, err
	}
	n, err := c.Conn.Read(p)
	c.mark.Got(n)
	c.at = c.mark.At()
	return n, err
}

// rawWrite writes p whole, or fails: in the kernel when blocking, with
// raw calls when busy.
func (c *Conn) rawWrite(p []byte) (int, error) {
	if b := c.busy.Load(); b != nil {
		n, err := b.write(p)
		if err != nil {
			err = c.namedWrite(err)
		}
		return n, err
	}
	if b := c.block.Conn(); b != nil {
		return b.Write(p)
	}
	return c.Conn.Write(p)
}

// namedWrite is a busy write's error err as the poller's write says it:
// with both ends, where err is the system call's.
func (c *Conn) namedWrite(err error) error {
	if se := (*os.SyscallError)(nil); errors.As(err, &se) {
		network := c.network
		if network == "" {
			network = c.LocalAddr().Network()
		}
		return &net.OpError{Op: "write", Net: network, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return err
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
	fc.connect, fc.network = time.Since(start), network
	return fc, nil
}

// ConnectTime returns how long Dial took to connect.
func (c *Conn) ConnectTime() time.Duration { return c.connect }

// Read reads the next message into b and returns its length. A message
// longer than b is read and dropped, and Read returns ErrTooLarge.
func (c *Conn) Read(b []byte) (int, error) {
	return c.read(b)
}

func (c *Conn) read(b []byte) (int, error) {
	if err := c.readHeader(MaxMessage); err != nil {
		return 0, err
	}
	if c.size > len(b) {
		if err := c.discard(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %d bytes for a %d-byte buffer", ErrTooLarge, c.size, len(b))
	}
	got := copy(b, c.partial)
	for got < c.size {
		n, err := c.readSome(b[got:c.size])
		got += n
		if err != nil && got < c.size {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.partial = append(c.partial[:0], b[:got]...)
			}
			return 0, err
		}
	}
	c.hdrN = 0
	// The read that brought the last byte, or the one that read it ahead.
	c.msgAt = c.at
	return c.size, nil
}

// readHeader reads the current message's length, unless it has it, and
// checks it against limit. A frame over the limit ends the stream: the
// peer does not speak this framing, or lies, and the stream cannot be
// resynchronised.
func (c *Conn) readHeader(limit int) error {
	for c.hdrN < headerLen {
		n, err := c.readSome(c.hdr[c.hdrN:])
		c.hdrN += n
		if err != nil && c.hdrN < headerLen {
			return err
		}
		if c.hdrN == headerLen {
			c.size = int(binary.BigEndian.Uint32(c.hdr[:]))
			c.partial, c.got = c.partial[:0], 0
		}
	}
	if c.size > limit {
		return fmt.Errorf("%w: a frame of %d bytes (the most is %d)", ErrTooLarge, c.size, limit)
	}
	return nil
}

// ReadFrame reads the next message into buf[FrameHeaderLen:], for a
// reflector: buf grows as the message's bytes arrive, never ahead of them
// (a peer's declared length costs nothing until it sends the bytes), by
// asking grow for a larger buffer holding what buf holds; grow may refuse
// with an error, which ReadFrame returns. A message longer than limit is
// an error that ends the stream. A read cut by its deadline keeps what it
// got in the buffer returned, which must be passed to the next ReadFrame.
// The first FrameHeaderLen bytes of buf are left for a reply's framing
// (see WriteFrame).
func (c *Conn) ReadFrame(buf []byte, limit int, grow func(buf []byte, size int) ([]byte, error)) ([]byte, int, error) {
	if err := c.readHeader(limit); err != nil {
		return buf, 0, err
	}
	if len(buf) < headerLen {
		// Room for the framing even of an empty message.
		nb, err := grow(buf, headerLen+min(c.size, minFrameBuf))
		if err != nil {
			return buf, 0, err
		}
		buf = nb
	}
	for c.got < c.size {
		if headerLen+c.got >= len(buf) {
			nb, err := grow(buf, min(headerLen+c.size, max(2*len(buf), headerLen+minFrameBuf)))
			if err != nil {
				return buf, 0, err
			}
			buf = nb
		}
		n, err := c.readSome(buf[headerLen+c.got : min(len(buf), headerLen+c.size)])
		c.got += n
		if err != nil && c.got < c.size {
			return buf, 0, err
		}
	}
	c.hdrN = 0
	c.msgAt = c.at // as Read's
	return buf, c.size, nil
}

// FrameHeaderLen is the room ReadFrame leaves before a message, for the
// length of a reply built in its place.
const FrameHeaderLen = headerLen

// minFrameBuf is the smallest buffer ReadFrame grows to.
const minFrameBuf = 512

// WriteFrame sends buf[FrameHeaderLen:FrameHeaderLen+n] as one message,
// writing its length into buf's first bytes: no copy. A write that makes
// no progress for stall (0: no limit) fails with os.ErrDeadlineExceeded,
// and the connection is then unusable (a message may be cut).
func (c *Conn) WriteFrame(buf []byte, n int, stall time.Duration) error {
	if n > MaxMessage {
		return fmt.Errorf("%w: %d bytes (the most is %d)", ErrTooLarge, n, MaxMessage)
	}
	binary.BigEndian.PutUint32(buf, uint32(n))
	w := buf[:headerLen+n]
	for {
		if stall > 0 {
			// Moving a deadline costs a timer update: move it only when a
			// quarter of it has gone by, so it lies 3/4 to all of stall
			// ahead.
			if now := time.Now(); now.Sub(c.wset) > stall/4 {
				if err := c.SetWriteDeadline(now.Add(stall)); err != nil {
					return err
				}
				c.wset = now
			}
		}
		k, err := c.rawWrite(w)
		w = w[k:]
		if err == nil || len(w) == 0 {
			return nil
		}
		if k == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		c.wset = time.Time{} // it moved: give it a new deadline
	}
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
	if _, err := c.rawWrite(w); err != nil {
		return 0, err
	}
	return len(b), nil
}

// MaxMessage returns the largest message the connection carries.
func (c *Conn) MaxMessage() int { return MaxMessage }

// SetNoDelay turns Nagle's algorithm off (on true: Go's default as it
// connects) or back on, over TCP. Unix streams have none:
// errors.ErrUnsupported.
func (c *Conn) SetNoDelay(on bool) error {
	tc, ok := c.Conn.(*net.TCPConn)
	if !ok {
		return errors.ErrUnsupported
	}
	return tc.SetNoDelay(on)
}
