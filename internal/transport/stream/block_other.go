//go:build !linux

package stream

import (
	"errors"

	"github.com/volley-net/volley/internal/kwait"
)

// SetBlockingReads refuses here: waiting in the kernel out of the poller
// is Linux's.
func (c *Conn) SetBlockingReads(on bool) error {
	if !on {
		return nil
	}
	return errors.ErrUnsupported
}

func readBlocking(*kwait.Conn, []byte, bool) (int, error) { return 0, errors.ErrUnsupported }
