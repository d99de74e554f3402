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
func Read(c syscall.RawConn, network string) (Granted, error) {
	return Granted{}, errors.ErrUnsupported
}

// QuickAcker is Linux's.
func QuickAcker(c syscall.RawConn) func() error {
	return func() error { return errors.ErrUnsupported }
}
