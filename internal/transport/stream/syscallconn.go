package stream

import (
	"errors"
	"syscall"
)

// SyscallConn returns the raw connection of c's socket (TCP or Unix), so
// that the kernel can be asked what it applied to it; errors.ErrUnsupported
// when c runs over something else (a pipe in tests).
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}
