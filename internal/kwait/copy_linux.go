package kwait

import (
	"runtime"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Copy is a copy of a socket's descriptor (F_DUPFD_CLOEXEC) for the calls
// a socket out of the runtime's poller makes, spinning or waiting in the
// kernel: straight on the copy, not through the RawConn, whose Read,
// Write and Control lock and unlock the descriptor around each call (on a
// busy TCP reflector 120-130 ns of the 650-700 between its receive and
// its send). The copy is its owner's: Enter and Leave count the calls on
// it under way, and Release closes it once there are none. A nil *Copy
// has no descriptor: Enter says to go through the RawConn.
type Copy struct {
	fd       int
	uses     atomic.Int32 // calls on fd under way
	released atomic.Bool  // Release was called: fd is closed, or about to be
}

// NewCopy returns a copy of rc's descriptor, or nil where none can be had
// (out of descriptors): the calls then go through rc.
func NewCopy(rc syscall.RawConn) *Copy {
	c := &Copy{fd: -1}
	_ = rc.Control(func(fd uintptr) {
		if nfd, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			c.fd = nfd
		}
	})
	if c.fd < 0 {
		return nil
	}
	return c
}

// Enter begins a call on the copy and returns its descriptor; ok is false,
// and the call is to go through the RawConn (which says whether the socket
// is closed), where there is no copy, it is being released, or closing is
// set. A call Enter began ends with Leave.
func (c *Copy) Enter(closing *atomic.Bool) (fd uintptr, ok bool) {
	if c == nil {
		return 0, false
	}
	c.uses.Add(1)
	if c.released.Load() || closing.Load() {
		c.uses.Add(-1)
		return 0, false
	}
	return uintptr(c.fd), true
}

// Leave ends a call Enter began.
func (c *Copy) Leave() { c.uses.Add(-1) }

// Release closes the copy once no call is on it, once only. Its owner
// calls it after setting the closing flag its calls look at (a spin ends
// within a turn; a call waiting in the kernel, once the socket is shut
// down), or on the goroutine that makes the calls, between them.
func (c *Copy) Release() {
	if c == nil || c.released.Swap(true) {
		return
	}
	for c.uses.Load() != 0 {
		runtime.Gosched()
	}
	unix.Close(c.fd)
}
