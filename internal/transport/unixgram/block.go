package unixgram

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
)

// Conn is the client's Unix datagram socket, connected to the reflector.
type Conn struct {
	*net.UnixConn
	// block: reads and writes wait in the kernel (SetBlockingReads), or
	// in the poller.
	block kwait.Slot
	// mark: SetReadClock's clock, for reads in the poller; at: when the
	// last Read's datagram came, whichever way it read (ReadAt).
	mark clock.ReadMark
	at   int64
}

// SetReadClock has Read note when each datagram came, by now(), read as
// its system call returns where reads wait in the kernel, as the
// poller's Read returns otherwise (ReadAt), as udp.Conn.SetReadClock
// does. Call it before reading, on the reader's goroutine.
func (c *Conn) SetReadClock(now func() int64) {
	c.mark.SetClock(now)
	c.block.SetReadClock(now)
}

// ReadAt returns when the datagram the last Read returned came, by the
// clock SetReadClock gave (0 without one).
func (c *Conn) ReadAt() int64 { return c.at }

// SetBlockingReads makes reads (and writes) wait inside the kernel on the
// caller's thread, out of the runtime's poller (see package kwait), as
// udp.Conn.SetBlockingReads does, off between reads. Linux only.
func (c *Conn) SetBlockingReads(on bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return c.block.Set(rc, on)
}

// Read reads one datagram from the reflector.
func (c *Conn) Read(p []byte) (int, error) {
	if b := c.block.Conn(); b != nil {
		n, err := b.Read(p)
		if err == nil {
			c.at = b.ReadAt()
		}
		return n, err
	}
	n, err := c.UnixConn.Read(p)
	if err == nil {
		c.mark.Got(max(n, 1)) // an empty datagram came too
		c.at = c.mark.At()
	}
	return n, err
}

// Write sends p to the reflector.
func (c *Conn) Write(p []byte) (int, error) {
	if b := c.block.Conn(); b != nil {
		return b.Write(p)
	}
	return c.UnixConn.Write(p)
}

// SetReadDeadline sets the deadline for reads, blocking or not.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.block.SetReadDeadline(t)
	return c.UnixConn.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for writes, blocking or not.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.block.SetWriteDeadline(t)
	return c.UnixConn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// Close closes the socket; a blocking read or write ends.
func (c *Conn) Close() error {
	c.block.Closing()
	return c.UnixConn.Close()
}

// blockReader is the reflector's PacketConn.ReadFrom out of the poller
// (SetBlockingReads): made once, so that a read does not allocate more
// than the sender's address.
type blockReader struct {
	rc       syscall.RawConn
	ks       kwait.Socket
	deadline *atomic.Int64 // the PacketConn's
	closing  atomic.Bool
	buf      []byte
	n        int
	from     string // the sender's socket address; "" for an unbound one
	err      error
	fn       func(fd uintptr)
}
