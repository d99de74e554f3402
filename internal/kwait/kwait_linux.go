package kwait

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
)

// Cap is the longest a blocking call waits before it looks at its
// deadline (and at Close) again.
const Cap = 20 * time.Millisecond

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
	found bool // epfd and entry were read (they stay the socket's)
	epfd  int  // the runtime's epoll instance
	entry unix.EpollEvent
	timeo int64 // SO_RCVTIMEO set on the socket, ns (0: none)
	// The reader's thread (it is locked to it: Leave is called there),
	// and whether it waits in a read now, for Wake.
	tid     int
	waiting atomic.Bool
	// pollFirst: reads wait in ppoll(2) for data, then read what came
	// without waiting (pollRead). Set for Unix stream sockets, whose
	// blocking read wakes at every read the peer makes of what this end
	// sent: the kernel frees the peer's read buffer as this end's, and
	// the write-space wake-up that follows (sock_wfree →
	// unix_write_space) reaches every sleeper on this end's socket,
	// which a blocking read's wait (unix_stream_data_wait) does not sort
	// out. A ping-pong's reader woke twice a reply, 1.6-1.8 context
	// switches a round trip against 1.1. ppoll's wait asks for POLLIN
	// alone, and the kernel leaves it asleep for the others.
	// ReadRest, for the rest of a message begun, reads as other sockets
	// do: the peer is writing, not reading, and ppoll would be one call
	// more for each part (a 4 MB reply's p50 went 574-616 µs → 626-692
	// µs).
	pollFirst bool
	pfd       [1]unix.PollFd
	ts        unix.Timespec
}

// Leave takes fd out of the runtime's epoll set, keeping its entry, and
// makes it blocking, its sends waiting at most Cap at a time. The entry
// is read from /proc once per Socket (a read that grows with the
// poller's other sockets: 2-10 ms with 1,000 of them); after a Rejoin it is
// the one Rejoin put back.
func (s *Socket) Leave(fd int) error {
	if s.out {
		return nil
	}
	epfd, entry := s.epfd, s.entry
	var err error
	if !s.found {
		if epfd, entry, err = pollerEntry(fd); err != nil {
			return err
		}
		s.pollFirst = unixStream(fd)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("leave the poller: %w", err)
	}
	s.epfd, s.entry, s.out, s.found = epfd, entry, true, true
	s.tid = unix.Gettid()
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
	// The runtime keeps one epoll instance for the process's life: the
	// one found last is looked at first.
	if ep := int(lastPoller.Load()); ep > 0 {
		if l, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(ep)); l == "anon_inode:[eventpoll]" {
			if info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(ep)); err == nil {
				if e, ok := parseEntry(string(info), fd); ok {
					return ep, e, nil
				}
			}
		}
	}
	epfd, entry, err = scanPollers(fd)
	if err == nil {
		lastPoller.Store(int32(epfd))
	}
	return epfd, entry, err
}

// lastPoller is the epoll instance pollerEntry found last.
var lastPoller atomic.Int32

// scanPollers looks for fd's entry in every epoll instance the process
// has.
func scanPollers(fd int) (epfd int, entry unix.EpollEvent, err error) {
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
		if e, ok := parseEntry(string(info), fd); ok {
			epfd, _ = strconv.Atoi(f.Name())
			entry = e
			found++
		}
	}
	if found != 1 {
		return 0, entry, fmt.Errorf("%w: the socket is in %d epoll sets, not in the runtime's alone", ErrNoPoller, found)
	}
	return epfd, entry, nil
}

// ErrNoPoller: the socket's entry in the runtime's epoll set could not be
// found; it stays in the poller.
var ErrNoPoller = errors.New("kwait: the runtime's poller entry was not found")

// parseEntry finds fd's entry in an epoll instance's fdinfo text, whose
// lines for its targets read
// "tfd:        5 events: 8000201d data: 3fc3b9f248000001  pos:0 ...".
func parseEntry(info string, fd int) (unix.EpollEvent, bool) {
	for line := range strings.Lines(info) {
		if !strings.HasPrefix(line, "tfd:") {
			continue
		}
		var tfd int
		var events uint32
		var data uint64
		if n, _ := fmt.Sscanf(line, "tfd: %d events: %x data: %x", &tfd, &events, &data); n != 3 || tfd != fd {
			continue
		}
		entry := unix.EpollEvent{Events: events}
		// The 64-bit data, written whole where the struct keeps it
		// (Fd and Pad), in the machine's byte order as the kernel reads it.
		*(*uint64)(unsafe.Pointer(&entry.Fd)) = data
		return entry, true
	}
	return unix.EpollEvent{}, false
}

