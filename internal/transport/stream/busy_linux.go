package stream

import (
	"io"
	"sync/atomic"
	"syscall"

	"github.com/volley-net/volley/internal/spin"
)

// busySupported says whether SetBusyPoll can make reads spin here.
const busySupported = true

// busyReader reads a connection by spinning on non-blocking reads instead
// of sleeping in the kernel: the stream version of the UDP batcher's busy
// polling. It stops at the read deadline and when the connection closes.
type busyReader struct {
	rc       syscall.RawConn
	deadline atomic.Int64 // clock.Deadline; 0: none
	closed   atomic.Bool
	buf      []byte
	n        int
	err      error
	fn       func(fd uintptr) bool // made once: a read does not allocate
}

func newBusyReader(c any) (*busyReader, error) {
	sc, ok := c.(syscall.Conn)
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
// connection closes.
func (b *busyReader) spin(fd uintptr) bool {
	b.n, b.err = spin.Read(fd, b.buf, &b.deadline, &b.closed)
	if b.err == nil && b.n == 0 {
		b.err = io.EOF
	}
	return true
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
