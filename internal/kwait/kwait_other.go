//go:build !linux

package kwait

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"
)

// Waiting in the kernel out of the poller is Linux's: elsewhere Leave
// refuses it.

// Cap is the longest a blocking call waits before it looks at its
// deadline again.
const Cap = 20 * time.Millisecond

// Socket is one socket's state out of the poller.
type Socket struct{}

// Leave refuses: there is no poller to leave here.
func (s *Socket) Leave(int) error { return errors.ErrUnsupported }

// Rejoin does nothing: the socket never left.
func (s *Socket) Rejoin(int) error { return nil }

// InPoller is true: sockets never leave it here.
func InPoller(syscall.Conn) bool { return true }

// Wait refuses here.
func (s *Socket) Wait(uintptr, int64) error { return errors.ErrUnsupported }

// Block refuses here.
func (s *Socket) Block(int64, int64) bool { return false }

// Unblock does nothing here.
func (s *Socket) Unblock() {}

// Wake does nothing here.
func (s *Socket) Wake() {}

// Wake does nothing here.
func (c *Conn) Wake() {}

// Shutdown does nothing here.
func Shutdown(syscall.RawConn) {}

// Read is not for here.
func (s *Socket) Read(uintptr, []byte, *atomic.Int64, *atomic.Bool) (int, error) {
	return 0, errors.ErrUnsupported
}

// SendAgain is not for here.
func SendAgain(int64, *atomic.Bool) error { return errors.ErrUnsupported }

// Conn is not for here: NewConn refuses.
type Conn struct{}

// NewConn refuses: there is no poller to leave here.
func NewConn(syscall.RawConn, *atomic.Int64, *atomic.Int64) (*Conn, error) {
	return nil, errors.ErrUnsupported
}

// Rejoin does nothing.
func (c *Conn) Rejoin() error { return nil }

// SetReadClock does nothing here: there are no reads in the kernel.
func (c *Conn) SetReadClock(func() int64) {}

// ReadAt is 0 here.
func (c *Conn) ReadAt() int64 { return 0 }

// Closing does nothing.
func (c *Conn) Closing() {}

// Read refuses.
func (c *Conn) Read([]byte) (int, error) { return 0, errors.ErrUnsupported }

// ReadRest is Read for the rest of a message.
func (c *Conn) ReadRest([]byte) (int, error) { return 0, errors.ErrUnsupported }

// Write refuses.
func (c *Conn) Write([]byte) (int, error) { return 0, errors.ErrUnsupported }
