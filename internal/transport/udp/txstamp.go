package udp

import (
	"errors"

	"github.com/volley-net/volley/internal/tstamp"
)

// EnableTimestamps turns on the kernel's receive and transmit stamps (and
// with hw the NIC's): each message ReadBatch reads carries its receive
// stamp, and ReadTxStamps returns the transmit stamps of what was sent,
// numbered from NextTxID. Single reads and writes go through the batch
// path from then on. It needs batched I/O (Linux).
func (p *PacketConn) EnableTimestamps(hw bool) error {
	if p.b == nil {
		return errors.ErrUnsupported
	}
	return p.b.enableStamps(hw, false)
}

// EnableTimestamps is PacketConn.EnableTimestamps for the client's socket,
// which also asks for the scheduler's transmit stamps: ReadTxStamps then
// returns two per datagram sent where the kernel gives both (or, after
// SampleSched, for the datagrams it picks), one as it entered the
// queueing discipline (tstamp.TxStamp.Sched) and one as it left for the
// wire, in the order the kernel took them.
func (c *Conn) EnableTimestamps(hw bool) error {
	if c.b == nil {
		return errors.ErrUnsupported
	}
	return c.b.enableStamps(hw, true)
}

// NextTxID returns the ID the transmit stamp of the next datagram sent
// will carry; the datagrams of one WriteBatch take the IDs that follow in
// order.
func (p *PacketConn) NextTxID() uint32 { return p.b.nextTxID() }

// NextTxID is PacketConn.NextTxID for the client's socket.
func (c *Conn) NextTxID() uint32 { return c.b.nextTxID() }

// ReadTxStamps moves the transmit stamps waiting on the socket into st,
// without waiting, and returns how many it moved: up to MaxBatch
// error-queue entries a system call, whatever their kind. It does not
// allocate.
func (p *PacketConn) ReadTxStamps(st []tstamp.TxStamp) (int, error) { return p.b.readTxStamps(st) }

// ReadTxStamps is PacketConn.ReadTxStamps for the client's socket.
func (c *Conn) ReadTxStamps(st []tstamp.TxStamp) (int, error) { return c.b.readTxStamps(st) }

// SampleSched has, from now on, one datagram in every `every` ask for
// its scheduler stamp (see Conn.EnableTimestamps): those sent in batches
// (WriteBatch) whose transmit stamps' IDs are multiples of every. The
// others have their transmit stamp alone. Each scheduler stamp is an
// error-queue entry of its own, which the kernel makes and the reader
// takes as it does the transmit stamp's, so at high rates they cost the
// sender as much again. every of 0 or 1 changes nothing, nor does a
// socket without scheduler stamps; enabling stamps again undoes it.
func (c *Conn) SampleSched(every uint32) error {
	if c.b == nil {
		return nil
	}
	return c.b.sampleSched(every)
}

// SchedEvery is one datagram in how many that asks for its scheduler
// stamp: SampleSched's, or 1 where the socket asks for every one's (or
// went back to it: a kernel that refused the per-datagram request), 0
// without scheduler stamps.
func (c *Conn) SchedEvery() uint32 {
	if c.b == nil {
		return 0
	}
	return c.b.schedSampled()
}
