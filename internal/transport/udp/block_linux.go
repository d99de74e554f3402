package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Blocking reads (SetBlockingReads): the reader's thread waits for a
// datagram inside one recvmmsg, as a C tool's blocking recv does, instead
// of in the runtime's poller (a failed non-blocking read, a park, the
// poller's wake-up, and the read again: 3-5 µs of every loopback round
// trip at each end, and one more read per probe with kernel stamps, whose
// error-queue entries wake the poller).
//
// The socket is made blocking, and it leaves the runtime's epoll set for
// as long: while it is in it, every datagram that arrives (and every
// transmit stamp) also wakes whichever thread waits in epoll for the
// runtime's timers, two context switches more per round trip (measured:
// 3 per round trip instead of 1, p50 22.6 µs instead of 20.1 in a bare Go
// ping-pong with one timer pending). The runtime says nothing of its epoll
// instance, so the socket's entry is found in /proc/self/fdinfo and put
// back as it was (SetBlockingReads(false)); where that fails, blocking
// reads are refused and the poller stays.
//
// Out of the poller, nothing on the socket may wait in it: sends wait in
// the kernel too (SO_SNDTIMEO), and both timeouts are counted in the
// kernel's ticks (jiffies), so deadlines are kept by waking early: a read
// waits at most half of what is left before its deadline less two ticks,
// and at most blockCap, so that a deadline moved earlier by another
// goroutine (an interrupt) is seen within blockCap; within three ticks of
// the deadline it waits one tick at a time, and may return up to a tick
// late.

// blockCap is the longest a blocking read waits before it looks at the
// read deadline again.
const blockCap = 20 * time.Millisecond

// yieldEvery is how many blocking reads pass between two yields of the
// reader's thread: a locked thread that goes from one system call to the
// next makes the runtime's monitor take its P away again and again
// (../shared/PERF-NOTES.md); a yield now and then stops that.
const yieldEvery = 256

// tick is the kernel's timer tick (the resolution of the coarse clock,
// which advances once a tick), once per process.
var tick = sync.OnceValue(func() int64 {
	var ts unix.Timespec
	if unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts) != nil || ts.Nano() <= 0 {
		return int64(10 * time.Millisecond) // HZ=100, the coarsest there is
	}
	return ts.Nano()
})

// blocking is the batcher's part for blocking reads.
type blocking struct {
	block     bool
	timeo     int64        // SO_RCVTIMEO set on the socket, ns (0: none)
	wdeadline atomic.Int64 // the write deadline, Unix ns (0: none)
	closing   atomic.Bool  // Close was called: a blocking read ends
	reads     int          // blocking reads since the last yield
	blockFn   func(fd uintptr) bool
	to        toSender // PacketConn.WriteTo
	epfd      int      // the runtime's epoll instance, which the socket left
	entry     unix.EpollEvent
}

// setBlocking makes the socket blocking and takes it out of the runtime's
// poller (on), or puts it back as it was.
func (b *batcher) setBlocking(on bool) error {
	if on == b.block {
		return nil
	}
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		if on {
			serr = b.leavePoller(int(fd))
			return
		}
		serr = b.rejoinPoller(int(fd))
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if b.blockFn == nil {
		b.blockFn = b.recvBlock
	}
	b.block = on
	return nil
}

// leavePoller takes fd out of the runtime's epoll set, keeping its entry,
// and makes it blocking, sends waiting at most blockCap at a time.
func (b *batcher) leavePoller(fd int) error {
	epfd, entry, err := pollerEntry(fd)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("leave the poller: %w", err)
	}
	b.epfd, b.entry = epfd, entry
	tv := unix.NsecToTimeval(int64(blockCap))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err == nil {
		err = unix.SetNonblock(fd, false)
		if err == nil {
			return nil
		}
	}
	_ = b.rejoinPoller(fd)
	return fmt.Errorf("blocking socket: %w", err)
}

// rejoinPoller makes fd non-blocking again, without timeouts, and puts it
// back in the runtime's epoll set with its entry.
func (b *batcher) rejoinPoller(fd int) error {
	var zero unix.Timeval
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &zero)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &zero)
	b.timeo = 0
	if err := unix.SetNonblock(fd, true); err != nil {
		return err
	}
	// Level or edge, the kernel looks at the socket as it adds it: what
	// came meanwhile is reported.
	return unix.EpollCtl(b.epfd, unix.EPOLL_CTL_ADD, fd, &b.entry)
}

// pollerEntry finds the epoll instance that holds fd (the runtime's
// poller: the process's only one that does) and fd's entry in it, from
// /proc/self/fdinfo.
func pollerEntry(fd int) (epfd int, entry unix.EpollEvent, err error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, entry, err
	}
	found := 0
	for _, f := range fds {
		if l, _ := os.Readlink("/proc/self/fd/" + f.Name()); l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + f.Name())
		if err != nil {
			continue
		}
		// "tfd:        5 events: 8000201d data: 3fc3b9f248000001  pos:0 ..."
		for line := range strings.Lines(string(info)) {
			var tfd int
			var events uint32
			var data uint64
			if n, _ := fmt.Sscanf(line, "tfd: %d events: %x data: %x", &tfd, &events, &data); n != 3 || tfd != fd {
				continue
			}
			epfd, _ = strconv.Atoi(f.Name())
			entry = unix.EpollEvent{Events: events}
			// The 64-bit data, as the struct splits it (little-endian).
			*(*uint64)(unsafe.Pointer(&entry.Fd)) = data
			found++
		}
	}
	if found != 1 {
		return 0, entry, fmt.Errorf("the socket is in %d epoll sets, not in the runtime's alone: %w", found, errors.ErrUnsupported)
	}
	return epfd, entry, nil
}

