package stream

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/spin"
)

// busySupported says whether SetBusyPoll can make reads spin here.
const busySupported = true

// busyReader reads a connection by spinning on non-blocking reads instead
// of sleeping in the kernel: the stream version of the UDP batcher's busy
// polling. It stops at the read deadline and when the connection closes.
//
// Its writes are raw non-blocking sends too, which the scheduler does not
// hear of, as the UDP batcher's are. A write through the poller is a
// system call the scheduler watches, and a spinning goroutine never
// parks, so its time slice is always over 10 ms old: the runtime's
// monitor then took its processor in the middle of a write, and, having
// taken one, looked again every 20 µs (measured: 2.9-3.6k monitor
// wake-ups a second at each end of a busy TCP ping-pong, each one a CPU
// taken from a spinner on 2 cores). Only a full buffer waits in the
// poller.
//
// Reads and writes go straight to a copy of the connection's descriptor
// (kwait.Copy), not through the RawConn (A/B of 4 alternating rounds, both
// ends busy: p50 8.35 -> 8.20 µs), which the busyReader releases at the
// Conn's Close or when the Conn stops spinning, on its reader's goroutine.
type busyReader struct {
	rc       syscall.RawConn
	cp       *kwait.Copy   // nil: calls go through rc
	deadline *atomic.Int64 // the Conn's read deadline: clock.Deadline; 0: none
	closed   *atomic.Bool  // the Conn's: Close was called
	quiet    time.Duration // how long a read spins with nothing to read (0: no limit), then spin.ErrQuiet
	buf      []byte
	n        int
	err      error
	fn       func(fd uintptr) bool // made once: a read does not allocate
	mark     clock.ReadMark        // the Conn's read clock

	// A write's: one at a time (the caller's to see to, as
	// kwait.Conn's; a reflector's peer writes under its peer.wmu).
	wbuf []byte
	wn   int
	werr error
	wfn  func(fd uintptr) bool
}

func newBusyReader(c any, deadline *atomic.Int64, closed *atomic.Bool, quiet time.Duration, now func() int64) (*busyReader, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errBusyUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &busyReader{rc: rc, cp: kwait.NewCopy(rc), deadline: deadline, closed: closed, quiet: quiet}
	b.mark.SetClock(now)
	b.fn, b.wfn = b.spin, b.send
	return b, nil
}

// release closes b's copy of the descriptor (kwait.Copy.Release): after
// the Conn's Close, whose flag ends a spinning read within a turn, or on
// its reader's goroutine.
func (b *busyReader) release() { b.cp.Release() }

// spin reads into b.buf until something comes, the deadline passes, the
// connection closes or b.quiet passes with nothing.
func (b *busyReader) spin(fd uintptr) bool {
	b.n, b.err = spin.ReadFor(fd, b.buf, b.deadline, b.closed, b.quiet)
	if b.err == nil && b.n == 0 {
		b.err = io.EOF
	}
	b.mark.Got(b.n)
	return true
}

// setClock gives b the Conn's read clock; on the reader's goroutine.
func (b *busyReader) setClock(now func() int64) { b.mark.SetClock(now) }

// readAt returns the read clock's reading as the last read that got
// bytes returned (0: none).
func (b *busyReader) readAt() int64 { return b.mark.At() }

func (b *busyReader) read(p []byte) (int, error) {
	b.buf = p
	err := b.cp.Read(b.rc, b.closed, b.fn)
	b.buf = nil
	if err != nil {
		return 0, err
	}
	return b.n, b.err
}

// send sends b.wbuf with raw calls that do not wait, until it is all
// sent (true), a call fails (true, b.werr), or the socket is full (false:
// the poller waits for room, up to the write deadline).
func (b *busyReader) send(fd uintptr) bool {
	for len(b.wbuf) > 0 {
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b.wbuf))), uintptr(len(b.wbuf)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			b.wn += int(n)
			b.wbuf = b.wbuf[n:]
		case unix.EAGAIN:
			return false
		case unix.EINTR:
		default:
			b.werr = &os.SyscallError{Syscall: "write", Err: errno}
			return true
		}
	}
	return true
}

// write sends p whole, or fails with how much it sent. One write at a
// time.
func (b *busyReader) write(p []byte) (int, error) {
	b.wbuf, b.wn, b.werr = p, 0, nil
	// A full socket waits in the poller for room: what was sent is in
	// b.wn, the rest in b.wbuf.
	err := b.cp.Write(b.rc, b.closed, b.wfn)
	b.wbuf = nil
	if err != nil {
		renameRawWrite(err)
		return b.wn, err
	}
	return b.wn, b.werr
}

// renameRawWrite has err, from a raw connection's Write, say "write" as
// the poller's write does, not "raw-write". Only on errors: the variable
// errors.As fills escapes.
func renameRawWrite(err error) {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "raw-write" {
		oe.Op = "write"
	}
}
