// Package kwait lets a reader that has a thread to itself wait for its
// socket inside the kernel, in one blocking system call, as a C tool's
// blocking recv does, instead of in the runtime's poller (a failed
// non-blocking read, a park, the poller's wake-up, and the read again:
// 3-5 µs of every loopback round trip at each end).
//
// A Socket leaves the runtime's epoll set for as long: while it is in it,
// everything that arrives on it (and every transmit stamp queued on it)
// also wakes whichever thread waits in epoll for the runtime's timers, two
// context switches more per round trip (measured: 3 per round trip instead
// of 1, p50 22.6 µs instead of 20.1 in a bare Go ping-pong with one timer
// pending). The runtime says nothing of its epoll instance, so the
// socket's entry is found in /proc/self/fdinfo and put back as it was
// (Rejoin); where that fails, Leave fails and the poller stays.
//
// Out of the poller, nothing on the socket may wait in it: a blocking
// socket's sends wait in the kernel too (SO_SNDTIMEO, blockCap at a time,
// up to their deadline; the runtime's deadline timers still end a write
// that waits in the poller), and both timeouts are counted in the
// kernel's ticks (jiffies), so deadlines are kept by waking early: a read
// waits at most half of what is left before its deadline less two ticks,
// and at most Cap, so that a deadline moved earlier by another goroutine
// (an interrupt) or a Close is seen within Cap; within three ticks of the
// deadline it waits one tick at a time, and may return up to a tick late.
package kwait

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cap is the longest a blocking call waits before it looks at its
// deadline (and at Close) again.
const Cap = 20 * time.Millisecond

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

// Socket is one socket's state out of the poller. It is used by one
// reader at a time.
type Socket struct {
	out   bool // the socket left the poller
	epfd  int  // the runtime's epoll instance
	entry unix.EpollEvent
	timeo int64 // SO_RCVTIMEO set on the socket, ns (0: none)
	reads int   // blocking reads since the last yield
}

// Out reports whether the socket is out of the poller (Leave).
func (s *Socket) Out() bool { return s.out }

// Leave takes fd out of the runtime's epoll set, keeping its entry, and
// makes it blocking, its sends waiting at most Cap at a time.
func (s *Socket) Leave(fd int) error {
	if s.out {
		return nil
	}
	epfd, entry, err := pollerEntry(fd)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("leave the poller: %w", err)
	}
	s.epfd, s.entry, s.out = epfd, entry, true
	tv := unix.NsecToTimeval(int64(Cap))
	if err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err == nil {
		if err = unix.SetNonblock(fd, false); err == nil {
			return nil
		}
	}
	_ = s.Rejoin(fd)
	return fmt.Errorf("blocking socket: %w", err)
}

// Rejoin makes fd non-blocking again, without timeouts, and puts it back
// in the runtime's epoll set with its entry. The kernel looks at the
// socket as it adds it: what came meanwhile is reported.
func (s *Socket) Rejoin(fd int) error {
	if !s.out {
		return nil
	}
	var zero unix.Timeval
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &zero)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &zero)
	s.timeo = 0
	if err := unix.SetNonblock(fd, true); err != nil {
		return err
	}
	s.out = false
	return unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &s.entry)
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

// InPoller reports whether fd is in the runtime's epoll set.
func InPoller(fd int) bool {
	_, _, err := pollerEntry(fd)
	return err == nil
}

// Wait readies a blocking read on fd now: it sets the socket's timeout
// for the read deadline (Unix ns, 0: none), and yields the thread now and
// then. expired says the deadline has passed: do not read.
func (s *Socket) Wait(fd uintptr, deadline int64) (expired bool) {
	if s.reads++; s.reads >= yieldEvery {
		s.reads = 0
		runtime.Gosched()
	}
	want := int64(Cap)
	if deadline != 0 {
		left := deadline - time.Now().UnixNano()
		if left <= 0 {
			return true
		}
		j := tick()
		want = max(min(want, (left-2*j)/2), 1) // 1 ns: one tick
		if s.timeo != 0 && s.timeo <= max(left-2*j, 1) && s.timeo >= want/2 {
			return false // the timeout set still wakes in time
		}
	} else if s.timeo == want {
		return false
	}
	tv := unix.NsecToTimeval(want)
	if unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) == nil {
		s.timeo = want
	}
	return false
}

