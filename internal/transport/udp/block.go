package udp

import "errors"

// errFamily: a destination the socket's family cannot reach.
var errFamily = errors.New("udp: an IPv6 destination on an IPv4 socket")

// ErrBusyBlocking: busy polling and blocking reads are two ways to wait;
// a socket takes one.
var ErrBusyBlocking = errors.New("udp: busy polling and blocking reads at once")

// SetBlockingReads makes reads wait for a datagram inside the kernel, on
// the reader's thread, as a blocking recv does in C, instead of in the
// runtime's poller (see package kwait): the lightest wait there is for a
// reader that has its thread to itself (runtime.LockOSThread), such as a
// ping-pong's. Sends wait in the kernel too, for room, up to the write
// deadline. Read deadlines still hold, to the kernel's tick (up to two
// ticks late), interrupts included (seen within kwait.Cap); Close wakes a
// blocked read at once. It needs batched I/O (Linux); it is not for a
// socket that busy-polls. While it is on, the *net.UDPConn's own methods
// (ReadFromUDP, ReadMsgUDP, WriteMsgUDP, ...) are not to be called: they
// would wait in a poller the socket has left. Turning it off is the
// reader's side's to do, with no read under way on another goroutine: it
// waits for the calls on the socket's descriptor copy (kwait.Copy) to end.
func (p *PacketConn) SetBlockingReads(on bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	if on && p.busy {
		return ErrBusyBlocking
	}
	if err := p.b.setBlocking(on); err != nil {
		return err
	}
	p.block.Store(on)
	return nil
}

// SetBlockingReads is PacketConn.SetBlockingReads for the client's socket.
func (c *Conn) SetBlockingReads(on bool) error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	if on && c.busy {
		return ErrBusyBlocking
	}
	if err := c.b.setBlocking(on); err != nil {
		return err
	}
	c.block.Store(on)
	return nil
}
