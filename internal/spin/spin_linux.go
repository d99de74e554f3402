// Package spin reads a socket by spinning on non-blocking reads instead of
// sleeping in the kernel, for the transports' busy polling.
package spin

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
)

// Read reads from the socket fd into p with raw recvfrom(2) calls that do
// not wait (MSG_DONTWAIT: fd may be a blocking socket out of the
// runtime's poller), over and over, until data comes (n bytes, which may
// be 0: a stream's end or an empty datagram), the call fails (its errno),
// the deadline passes (clock.Deadline; 0: none; os.ErrDeadlineExceeded)
// or closed is set (os.ErrClosed; closed may be nil). The calls are raw:
// they never block, so the scheduler need not hear of them, and the spin
// stays on its thread. Call it from a syscall.RawConn's Read, which holds
// the socket open meanwhile. It does not allocate.
func Read(fd uintptr, p []byte, deadline *atomic.Int64, closed *atomic.Bool) (int, error) {
	return ReadFor(fd, p, deadline, closed, 0)
}

// ReadFor is Read that also stops once it has spun quiet with nothing to
// read (0: no limit), with ErrQuiet: for a spinner that holds a core
// others may want.
func ReadFor(fd uintptr, p []byte, deadline *atomic.Int64, closed *atomic.Bool, quiet time.Duration) (int, error) {
	var until int64 // when the quiet spell ends; set at the first empty read
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EAGAIN, unix.EINTR:
		default:
			return 0, errno
		}
		if closed != nil && closed.Load() {
			return 0, os.ErrClosed
		}
		d := deadline.Load()
		if d == 0 && quiet == 0 {
			continue
		}
		now := clock.MonoNow()
		if d != 0 && now >= d {
			return 0, os.ErrDeadlineExceeded
		}
		switch {
		case quiet == 0:
		case until == 0:
			until = now + int64(quiet)
		case now >= until:
			return 0, ErrQuiet
		}
	}
}
