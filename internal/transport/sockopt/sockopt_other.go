//go:build !linux

package sockopt

import (
	"errors"
	"syscall"
)

func (o Options) apply(fd int, network string) error {
	if o.Interface != "" || o.Buffer > 0 || o.TOS >= 0 || o.TTL > 0 || o.DF || o.Congestion != "" {
		return errors.ErrUnsupported
	}
	return nil
}

// Read is Linux's.
func Read(c syscall.RawConn, network string) (Granted, error) { return Granted{}, errors.ErrUnsupported }

// QuickAck is Linux's.
func QuickAck(c syscall.RawConn) error { return errors.ErrUnsupported }
