package udp

import "errors"

// SetBlockingReads makes reads wait for a datagram inside the kernel, on
// the reader's thread, as a blocking recv does in C, instead of in the
// runtime's poller: the lightest wait there is for a reader that has its
// thread to itself (runtime.LockOSThread), such as a ping-pong's. Read
// deadlines still hold, interrupts included (seen within 20 ms), and
// writes never wait in the kernel. It needs batched I/O (Linux); it is
// not for a socket that busy-polls.
func (p *PacketConn) SetBlockingReads(on bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	if err := p.b.setBlocking(on); err != nil {
		return err
	}
	p.block = on
	return nil
}

// SetBlockingReads is PacketConn.SetBlockingReads for the client's socket.
func (c *Conn) SetBlockingReads(on bool) error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	if err := c.b.setBlocking(on); err != nil {
		return err
	}
	c.block = on
	return nil
}
