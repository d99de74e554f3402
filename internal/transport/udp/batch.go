package udp

import (
	"net/netip"

	"github.com/volley-net/volley/internal/tstamp"
)

// Message is one datagram of a batch: Buf is its memory, N its length,
// Addr its sender (reading) or destination (writing), Stamp when the
// kernel (and NIC) received it, where the socket's stamping is on, and At
// when the read returned it, by the clock SetReadClock gave (0 without).
type Message struct {
	Buf   []byte
	N     int
	Addr  netip.AddrPort
	Stamp tstamp.Stamp
	Path  Path
	At    int64
}

// SetReadClock has ReadBatch set each message's At to now(), read as the
// system call that brought it returns, before anything else: the reader's
// time of arrival without the way back to it. At a busy reflector that
// way (the spin's return, the descriptor's unlock, the parsing of the
// control messages) took 300-350 ns of the 500-600 between a receive's
// return and the reply's send. Where reads are not batched (not Linux),
// At stays 0.
func (p *PacketConn) SetReadClock(now func() int64) {
	if p.b != nil {
		p.b.setReadClock(now)
	}
}

// SetReadClock is PacketConn.SetReadClock for the connected socket, and
// has Read note when each datagram came too (ReadAt): as its system call
// returns where Read spins or waits in the kernel, as the poller's Read
// returns otherwise.
func (c *Conn) SetReadClock(now func() int64) {
	c.mark.SetClock(now)
	if c.b != nil {
		c.b.setReadClock(now)
	}
}

// ReadAt returns when the datagram the last Read returned came, by the
// clock SetReadClock gave (0 without one).
func (c *Conn) ReadAt() int64 { return c.at }

// Path is what a received datagram's IP header said, where its socket asks
// for it: the TTL (IPv4) or hop limit (IPv6), and the traffic class byte
// (DSCP in its upper six bits, ECN in its lower two). OK is false where the
// kernel said nothing.
type Path struct {
	TTL, TClass uint8
	OK          bool
}

// MaxBatch is the most datagrams ReadBatch and WriteBatch move in one
// system call.
const MaxBatch = 64

// ReadBatch reads up to len(ms) datagrams (at most MaxBatch), at least one,
// into the messages' buffers, and returns how many it read. It waits for
// the first like ReadFrom, deadline included, and never for more. A
// datagram longer than its buffer is cut to it. It does not allocate. On
// Linux it is one recvmmsg; elsewhere it reads one datagram.
func (p *PacketConn) ReadBatch(ms []Message) (int, error) {
	return p.readBatch(ms)
}

// WriteBatch sends ms[i].Buf[:ms[i].N] to ms[i].Addr for every message, and
// returns how many were sent before the first error, with that error; the
// caller may skip the failed one and send the rest. It does not allocate.
// On Linux it is sendmmsg, as few calls as the kernel allows; elsewhere one
// WriteTo per message.
func (p *PacketConn) WriteBatch(ms []Message) (int, error) {
	return p.writeBatch(ms)
}

// ReadBatch is PacketConn.ReadBatch for the connected socket: every
// message is from the peer.
func (c *Conn) ReadBatch(ms []Message) (int, error) { return c.readBatch(ms) }

// WriteBatch is PacketConn.WriteBatch for the connected socket: every
// message goes to the peer, whatever its Addr.
func (c *Conn) WriteBatch(ms []Message) (int, error) { return c.writeBatch(ms) }
