//go:build !linux

package foreign

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// connectSys is empty: connect:// needs Linux.
type connectSys struct{}

func (c *Connect) open() error {
	return fmt.Errorf("connect:// needs Linux: %w", errors.ErrUnsupported)
}

func (c *Connect) giveUp() {}

// Read is Linux's.
func (c *Connect) Read(b []byte) (int, error) { return 0, errors.ErrUnsupported }

// Write is Linux's.
func (c *Connect) Write(b []byte) (int, error) { return 0, errors.ErrUnsupported }

// SetReadDeadline is Linux's.
func (c *Connect) SetReadDeadline(t time.Time) error { return errors.ErrUnsupported }

// SyscallConn is Linux's.
func (c *Connect) SyscallConn() (syscall.RawConn, error) { return nil, errors.ErrUnsupported }

// Close is Linux's.
func (c *Connect) Close() error { return nil }
