//go:build !linux

package kwait

import (
	"sync/atomic"
	"syscall"
)

// Copy is Linux's; here there is none, and every call goes through the
// RawConn.
type Copy struct{}

// NewCopy returns nil here.
func NewCopy(syscall.RawConn) *Copy { return nil }

// Enter says to go through the RawConn.
func (c *Copy) Enter(*atomic.Bool) (uintptr, bool) { return 0, false }

// Leave does nothing here.
func (c *Copy) Leave() {}

// Release does nothing here.
func (c *Copy) Release() {}
