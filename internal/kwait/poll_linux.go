package kwait

import (
	"net"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
)

// The reads of a Unix stream socket out of the poller: they wait in
// ppoll(2), not in read(2) (see Socket.pollFirst).

// unixStream reports whether fd is a Unix stream socket (see pollFirst).
func unixStream(fd int) bool {
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || dom != unix.AF_UNIX {
		return false
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && typ == unix.SOCK_STREAM
}

// pollRead is Read for a socket that waits in ppoll (pollFirst): up to
// the deadline, Cap at a time, then a read that does not wait. What is
// there is read even past the deadline, as Read does; a Wake's signal or
// Closing's shutdown ends the wait at once.
func (s *Socket) pollRead(fd uintptr, p []byte, deadline *atomic.Int64, closing *atomic.Bool) (int, error) {
	for {
		if err := s.poll(fd, deadline.Load()); err != nil {
			return 0, err
		}
		if closing.Load() {
			return 0, net.ErrClosed
		}
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
		if closing.Load() {
			// Closing's shutdown ends the stream as the peer's end
			// would: a read that raced it says closed, not EOF.
			return 0, net.ErrClosed
		}
		switch errno {
		case 0:
			return int(n), nil
		case unix.EAGAIN, unix.EINTR:
			if dl := deadline.Load(); dl != 0 && clock.MonoNow() >= dl {
				return 0, os.ErrDeadlineExceeded
			}
		default:
			return 0, errno
		}
	}
}

// poll waits in ppoll until fd has data, Cap passes or the deadline dl
// (clock.Deadline, 0: none) does, or a signal comes; not at all when dl has
// passed.
func (s *Socket) poll(fd uintptr, dl int64) error {
	now := clock.MonoNow()
	wait := int64(Cap)
	if dl != 0 {
		wait = min(wait, dl-now)
	}
	if wait <= 0 || !s.Block(dl, now) {
		return nil
	}
	s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	s.ts = unix.NsecToTimespec(wait)
	_, err := unix.Ppoll(s.pfd[:], &s.ts, nil)
	s.Unblock()
	if err != nil && err != unix.EINTR {
		return &os.SyscallError{Syscall: "ppoll", Err: err}
	}
	return nil
}
