package udp

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/spin"
)

// busyPoll is the batcher's part for busy polling: reads spin on the
// socket until a datagram, the read deadline (clock.Deadline, 0: none) or
// Close, instead of sleeping in the kernel, and a busy client's single
// reads and writes are raw calls that the scheduler does not hear of.
//
// A spinning socket leaves the runtime's poller (kwait.Socket.Leave), as
// a blocking one does: in it, every datagram received and every send's
// freed buffer woke the thread that waits in epoll for the runtime's
// timers, which then took a CPU from one of the two spinners (measured
// on the reflector: 14k epoll wake-ups a second, and a tenth of the
// round trips 20-70 µs late). Its reads spin with MSG_DONTWAIT; its
// sends are raw calls that do not wait, and only a full buffer waits in
// the kernel for room, up to the write deadline (sendCall).
type busyPoll struct {
	busy     bool
	spinOut  atomic.Bool // busy, and out of the poller
	deadline atomic.Int64

	// A busy client's single writes: a raw send, no scheduler call.
	wb       []byte
	wres     int
	wErr     error
	writeFn1 func(fd uintptr) bool

	// A busy client's single reads: raw recvfrom(2) calls (spin.Read).
	rb      []byte
	rres    int
	readFn1 func(fd uintptr) bool
}

// send1 sends b.wb on a connected socket, as sendCall says: a busy
// socket's with a raw call the scheduler does not hear of, a blocking
// socket's waiting in the kernel for room, up to the write deadline.
func (b *batcher) send1(fd uintptr) bool {
	call, flags, wait := b.sendCall()
	for {
		n, _, errno := call(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b.wb))), uintptr(len(b.wb)), uintptr(flags), 0, 0)
		switch errno {
		case 0:
			b.wres, b.wErr = int(n), nil
		case unix.EAGAIN:
			again, err := b.full(&call, &flags, wait)
			if err != nil {
				b.wres, b.wErr = 0, err
				return true
			}
			if !again {
				return false // wait in the poller for room
			}
			continue
		case unix.EINTR:
			continue
		default:
			b.wres, b.wErr = 0, errno
		}
		return true
	}
}

// write1 sends one datagram on a connected socket, as send1 does.
func (b *batcher) write1(p []byte) (int, error) {
	b.wb = p
	err := b.viaWrite(b.writeFn1)
	b.wb = nil
	if err != nil {
		return 0, err
	}
	if b.wErr == os.ErrDeadlineExceeded || b.wErr == net.ErrClosed {
		return 0, b.wErr
	}
	if b.wErr != nil {
		return 0, wrapErrno("send", b.wErr)
	}
	b.txSent.Add(1)
	return b.wres, nil
}

// setBusyPoll turns busy polling on or off, taking the socket out of the
// runtime's poller or putting it back. Where it cannot leave (see
// kwait.Socket.Leave), it spins in the poller.
func (b *batcher) setBusyPoll(on bool) error {
	if on == b.busy {
		return nil
	}
	err := b.leavePoller(on)
	if !on && err != nil {
		return err
	}
	b.spinOut.Store(on && err == nil)
	b.busy = on
	return nil
}

// setDeadline records the read deadline for busy polls and blocking reads,
// and wakes a blocking read for one in the past.
func (b *batcher) setDeadline(t time.Time) {
	d := clock.Deadline(t)
	b.deadline.Store(d)
	if d != 0 && d <= clock.MonoNow() && b.block.Load() {
		b.ks.Wake() // an interrupt: the blocked read ends now
	}
}

// write writes one datagram: with a raw call when busy polling, and in
// the kernel, up to the write deadline, when the socket is blocking
// (send1).
func (c *Conn) write(b []byte) (int, error) {
	if c.busy || c.block.Load() {
		return c.b.write1(b)
	}
	n, err := c.UDPConn.Write(b)
	if err == nil && c.b != nil {
		c.b.txSent.Add(1)
	}
	return n, err
}

// read1 reads one datagram from a connected socket by spinning on raw
// recvfrom(2) calls, the lightest receive there is, until it comes, the
// read deadline passes or Close is called.
func (b *batcher) read1(p []byte) (int, error) {
	b.rb = p
	err := b.viaRead(b.readFn1)
	b.rb = nil
	if err != nil {
		return 0, err
	}
	if b.rerr != nil {
		switch b.rerr {
		case os.ErrDeadlineExceeded:
			return 0, b.rerr
		case os.ErrClosed:
			return 0, net.ErrClosed // spin.Read's word for it
		}
		return 0, wrapErrno("read", b.rerr)
	}
	return b.rres, nil
}

func (b *batcher) spinRead1(fd uintptr) bool {
	b.rres, b.rerr = spin.Read(fd, b.rb, &b.deadline, &b.closing)
	if b.rerr == nil {
		b.markRead()
	}
	return true
}

// spinRecv receives for a busy recvmmsg whose queue was empty: it spins on
// raw receives until one gets something or fails, and returns what that
// call returned, or stop when the read deadline passed
// (os.ErrDeadlineExceeded) or Close was called (net.ErrClosed) first.
func (b *batcher) spinRecv(fd uintptr) (n uintptr, errno syscall.Errno, stop error) {
	errno = unix.EAGAIN
	for errno == unix.EAGAIN {
		if b.closing.Load() {
			return 0, 0, net.ErrClosed
		}
		if d := b.deadline.Load(); d != 0 && clock.MonoNow() >= d {
			return 0, 0, os.ErrDeadlineExceeded
		}
		// A raw call: it never blocks, so the scheduler need not hear of
		// it, and the spin stays on its thread. The queue was empty, so
		// the spin asks for one datagram with the lightest call there is
		// (busy p50 against sockperf's 1.16-1.21x, from 1.23-1.27x with
		// recvmmsg), or, where the datagram's stamps or path are wanted,
		// the lightest that brings control messages: recvmsg(2). A
		// recvmmsg for the batch tried a second receive after the
		// datagram came, before returning it: a reflector's reply waited
		// for a receive that found nothing.
		if b.rctl != nil {
			var got uintptr
			got, _, errno = unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0].Hdr)), unix.MSG_DONTWAIT)
			if errno == 0 {
				b.rhdrs[0].Len = uint32(got)
				n = 1
			}
			continue
		}
		namelen := uint32(unsafe.Sizeof(b.rnames[0]))
		var got uintptr
		got, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(b.riovs[0].Base)), uintptr(b.riovs[0].Len), unix.MSG_DONTWAIT,
			uintptr(unsafe.Pointer(&b.rnames[0])), uintptr(unsafe.Pointer(&namelen)))
		if errno == 0 {
			b.rhdrs[0].Len = uint32(got)
			n = 1
		}
	}
	return n, errno, nil
}
