package udp

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
)

// Blocking reads (SetBlockingReads): the reader's thread waits for a
// datagram inside one recvmmsg, out of the runtime's poller (see package
// kwait), instead of in it: with kernel stamps, the error queue's entries
// also woke the poller once more per probe. Sends wait in the kernel too,
// up to the write deadline (sendCall).

// blocking is the batcher's part for blocking reads.
type blocking struct {
	block     atomic.Bool // atomic: Close, on another goroutine, looks
	ks        kwait.Socket
	wdeadline atomic.Int64     // the write deadline, clock.Deadline (0: none)
	closing   atomic.Bool      // Close was called: a blocking read ends
	blockFn   func(fd uintptr) // recvBlock, made once: a read does not allocate
	to        toSender         // PacketConn.WriteTo
	// slept: the last blocking read waited for its datagram, so the next
	// asks for one (see recvBlock).
	slept bool
}

// sleptAfter is how long a blocking read must take for it to have waited
// for its datagram rather than found it queued: a queued one comes back
// within a microsecond or two.
const sleptAfter = 3000 // ns

// leavePoller takes the socket out of the runtime's poller, blocking (on:
// kwait.Socket.Leave), or puts it back as it was (a socket in it stays).
func (b *batcher) leavePoller(on bool) error {
	if !on {
		// The caller is the reader's side: no call is under way on
		// another goroutine (see SetBusyPoll, SetBlockingReads).
		b.cp.Swap(nil).Release()
	}
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		if on {
			serr = b.ks.Leave(int(fd))
			return
		}
		serr = b.ks.Rejoin(int(fd))
	}); err != nil {
		return err
	}
	if on && serr == nil && b.cp.Load() == nil {
		b.cp.Store(kwait.NewCopy(b.rc)) // calls out of the poller go straight to it
		if b.closing.Load() {
			b.cp.Load().Release() // Close looked before the store
		}
	}
	return serr
}

// setBlocking makes the socket blocking and takes it out of the runtime's
// poller (on), or puts it back as it was.
func (b *batcher) setBlocking(on bool) error {
	if on == b.block.Load() {
		return nil
	}
	if err := b.leavePoller(on); err != nil {
		return err
	}
	if b.blockFn == nil {
		b.blockFn = b.recvBlock
	}
	b.block.Store(on)
	return nil
}

// recvBlock is recvmmsg for blocking reads: it waits in the kernel for
// the first datagram, up to the read deadline.
func (b *batcher) recvBlock(fd uintptr) {
	for {
		if err := b.ks.Wait(fd, b.deadline.Load()); err != nil {
			if err == os.ErrDeadlineExceeded {
				// What is there already is read, deadline or not: a
				// process stopped (SIGSTOP) past its deadline finds its
				// replies waiting.
				n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), uintptr(b.rn), unix.MSG_DONTWAIT, 0, 0)
				if errno == 0 && !b.closing.Load() {
					b.markRead()
					b.rn, b.rerr = int(n), nil
					return
				}
			}
			b.rn, b.rerr = 0, err
			return
		}
		// After a read that waited, ask for one datagram: recvmmsg
		// with MSG_WAITFORONE tries once more, without waiting, after
		// the first, a whole receive that finds nothing when datagrams
		// come one at a time (a ping-pong), and comes before the
		// caller's clock read. One that found its datagram queued asks
		// for a batch: more may be waiting.
		ask := b.rn
		if b.slept {
			ask = 1
		}
		// A call the scheduler hears of: it blocks, and the thread's P
		// may go to other goroutines meanwhile.
		t0 := clock.MonoNow()
		if !b.ks.Block(b.deadline.Load(), t0) {
			continue // Wait takes what is queued and says the deadline
		}
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), uintptr(ask), unix.MSG_WAITFORONE, 0, 0)
		if errno == 0 {
			b.markRead()
		}
		b.ks.Unblock()
		b.slept = clock.MonoNow()-t0 > sleptAfter
		if b.closing.Load() {
			// Close woke it (markClosing): what came, if anything, came
			// too late.
			b.rn, b.rerr = 0, net.ErrClosed
			return
		}
		switch errno {
		case 0:
			b.rn, b.rerr = int(n), nil
			return
		case unix.EAGAIN, unix.EINTR:
			// The socket's timeout (or a signal): look at the deadline
			// again.
		default:
			b.rn, b.rerr = 0, errno
			return
		}
	}
}

// sysCall is a system call with up to six arguments: unix.Syscall6, of
// which the scheduler hears, or unix.RawSyscall6.
type sysCall = func(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno)

