package kwait

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Copy is a copy of a socket's descriptor (F_DUPFD_CLOEXEC) for the calls
// a socket out of the runtime's poller makes, spinning or waiting in the
// kernel: straight on the copy, not through the RawConn, whose Read,
// Write and Control lock and unlock the descriptor around each call (on a
// busy TCP reflector 120-130 ns of the 650-700 between its receive and
// its send). The copy is its owner's: Enter and Leave count the calls on
// it under way, and Release closes it once there are none. A Copy its
// owner drops without Release is closed when it is collected, as the
// runtime closes a dropped socket. A call on the copy is made whatever
// its deadline: a deadline ends a wait, as blocking reads' always did; it
// does not refuse data or room that is there, as the RawConn's calls do.
// A nil *Copy has no descriptor: Enter says to go through the RawConn.
type Copy struct {
	fd       int
	uses     atomic.Int32 // calls on fd under way
	released atomic.Bool  // Release was called: fd is closed, or about to be
	closed   atomic.Bool  // fd is closed
	cleanup  runtime.Cleanup
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
	c.cleanup = runtime.AddCleanup(c, func(fd int) { unix.Close(fd) }, c.fd)
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

// Read runs fn, a read's, on the copy where Enter lets it, and through
// rc's Read otherwise, or when fn says to wait in the poller (false): it
// goes on from where fn left off.
func (c *Copy) Read(rc syscall.RawConn, closing *atomic.Bool, fn func(fd uintptr) bool) error {
	if c.call(closing, fn) {
		return nil
	}
	return rc.Read(fn)
}

// Write is Read for a write: through rc's Write.
func (c *Copy) Write(rc syscall.RawConn, closing *atomic.Bool, fn func(fd uintptr) bool) error {
	if c.call(closing, fn) {
		return nil
	}
	return rc.Write(fn)
}

// Control is Read for a call that does not wait in the poller: through
// rc's Control.
func (c *Copy) Control(rc syscall.RawConn, closing *atomic.Bool, fn func(fd uintptr)) error {
	if fd, ok := c.Enter(closing); ok {
		fn(fd)
		c.Leave()
		return nil
	}
	return rc.Control(fn)
}

// call runs fn on the copy where Enter lets it, and reports whether it
// did and fn said it was done.
func (c *Copy) call(closing *atomic.Bool, fn func(fd uintptr) bool) bool {
	fd, ok := c.Enter(closing)
	if !ok {
		return false
	}
	done := fn(fd)
	c.Leave()
	return done
}

// Release closes the copy once no call is on it, and returns when it is
// closed, whichever call closed it. Its owner calls it after setting the
// closing flag its calls look at (a spin ends within a turn; a call
// waiting in the kernel, once the socket is shut down; a send waiting for
// room, within Cap), or on the goroutine that makes the calls, between
// them: a call on another goroutine that nothing ends would keep it
// waiting.
func (c *Copy) Release() {
	if c == nil {
		return
	}
	if !c.released.Swap(true) {
		waitFor(func() bool { return c.uses.Load() == 0 })
		c.cleanup.Stop()
		unix.Close(c.fd)
		c.closed.Store(true)
		return
	}
	waitFor(c.closed.Load)
}

// waitFor returns once done says so: yielding at first, then sleeping a
// little between looks, for a wait that may last a send's Cap.
func waitFor(done func() bool) {
	for i := 0; !done(); i++ {
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}
