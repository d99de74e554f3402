package stream

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// busyReader reads a connection by spinning on non-blocking reads instead
// of sleeping in the kernel: the stream version of the UDP batcher's busy
// polling. It stops at the read deadline and when the connection closes.
type busyReader struct {
	rc       syscall.RawConn
	deadline atomic.Int64 // Unix ns; 0: none
	closed   atomic.Bool
	buf      []byte
	n        int
	err      error
	fn       func(fd uintptr) bool // made once: a read does not allocate
}

func newBusyReader(c any) (*busyReader, error) {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil, errBusyUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &busyReader{rc: rc}
	b.fn = b.spin
	return b, nil
}

// spin reads into b.buf until something comes, the deadline passes or the
// connection closes. Its calls are raw: they never block, so the
// scheduler need not hear of them, and the spin stays on its thread.
func (b *busyReader) spin(fd uintptr) bool {
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b.buf))), uintptr(len(b.buf)))
		switch errno {
		case 0:
			b.n, b.err = int(n), nil
			if n == 0 {
				b.err = io.EOF
			}
			return true
		case unix.EAGAIN, unix.EINTR:
		default:
			b.n, b.err = 0, errno
			return true
		}
		if b.closed.Load() {
			b.n, b.err = 0, os.ErrClosed
			return true
		}
		if d := b.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			b.n, b.err = 0, os.ErrDeadlineExceeded
			return true
		}
	}
}

func (b *busyReader) read(p []byte) (int, error) {
	b.buf = p
	err := b.rc.Read(b.fn)
	b.buf = nil
	if err != nil {
		return 0, err
	}
	return b.n, b.err
}
