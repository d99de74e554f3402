//go:build !linux

package udp

import (
	"errors"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/tstamp"
)

// batcher is Linux's; elsewhere batches are one datagram at a time.
type batcher struct{}

func newBatcher(interface {
	SyscallConn() (syscall.RawConn, error)
}, bool) (*batcher, error) {
	return nil, errors.ErrUnsupported
}

func (p *PacketConn) readBatch(ms []Message) (int, error)  { return p.readOne(ms) }
func (p *PacketConn) writeBatch(ms []Message) (int, error) { return p.writeOne(ms) }
func (c *Conn) readBatch(ms []Message) (int, error)        { return c.readOne(ms) }
func (c *Conn) writeBatch(ms []Message) (int, error)       { return c.writeOne(ms) }

func (b *batcher) setBusyPoll(bool)      {}
func (b *batcher) setDeadline(time.Time) {}

func (c *Conn) write(b []byte) (int, error) { return c.UDPConn.Write(b) }

func (b *batcher) enableStamps(bool) error                    { return errors.ErrUnsupported }
func (b *batcher) nextTxID() uint32                           { return 0 }
func (b *batcher) readTxStamps([]tstamp.TxStamp) (int, error) { return 0, nil }
func (p *PacketConn) countSent()                              {}

func (b *batcher) read1(p []byte) (int, error) { return 0, errors.ErrUnsupported }