// setTimeo sets the socket's SO_RCVTIMEO to d ns (0: none).
func setTimeo(fd uintptr, d int64) error {
	tv := unix.NsecToTimeval(d)
	return unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// recvBlock is recvmmsg for blocking reads: it waits in the kernel for
// the first datagram, up to the read deadline.
func (b *batcher) recvBlock(fd uintptr) bool {
	for {
		if expired := b.blockWait(fd); expired {
			b.rn, b.rerr = 0, os.ErrDeadlineExceeded
			return true
		}
		if b.reads++; b.reads >= yieldEvery {
			b.reads = 0
			runtime.Gosched()
		}
		// A call the scheduler hears of: it blocks, and the thread's P
		// may go to other goroutines meanwhile.
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), uintptr(b.rn), unix.MSG_WAITFORONE, 0, 0)
		switch errno {
		case 0:
			b.rn, b.rerr = int(n), nil
			return true
		case unix.EAGAIN, unix.EINTR:
			// The socket's timeout (or a signal): look at the deadline
			// again, and whether the socket is closing (Close waits for
			// this read).
			if b.closing.Load() {
				b.rn, b.rerr = 0, net.ErrClosed
				return true
			}
		default:
			b.rn, b.rerr = 0, errno
			return true
		}
	}
}

// blockWait sets the socket's timeout for a blocking read now, and says
// whether the read deadline has passed.
func (b *batcher) blockWait(fd uintptr) (expired bool) {
	want := int64(blockCap)
	if d := b.deadline.Load(); d != 0 {
		left := d - time.Now().UnixNano()
		if left <= 0 {
			return true
		}
		j := tick()
		want = max(min(want, (left-2*j)/2), 1) // 1 ns: one tick
		if b.timeo != 0 && b.timeo <= max(left-2*j, 1) && b.timeo >= want/2 {
			return false // the timeout set still wakes in time
		}
	} else if b.timeo == want {
		return false
	}
	if setTimeo(fd, want) == nil {
		b.timeo = want
	}
	return false
}

// sendFlags are a send's flags, and whether to wait in the kernel for
// room: a blocking socket's sends wait there (up to blockCap a call), out
// of the poller.
func (b *batcher) sendFlags() (flags int, wait bool) {
	if b.block {
		return 0, true
	}
	return unix.MSG_DONTWAIT, false
}

// sendAgain says whether a blocking socket's send that found no room in
// blockCap tries again: until the write deadline.
func (b *batcher) sendAgain() bool {
	d := b.wdeadline.Load()
	return d == 0 || time.Now().UnixNano() < d
}

// setWriteDeadline records the write deadline for blocking sends.
func (b *batcher) setWriteDeadline(t time.Time) {
	var d int64
	if !t.IsZero() {
		d = t.UnixNano()
	}
	b.wdeadline.Store(d)
}

// toSender is PacketConn.WriteTo for a blocking socket: one datagram to
// an address with MSG_DONTWAIT, so that a full buffer waits in the poller
// (write deadline and all), from any goroutine.
type toSender struct {
	mu      sync.Mutex
	sa      unix.RawSockaddrInet6
	namelen uint32
	buf     []byte
	n       int
	err     error
	fn      func(fd uintptr) bool
	again   func() bool // the batcher's sendAgain
}

// sendto sends on a blocking socket (out of the poller), waiting in the
// kernel for room up to the write deadline.
func (t *toSender) sendto(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(t.buf))), uintptr(len(t.buf)), 0,
			uintptr(unsafe.Pointer(&t.sa)), uintptr(t.namelen))
		switch errno {
		case 0:
			t.n, t.err = int(n), nil
		case unix.EAGAIN:
			if t.again() {
				continue
			}
			t.n, t.err = 0, os.ErrDeadlineExceeded
		case unix.EINTR:
			continue
		default:
			t.n, t.err = 0, errno
		}
		return true
	}
}

// writeTo sends p to addr with one sendto that does not wait in the
// kernel.
func (b *batcher) writeTo(p []byte, addr netip.AddrPort) (int, error) {
	t := &b.to
	t.mu.Lock()
	defer t.mu.Unlock()
	namelen, ok := b.putAddr(&t.sa, addr)
	if !ok {
		return 0, errors.New("udp: an IPv6 destination on an IPv4 socket")
	}
	if t.fn == nil {
		t.fn, t.again = t.sendto, b.sendAgain
	}
	t.namelen, t.buf = namelen, p
	err := b.rc.Write(t.fn)
	t.buf = nil
	if err != nil {
		return 0, err
	}
	if t.err == os.ErrDeadlineExceeded {
		return 0, t.err
	}
	if t.err != nil {
		return 0, wrapErrno("sendto", t.err)
	}
	b.txSent.Add(1)
	return t.n, nil
}

// markClosing tells a blocking read that the socket is closing.
func (b *batcher) markClosing() { b.closing.Store(true) }