// Read reads from fd, out of the poller, into p with blocking read(2)
// calls until data comes (n bytes, which may be 0: a stream's end), the
// call fails (its errno), the deadline passes (Unix ns; 0: none;
// os.ErrDeadlineExceeded) or closing is set (net.ErrClosed). Call it from a
// syscall.RawConn's Read, which holds the socket open meanwhile. It does
// not allocate.
func (s *Socket) Read(fd uintptr, p []byte, deadline *atomic.Int64, closing *atomic.Bool) (int, error) {
	for {
		if s.Wait(fd, deadline.Load()) {
			return 0, os.ErrDeadlineExceeded
		}
		n, _, errno := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EAGAIN, unix.EINTR:
			// The socket's timeout (or a signal): look at the deadline
			// and at Close again.
			if closing.Load() {
				return 0, net.ErrClosed
			}
		default:
			return 0, errno
		}
	}
}

// SendAgain says whether a blocking socket's send that found no room in
// Cap tries again: until the write deadline (Unix ns, 0: none).
func SendAgain(deadline int64) bool {
	return deadline == 0 || time.Now().UnixNano() < deadline
}

// Conn reads and writes a connected socket out of the poller, each call
// waiting in the kernel on the caller's thread: a read up to the read
// deadline, a write (whole) for room up to the write deadline. The
// deadlines are the owner's (Unix ns; 0: none), which its
// SetReadDeadline and SetWriteDeadline keep. A read and a write may run
// at once, on two goroutines; two reads or two writes may not.
type Conn struct {
	rc                  syscall.RawConn
	ks                  Socket
	deadline, wdeadline *atomic.Int64
	closing             atomic.Bool
	rbuf, wbuf          []byte
	rn, wn              int
	rerr, werr          error
	readFn, writeFn     func(fd uintptr) bool // made once: a call does not allocate
}

// NewConn takes rc's socket out of the poller (see Socket.Leave) for
// reads and writes through the Conn.
func NewConn(rc syscall.RawConn, deadline, wdeadline *atomic.Int64) (*Conn, error) {
	c := &Conn{rc: rc, deadline: deadline, wdeadline: wdeadline}
	c.readFn, c.writeFn = c.recv, c.send
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = c.ks.Leave(int(fd)) }); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return c, nil
}

// Rejoin puts the socket back in the poller; the Conn is not to be used
// after.
func (c *Conn) Rejoin() error {
	var serr error
	if err := c.rc.Control(func(fd uintptr) { serr = c.ks.Rejoin(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// Closing tells a read or write waiting in the kernel that the socket is
// closing (it ends within Cap); call it before closing the socket.
func (c *Conn) Closing() { c.closing.Store(true) }

func (c *Conn) recv(fd uintptr) bool {
	c.rn, c.rerr = c.ks.Read(fd, c.rbuf, c.deadline, &c.closing)
	return true
}

// Read reads once into p, as read(2) does (0 bytes: a stream's end, or an
// empty datagram), waiting in the kernel.
func (c *Conn) Read(p []byte) (int, error) {
	c.rbuf = p
	err := c.rc.Read(c.readFn)
	c.rbuf = nil
	if err != nil {
		return 0, err
	}
	if errno, ok := c.rerr.(syscall.Errno); ok {
		return 0, &os.SyscallError{Syscall: "read", Err: errno}
	}
	return c.rn, c.rerr
}

func (c *Conn) send(fd uintptr) bool {
	c.wn, c.werr = 0, nil
	for {
		p := c.wbuf[c.wn:]
		n, _, errno := unix.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch errno {
		case 0:
			if c.wn += int(n); c.wn >= len(c.wbuf) {
				return true // all of it (or an empty datagram)
			}
		case unix.EAGAIN:
			if !SendAgain(c.wdeadline.Load()) {
				c.werr = os.ErrDeadlineExceeded
				return true
			}
			if c.closing.Load() {
				c.werr = net.ErrClosed
				return true
			}
		case unix.EINTR:
		default:
			c.werr = &os.SyscallError{Syscall: "write", Err: errno}
			return true
		}
	}
}

// Write writes p whole, waiting in the kernel for room (Cap at a time)
// until the write deadline; it returns what it wrote before an error.
func (c *Conn) Write(p []byte) (int, error) {
	c.wbuf = p
	err := c.rc.Write(c.writeFn)
	c.wbuf = nil
	if err != nil {
		return 0, err
	}
	return c.wn, c.werr
}
