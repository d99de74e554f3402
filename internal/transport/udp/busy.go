package udp

import (
	"errors"
	"time"
)

// SetBusyPoll makes reads spin on the socket until a datagram arrives,
// the read deadline passes or Close is called, instead of sleeping in the
// kernel: lower and steadier latency for a core's worth of CPU (use it on
// both ends, each on its own core). It needs batched I/O (Linux). The
// socket leaves the runtime's poller meanwhile (see busyPoll), so the
// *net.UDPConn's own methods are not to be called, and turning it off is
// the reader's side's to do, as with SetBlockingReads.
func (p *PacketConn) SetBusyPoll(on bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	if on && p.block.Load() {
		return ErrBusyBlocking
	}
	if err := p.b.setBusyPoll(on); err != nil {
		return err
	}
	p.busy = on
	return nil
}

// BusyPolling reports whether reads spin (SetBusyPoll): a reader that
// must also act at a time sets its read deadline to it, which a spinning
// read honours to the microsecond.
func (p *PacketConn) BusyPolling() bool { return p.busy }

// SetBusyPoll is PacketConn.SetBusyPoll for the client's socket.
func (c *Conn) SetBusyPoll(on bool) error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	if on && c.block.Load() {
		return ErrBusyBlocking
	}
	if err := c.b.setBusyPoll(on); err != nil {
		return err
	}
	c.busy = on
	return nil
}

// BusyPolling is PacketConn.BusyPolling for the client's socket.
func (c *Conn) BusyPolling() bool { return c.busy }

// Read reads one datagram from the peer; with busy polling, spinning.
func (c *Conn) Read(b []byte) (int, error) {
	switch {
	case c.busy:
		n, err := c.b.read1(b)
		c.at = c.b.readAt()
		return n, err
	case c.block.Load():
		c.one[0].Buf = b
		n, err := c.b.read(c.one[:])
		c.one[0].Buf = nil
		if n == 0 {
			return 0, err
		}
		c.at = c.one[0].At
		return c.one[0].N, nil
	}
	n, err := c.UDPConn.Read(b)
	if err == nil {
		c.mark.Got(max(n, 1)) // an empty datagram came too
		c.at = c.mark.At()
	}
	return n, err
}

// Write sends b to the peer; with busy polling, with a raw call.
func (c *Conn) Write(b []byte) (int, error) { return c.write(b) }

// SetReadDeadline sets the deadline for reads, busy or not.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.b != nil {
		c.b.setDeadline(t)
	}
	return c.UDPConn.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for writes, blocking or not.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.b != nil {
		c.b.setWriteDeadline(t)
	}
	return c.UDPConn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// Close closes the socket; a blocking read ends.
func (c *Conn) Close() error {
	if c.b != nil {
		c.b.markClosing()
	}
	return c.UDPConn.Close()
}
