//go:build !unix

package unixgram

// sender is empty: see send.
type sender struct{}

// send sends b to pe; without Unix sockets' MSG_DONTWAIT here, it may
// wait for a peer that does not read.
func (p *PacketConn) send(b []byte, pe *peer) (int, error) {
	return p.c.WriteToUnix(b, pe.addr)
}