// InPoller reports whether c's socket is in the runtime's epoll set.
func InPoller(c syscall.Conn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var in bool
	if rc.Control(func(fd uintptr) { _, _, err := pollerEntry(int(fd)); in = err == nil }) != nil {
		return false
	}
	return in
}

// Wait readies a blocking read on fd now: it sets the socket's timeout
// for the read deadline (clock.Deadline, 0: none). It returns
// os.ErrDeadlineExceeded when the deadline has passed, or the error of a
// timeout that could not be set (a read then would wait for ever): do not
// read.
func (s *Socket) Wait(fd uintptr, deadline int64) error {
	want := int64(Cap)
	if deadline != 0 {
		left := deadline - clock.MonoNow()
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		j := tick()
		want = max(min(want, (left-2*j)/2), 1) // 1 ns: one tick
		if s.timeo != 0 && s.timeo <= max(left-2*j, 1) && s.timeo >= want/2 {
			return nil // the timeout set still wakes in time
		}
	} else if s.timeo == want {
		return nil
	}
	tv := unix.NsecToTimeval(want)
	if err := unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		if s.timeo != 0 {
			return nil // the one set before still wakes (later, but it wakes)
		}
		return &os.SyscallError{Syscall: "setsockopt SO_RCVTIMEO", Err: err}
	}
	s.timeo = want
	return nil
}

// Block and Unblock bracket a blocking read's system call, for Wake.
// Block reports false, unblocked again, when the deadline
// (clock.Deadline; 0: none) has passed by now (clock.MonoNow, read after
// Wait): a Wake that came between Wait and Block found no read to signal,
// and the read is not to start.
func (s *Socket) Block(deadline, now int64) bool {
	s.waiting.Store(true)
	if deadline != 0 && now >= deadline {
		s.waiting.Store(false)
		return false
	}
	return true
}

// Unblock ends what Block began.
func (s *Socket) Unblock() { s.waiting.Store(false) }

// Wake ends a read waiting in the kernel now, for a deadline moved into
// the past by another goroutine (an interrupt), instead of within Cap: a
// signal to the reader's thread, which a socket with a receive timeout
// answers with EINTR (signal(7)), as ppoll always does; the read then
// looks at its deadline.
// The signal is SIGURG, which the Go runtime takes for its own and lets
// pass when it wanted nothing. A read that was not waiting yet sees the
// deadline as it starts.
func (s *Socket) Wake() {
	if s.waiting.Load() && s.tid != 0 {
		_ = unix.Tgkill(unix.Getpid(), s.tid, unix.SIGURG)
	}
}

// Shutdown wakes a read waiting in the kernel on fd at once, for a Close
// from another goroutine (which otherwise waits for the read, up to Cap):
// shutdown(SHUT_RD), which on an unconnected datagram socket fails but
// wakes it all the same. The reader must have been told first (closing).
func Shutdown(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_RD) })
}

// Read reads from fd, out of the poller, into p with blocking read(2)
// calls (a Unix stream socket: ppoll, then read; see pollFirst) until
// data comes (n bytes, which may be 0: a stream's end), the call fails
// (its errno), the deadline passes (clock.Deadline; 0: none;
// os.ErrDeadlineExceeded) or closing is set (net.ErrClosed). Call it from
// a syscall.RawConn's Control, which holds the socket open meanwhile (Read
// would end at the deadline before looking at what is queued). It does
// not allocate.
func (s *Socket) Read(fd uintptr, p []byte, deadline *atomic.Int64, closing *atomic.Bool) (int, error) {
	if s.pollFirst {
		return s.pollRead(fd, p, deadline, closing)
	}
	return s.ReadRest(fd, p, deadline, closing)
}

