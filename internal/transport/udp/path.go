package udp

import "errors"

// EnablePath asks the kernel for what each received datagram's IP header
// said: every message ReadBatch reads carries its Path (TTL or hop limit,
// traffic class). Single reads do not; a caller that wants a datagram's
// path reads batches. It needs batched I/O (Linux).
func (p *PacketConn) EnablePath() error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	return p.b.enablePath()
}

// EnablePath is PacketConn.EnablePath for the client's socket.
func (c *Conn) EnablePath() error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	return c.b.enablePath()
}
