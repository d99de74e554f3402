//go:build !linux

package stream

import (
	"errors"
	"sync/atomic"
)

// blockConn is Linux's: elsewhere SetBlockingReads refuses.
type blockConn struct {
	closing atomic.Bool
}

// SetBlockingReads refuses here: waiting in the kernel out of the poller
// is Linux's.
func (c *Conn) SetBlockingReads(on bool) error {
	if !on {
		return nil
	}
	return errors.ErrUnsupported
}

func (b *blockConn) read([]byte) (int, error)  { return 0, errors.ErrUnsupported }
func (b *blockConn) write([]byte) (int, error) { return 0, errors.ErrUnsupported }
