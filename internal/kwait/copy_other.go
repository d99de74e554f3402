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

// Read runs fn through rc's Read.
func (c *Copy) Read(rc syscall.RawConn, _ *atomic.Bool, fn func(fd uintptr) bool) error {
	return rc.Read(fn)
}

// Write runs fn through rc's Write.
func (c *Copy) Write(rc syscall.RawConn, _ *atomic.Bool, fn func(fd uintptr) bool) error {
	return rc.Write(fn)
}

// Control runs fn through rc's Control.
func (c *Copy) Control(rc syscall.RawConn, _ *atomic.Bool, fn func(fd uintptr)) error {
	return rc.Control(fn)
}

// Release does nothing here.
func (c *Copy) Release() {}