// ReadRest is Read with blocking read(2) calls on every socket: for the
// rest of a message whose start was read (see pollFirst).
func (s *Socket) ReadRest(fd uintptr, p []byte, deadline *atomic.Int64, closing *atomic.Bool) (int, error) {
	for {
		if err := s.Wait(fd, deadline.Load()); err != nil {
			if err == os.ErrDeadlineExceeded {
				// What is there already is read, deadline or not: a
				// process stopped (SIGSTOP) past its deadline finds its
				// replies waiting.
				n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
				if errno == 0 && !closing.Load() {
					return int(n), nil
				}
			}
			return 0, err
		}
		if !s.Block(deadline.Load(), clock.MonoNow()) {
			continue // Wait takes what is queued and says the deadline
		}
		n, _, errno := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		s.Unblock()
		if closing.Load() {
			return 0, net.ErrClosed // what came, if anything, came too late
		}
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

// SendAgain says, for a blocking socket's send that found no room in Cap,
// why not to try again: the socket is closing (net.ErrClosed) or the write
// deadline (clock.Deadline, 0: none) passed (os.ErrDeadlineExceeded); nil: try
// again.
func SendAgain(deadline int64, closing *atomic.Bool) error {
	if closing.Load() {
		return net.ErrClosed
	}
	if deadline != 0 && clock.MonoNow() >= deadline {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// Conn reads and writes a connected socket out of the poller, each call
// waiting in the kernel on the caller's thread: a read up to the read
// deadline, a write (whole) for room up to the write deadline. The
// deadlines are the owner's (clock.Deadline; 0: none), which its
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
	rest                bool                  // the read is ReadRest's
	readFn              func(fd uintptr)      // made once: a call does not allocate
	writeFn             func(fd uintptr) bool // likewise
	mark                clock.ReadMark        // SetReadClock's
	cp                  *Copy                 // the calls' descriptor; nil: through rc
}

// SetReadClock has each read that gets bytes read now() as its system
// call returns, before the way back to the caller (ReadAt); nil: none.
// Call it before reading, on the reader's goroutine.
func (c *Conn) SetReadClock(now func() int64) { c.mark.SetClock(now) }

// ReadAt returns the read clock's reading as the last read that got bytes
// returned them (0: no clock, or no such read yet).
func (c *Conn) ReadAt() int64 { return c.mark.At() }

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
	c.cp = NewCopy(rc)
	return c, nil
}

// Rejoin puts the socket back in the poller; the Conn is not to be used
// after, nor while Rejoin runs.
func (c *Conn) Rejoin() error {
	c.cp.Release()
	var serr error
	if err := c.rc.Control(func(fd uintptr) { serr = c.ks.Rejoin(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// Wake ends a read waiting in the kernel now (see Socket.Wake).
func (c *Conn) Wake() { c.ks.Wake() }

// Closing tells a read or write waiting in the kernel that the socket is
// closing, and wakes the read at once (a write within Cap); call it before
// closing the socket.
func (c *Conn) Closing() {
	c.closing.Store(true)
	Shutdown(c.rc)
	c.cp.Release() // once a waiting read has seen the shutdown; a write, within Cap
}

func (c *Conn) recv(fd uintptr) {
	if c.rest {
		c.rn, c.rerr = c.ks.ReadRest(fd, c.rbuf, c.deadline, &c.closing)
	} else {
		c.rn, c.rerr = c.ks.Read(fd, c.rbuf, c.deadline, &c.closing)
	}
	c.mark.Got(c.rn)
}

// Read reads once into p, as read(2) does (0 bytes: a stream's end, or an
// empty datagram), waiting in the kernel.
func (c *Conn) Read(p []byte) (int, error) { return c.read(p, false) }

// ReadRest is Read for the rest of a message whose start was read: on a
// Unix stream socket it waits in read(2), not in ppoll (see
// Socket.pollFirst).
func (c *Conn) ReadRest(p []byte) (int, error) { return c.read(p, true) }

func (c *Conn) read(p []byte, rest bool) (int, error) {
	c.rbuf, c.rest = p, rest
	// On the copy, or through Control, not Read: it holds the socket
	// open as Read does, but leaves the deadline to Socket.Read, which
	// reads what is there even past it.
	err := c.cp.Control(c.rc, &c.closing, c.readFn)
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
			if c.closing.Load() {
				c.werr = net.ErrClosed // a slow reader does not hold Close up for the rest
				return true
			}
		case unix.EAGAIN:
			if c.werr = SendAgain(c.wdeadline.Load(), &c.closing); c.werr != nil {
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
	err := c.cp.Write(c.rc, &c.closing, c.writeFn) // it waits in the kernel: done when it returns
	c.wbuf = nil
	if err != nil {
		return 0, err
	}
	return c.wn, c.werr
}