// sendCall is how a send is made: the call, its flags, and whether a full
// buffer waits in the kernel (wait: the socket is out of the poller; up
// to kwait.Cap a call, to the write deadline) or in the poller. A busy
// socket's send is first a raw call that does not wait (MSG_DONTWAIT):
// it spares the scheduler's bookkeeping, and the runtime's monitor, which
// watches system calls, cannot take the spinning thread's P in the middle
// of one (see stream.busyReader); only a full buffer, as full says, has
// it wait.
func (b *batcher) sendCall() (call sysCall, flags int, wait bool) {
	wait = b.outOfPoller()
	switch {
	case b.busy:
		return unix.RawSyscall6, unix.MSG_DONTWAIT, wait
	case wait:
		return unix.Syscall6, 0, true
	}
	return unix.Syscall6, unix.MSG_DONTWAIT, false
}

// full handles a send made with *call and *flags (sendCall's) that found
// no room: false to wait in the poller; true to try again, after a busy
// socket's raw try with a call that waits in the kernel; or why not to
// (kwait.SendAgain: the write deadline, Close).
func (b *batcher) full(call *sysCall, flags *int, wait bool) (again bool, err error) {
	switch {
	case !wait:
		return false, nil
	case *flags&unix.MSG_DONTWAIT != 0:
		*call, *flags = unix.Syscall6, 0
		return true, nil
	}
	if err := b.sendAgain(); err != nil {
		return false, err
	}
	return true, nil
}

// outOfPoller says whether the socket has left the runtime's poller, for
// blocking reads or busy polling: the *net.UDPConn's own reads and
// writes would wait in it for ever.
func (b *batcher) outOfPoller() bool { return b.block.Load() || b.spinOut.Load() }

// sendAgain is kwait.SendAgain for the batcher's blocking sends.
func (b *batcher) sendAgain() error { return kwait.SendAgain(b.wdeadline.Load(), &b.closing) }

// setWriteDeadline records the write deadline for blocking sends.
func (b *batcher) setWriteDeadline(t time.Time) { b.wdeadline.Store(clock.Deadline(t)) }

// toSender is PacketConn.WriteTo for a socket out of the poller
// (blocking, or busy): one datagram to an address, sent as sendCall
// says, from any goroutine.
type toSender struct {
	mu      sync.Mutex
	sa      unix.RawSockaddrInet6
	namelen uint32
	buf     []byte
	n       int
	err     error
	fn      func(fd uintptr) bool
	b       *batcher
}

// sendto sends t.buf to t.sa as t.b.sendCall says: out of the poller, a
// full buffer waits in the kernel for room up to the write deadline.
func (t *toSender) sendto(fd uintptr) bool {
	call, flags, wait := t.b.sendCall()
	for {
		n, _, errno := call(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(t.buf))), uintptr(len(t.buf)), uintptr(flags),
			uintptr(unsafe.Pointer(&t.sa)), uintptr(t.namelen))
		switch errno {
		case 0:
			t.n, t.err = int(n), nil
		case unix.EAGAIN:
			again, err := t.b.full(&call, &flags, wait)
			if err != nil {
				t.n, t.err = 0, err
				return true
			}
			if !again {
				return false // wait in the poller for room
			}
			continue
		case unix.EINTR:
			continue
		default:
			t.n, t.err = 0, errno
		}
		return true
	}
}

// writeTo sends p to addr with one sendto (toSender.sendto).
func (b *batcher) writeTo(p []byte, addr netip.AddrPort) (int, error) {
	t := &b.to
	t.mu.Lock()
	defer t.mu.Unlock()
	namelen, ok := b.putAddr(&t.sa, addr)
	if !ok {
		return 0, errFamily
	}
	if t.fn == nil {
		t.fn, t.b = t.sendto, b
	}
	t.namelen, t.buf = namelen, p
	err := b.viaWrite(t.fn)
	t.buf = nil
	if err != nil {
		return 0, err
	}
	if t.err == os.ErrDeadlineExceeded || t.err == net.ErrClosed {
		return 0, t.err
	}
	if t.err != nil {
		return 0, wrapErrno("sendto", t.err)
	}
	b.txSent.Add(1)
	return t.n, nil
}

// markClosing tells a blocking read or send that the socket is closing,
// and wakes the read at once.
func (b *batcher) markClosing() {
	b.closing.Store(true)
	if b.block.Load() {
		kwait.Shutdown(b.rc)
	}
	b.cp.Load().Release() // once a read has seen the closing (a send, within kwait.Cap)
}
