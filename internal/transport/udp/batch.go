package udp

import (
	"errors"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/tstamp"
)

// Message is one datagram of a batch: Buf is its memory, N its length,
// Addr its sender (reading) or destination (writing), Stamp when the
// kernel (and NIC) received it, where the socket's stamping is on.
type Message struct {
	Buf   []byte
	N     int
	Addr  netip.AddrPort
	Stamp tstamp.Stamp
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

// SetBusyPoll makes reads spin on the socket until a datagram arrives or
// the read deadline passes, instead of sleeping in the kernel: lower and
// steadier latency for a core's worth of CPU (use it on both ends, each on
// its own core). It needs batched I/O (Linux).
func (p *PacketConn) SetBusyPoll(on bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	p.b.setBusyPoll(on)
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
	c.b.setBusyPoll(on)
	c.busy = on
	return nil
}

// Read reads one datagram from the peer; with busy polling, spinning.
func (c *Conn) Read(b []byte) (int, error) {
	if !c.busy {
		return c.UDPConn.Read(b)
	}
	return c.b.read1(b)
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

// EnableTimestamps turns on the kernel's receive and transmit stamps (and
// with hw the NIC's): each message ReadBatch reads carries its receive
// stamp, and ReadTxStamps returns the transmit stamps of what was sent,
// numbered from NextTxID. Single reads and writes go through the batch
// path from then on. It needs batched I/O (Linux).
func (p *PacketConn) EnableTimestamps(hw bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	return p.b.enableStamps(hw)
}

// EnableTimestamps is PacketConn.EnableTimestamps for the client's socket.
func (c *Conn) EnableTimestamps(hw bool) error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	return c.b.enableStamps(hw)
}

// NextTxID returns the ID the transmit stamp of the next datagram sent
// will carry; the datagrams of one WriteBatch take the IDs that follow in
// order.
func (p *PacketConn) NextTxID() uint32 { return p.b.nextTxID() }

// NextTxID is PacketConn.NextTxID for the client's socket.
func (c *Conn) NextTxID() uint32 { return c.b.nextTxID() }

// ReadTxStamps moves the transmit stamps waiting on the socket into st,
// without waiting, and returns how many it moved. It does not allocate.
func (p *PacketConn) ReadTxStamps(st []tstamp.TxStamp) (int, error) { return p.b.readTxStamps(st) }

// ReadTxStamps is PacketConn.ReadTxStamps for the client's socket.
func (c *Conn) ReadTxStamps(st []tstamp.TxStamp) (int, error) { return c.b.readTxStamps(st) }
