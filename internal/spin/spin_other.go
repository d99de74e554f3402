//go:build !linux

// Package spin reads a socket by spinning on non-blocking reads instead of
// sleeping in the kernel, for the transports' busy polling.
package spin

import (
	"errors"
	"sync/atomic"
	"time"
)

// Read is Linux's.
func Read(fd uintptr, p []byte, deadline *atomic.Int64, closed *atomic.Bool) (int, error) {
	return 0, errors.ErrUnsupported
}

// ReadFor is Linux's.
func ReadFor(fd uintptr, p []byte, deadline *atomic.Int64, closed *atomic.Bool, quiet time.Duration) (int, error) {
	return 0, errors.ErrUnsupported
}
