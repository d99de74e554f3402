// Package spin reads a socket by spinning on non-blocking reads instead of
// sleeping in the kernel, for the transports' busy polling.
package spin

import (
	"os"
	"sync/atomic"
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
		if d := deadline.Load(); d != 0 && clock.MonoNow() >= d {
			return 0, os.ErrDeadlineExceeded
		}
	}
}
