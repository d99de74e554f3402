package stream

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/kwait"
)

// blockConn reads and writes a connection out of the runtime's poller,
// waiting inside the kernel on the caller's thread (see package kwait):
// the stream version of the UDP batcher's blocking reads. Reads stop at
// the read deadline and when the connection closes; writes wait for room
// up to the write deadline.
type blockConn struct {
	rc        syscall.RawConn
	ks        kwait.Socket
	deadline  *atomic.Int64 // the Conn's, Unix ns; 0: none
	wdeadline *atomic.Int64
	closing   atomic.Bool
	// A read's and a write's buffers and results, apart: a listener's
	// peer reads on one goroutine and writes held replies on another.
	rbuf, wbuf []byte
	rn, wn     int
	rerr, werr error
	readFn     func(fd uintptr) bool // made once: a call does not allocate
	writeFn    func(fd uintptr) bool
}

// SetBlockingReads makes reads wait for data inside the kernel, on the
// reader's thread, as a blocking recv does in C, instead of in the
// runtime's poller: the lightest wait there is for a reader that has its
// thread to itself (runtime.LockOSThread), such as a ping-pong's. Read
// and write deadlines still hold (to the kernel's tick), interrupts and
// Close included (seen within kwait.Cap). Not with busy polling, and for
// TCP and Unix sockets on Linux only.
func (c *Conn) SetBlockingReads(on bool) error {
	if !on {
		b := c.block.Swap(nil)
		if b == nil {
			return nil
		}
		var serr error
		if err := b.rc.Control(func(fd uintptr) { serr = b.ks.Rejoin(int(fd)) }); err != nil {
			return err
		}
		return serr
	}
	if c.block.Load() != nil {
		return nil
	}
	if c.busy != nil {
		return errors.New("stream: blocking reads with busy polling")
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return errBusyUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	b := &blockConn{rc: rc, deadline: &c.rdeadline, wdeadline: &c.wdeadline}
	b.readFn, b.writeFn = b.recv, b.send
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = b.ks.Leave(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	c.block.Store(b)
	return nil
}

// recv reads into b.rbuf, waiting in the kernel.
func (b *blockConn) recv(fd uintptr) bool {
	b.rn, b.rerr = b.ks.Read(fd, b.rbuf, b.deadline, &b.closing)
	if b.rerr == nil && b.rn == 0 {
		b.rerr = io.EOF
	}
	return true
}

func (b *blockConn) read(p []byte) (int, error) {
	b.rbuf = p
	err := b.rc.Read(b.readFn)
	b.rbuf = nil
	if err != nil {
		return 0, err
	}
	if b.rerr == os.ErrDeadlineExceeded || b.rerr == os.ErrClosed || b.rerr == io.EOF {
		return b.rn, b.rerr
	}
	if b.rerr != nil {
		return 0, &os.SyscallError{Syscall: "read", Err: b.rerr}
	}
	return b.rn, nil
}

// send writes b.wbuf whole, waiting in the kernel for room (kwait.Cap at
// a time) until the write deadline.
func (b *blockConn) send(fd uintptr) bool {
	b.wn, b.werr = 0, nil
	for b.wn < len(b.wbuf) {
		p := b.wbuf[b.wn:]
		n, _, errno := unix.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch errno {
		case 0:
			b.wn += int(n)
		case unix.EAGAIN:
			if !kwait.SendAgain(b.wdeadline.Load()) {
				b.werr = os.ErrDeadlineExceeded
				return true
			}
			if b.closing.Load() {
				b.werr = os.ErrClosed
				return true
			}
		case unix.EINTR:
		default:
			b.werr = &os.SyscallError{Syscall: "write", Err: errno}
			return true
		}
	}
	return true
}

func (b *blockConn) write(p []byte) (int, error) {
	b.wbuf = p
	err := b.rc.Write(b.writeFn)
	b.wbuf = nil
	if err != nil {
		return 0, err
	}
	return b.wn, b.werr
}
