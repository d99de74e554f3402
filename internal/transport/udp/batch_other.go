//go:build !linux

package udp

import (
	"errors"
	"syscall"
)

// batcher is Linux's; elsewhere batches are one datagram at a time.
type batcher struct{}

func (b *batcher) readAt() int64 { return 0 }

func newBatcher(interface {
	SyscallConn() (syscall.RawConn, error)
}, bool) (*batcher, error) {
	return nil, errors.ErrUnsupported
}

func (*batcher) setReadClock(func() int64) {}

func (p *PacketConn) readBatch(ms []Message) (int, error)  { return p.readOne(ms) }
func (p *PacketConn) writeBatch(ms []Message) (int, error) { return p.writeOne(ms) }
func (c *Conn) readBatch(ms []Message) (int, error)        { return c.readOne(ms) }
func (c *Conn) writeBatch(ms []Message) (int, error)       { return c.writeOne(ms) }
