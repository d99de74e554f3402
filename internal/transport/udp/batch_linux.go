package udp

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/tstamp"
)

// batcher holds what recvmmsg and sendmmsg need, allocated once per socket:
// the headers, one I/O vector and one socket address per message, and the
// functions handed to the raw connection (made once, so that a call does not
// allocate a closure).
type batcher struct {
	rc        syscall.RawConn
	family    int  // of the socket: AF_INET or AF_INET6
	connected bool // writes go to the peer: no addresses

	rhdrs  [MaxBatch]unix.Mmsghdr
	riovs  [MaxBatch]unix.Iovec
	rnames [MaxBatch]unix.RawSockaddrInet6 // room for either family
	rn     int                             // messages asked for, then read
	rerr   error                           // of the last call
	readFn func(fd uintptr) bool

	whdrs   [MaxBatch]unix.Mmsghdr
	wiovs   [MaxBatch]unix.Iovec
	wnames  [MaxBatch]unix.RawSockaddrInet6
	wn      int // messages to send, then sent
	werr    error
	writeFn func(fd uintptr) bool

	zones map[uint32]string // IPv6 scope IDs seen, as zone names

	mark clock.ReadMark // SetReadClock's, and its reading as the last read returned

	// cp: a copy of the descriptor, for calls while the socket is out of
	// the runtime's poller (busy or blocking); nil: through rc.
	cp atomic.Pointer[kwait.Copy]

	busyPoll // reads spin instead of sleeping (busy_linux.go)
	blocking // reads wait in the kernel, on the reader's thread (block_linux.go)
	txStamps // kernel stamps, and the transmit stamps' error queue (txstamp_linux.go)
}

func newBatcher(c interface {
	SyscallConn() (syscall.RawConn, error)
}, connected bool) (*batcher, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &batcher{rc: rc, connected: connected}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		b.family, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	for i := range b.rhdrs {
		b.rhdrs[i].Hdr.Iov = &b.riovs[i]
		b.rhdrs[i].Hdr.SetIovlen(1)
		b.rhdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.rnames[i]))
		b.whdrs[i].Hdr.Iov = &b.wiovs[i]
		b.whdrs[i].Hdr.SetIovlen(1)
		if !connected {
			b.whdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.wnames[i]))
		}
	}
	b.readFn = b.recvmmsg
	b.writeFn = b.sendmmsg
	b.writeFn1 = b.send1
	b.readFn1 = b.spinRead1
	return b, nil
}

func (b *batcher) recvmmsg(fd uintptr) bool {
	call := unix.Syscall6
	if b.busy {
		call = unix.RawSyscall6 // it never blocks: see spinRecv
	}
	n, _, errno := call(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), uintptr(b.rn), unix.MSG_DONTWAIT, 0, 0)
	if errno == unix.EAGAIN && b.busy {
		var stop error
		if n, errno, stop = b.spinRecv(fd); stop != nil {
			b.rn, b.rerr = 0, stop
			return true
		}
	}
	switch errno {
	case 0:
		b.markRead()
		b.rn, b.rerr = int(n), nil
	case unix.EAGAIN:
		return false // wait for the socket to be readable
	case unix.EINTR:
		return b.recvmmsg(fd)
	default:
		b.rn, b.rerr = 0, errno
	}
	return true
}

// sendmmsg sends the batch as sendCall says.
func (b *batcher) sendmmsg(fd uintptr) bool {
	call, flags, wait := b.sendCall()
	for {
		n, _, errno := call(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.whdrs[0])), uintptr(b.wn), uintptr(flags), 0, 0)
		switch errno {
		case 0:
			b.wn, b.werr = int(n), nil
		case unix.EAGAIN:
			again, err := b.full(&call, &flags, wait)
			if err != nil {
				b.wn, b.werr = 0, err
				return true
			}
			if !again {
				return false // wait in the poller for room
			}
			continue
		case unix.EINTR:
			continue
		default:
			b.wn, b.werr = 0, errno
		}
		return true
	}
}

func (b *batcher) setReadClock(now func() int64) { b.mark.SetClock(now) }

// viaRead runs fn, a read's, on the descriptor's copy where there is one,
// or through the RawConn's Read (kwait.Copy.Read).
func (b *batcher) viaRead(fn func(fd uintptr) bool) error {
	return b.cp.Load().Read(b.rc, &b.closing, fn)
}

// viaWrite is viaRead for a write (kwait.Copy.Write).
func (b *batcher) viaWrite(fn func(fd uintptr) bool) error {
	return b.cp.Load().Write(b.rc, &b.closing, fn)
}

// viaControl is viaRead for a call that does not wait in the poller
// (kwait.Copy.Control).
func (b *batcher) viaControl(fn func(fd uintptr)) error {
	return b.cp.Load().Control(b.rc, &b.closing, fn)
}

// readAt returns the read clock's reading as the last read returned.
func (b *batcher) readAt() int64 { return b.mark.At() }

// markRead reads the read clock, as a read's system call returns.
func (b *batcher) markRead() { b.mark.Got(1) }

func (b *batcher) read(ms []Message) (int, error) {
	n := min(len(ms), MaxBatch)
	for i := range n {
		h := &b.rhdrs[i].Hdr
		b.riovs[i].Base = unsafe.SliceData(ms[i].Buf)
		b.riovs[i].SetLen(len(ms[i].Buf))
		h.Namelen = uint32(unsafe.Sizeof(b.rnames[i]))
		h.Flags = 0
		if b.rctl != nil {
			h.Control = &b.rctl[i][0]
			h.SetControllen(tstamp.RxControlLen)
		}
	}
	b.rn = n
	var err error
	if b.block.Load() {
		// Control, not Read: it holds the socket open as Read does,
		// but leaves the deadline to recvBlock, which reads what is
		// queued even past it.
		err = b.viaControl(b.blockFn)
	} else {
		err = b.viaRead(b.readFn)
	}
	if err != nil {
		return 0, err // a deadline, or the socket closed
	}
	if b.rerr != nil {
		if b.rerr == os.ErrDeadlineExceeded || b.rerr == net.ErrClosed {
			return 0, b.rerr // a busy poll ran out of time, a blocking read saw Close
		}
		return 0, wrapErrno("recvmmsg", b.rerr)
	}
	for i := range b.rn {
		ms[i].At = b.mark.At()
		ms[i].N = int(b.rhdrs[i].Len)
		ms[i].Addr = b.addr(&b.rnames[i])
		if b.stamping {
			ms[i].Stamp = tstamp.ParseRx(b.rctl[i][:b.rhdrs[i].Hdr.Controllen])
		}
		if b.path {
			ms[i].Path = parsePath(b.rctl[i][:b.rhdrs[i].Hdr.Controllen])
		}
	}
	return b.rn, nil
}

// addr decodes a socket address the kernel filled in.
func (b *batcher) addr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := uint16(sa.Port>>8 | sa.Port<<8) // network byte order
	if sa.Family == unix.AF_INET {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	a := netip.AddrFrom16(sa.Addr)
	if sa.Scope_id != 0 {
		// A link-local peer: keep its interface, as the net package
		// does, so that the reply goes out the same way. The zone name
		// is made once per interface.
		z, ok := b.zones[sa.Scope_id]
		if !ok {
			if b.zones == nil {
				b.zones = make(map[uint32]string)
			}
			z = strconv.FormatUint(uint64(sa.Scope_id), 10)
			b.zones[sa.Scope_id] = z
		}
		a = a.WithZone(z)
	}
	return netip.AddrPortFrom(a, port)
}

// putAddr encodes ap for a socket of b's family into sa; false when it
// cannot be sent there (an IPv6 address on an IPv4 socket).
func (b *batcher) putAddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort) (namelen uint32, ok bool) {
	port := ap.Port()
	a := ap.Addr()
	if b.family == unix.AF_INET {
		a = a.Unmap()
		if !a.Is4() {
			return 0, false
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: port>>8 | port<<8, Addr: a.As4()}
		return uint32(unsafe.Sizeof(*sa4)), true
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: port>>8 | port<<8, Addr: a.As16()}
	if z := a.Zone(); z != "" {
		if id, err := strconv.ParseUint(z, 10, 32); err == nil {
			sa.Scope_id = uint32(id)
		}
	}
	return uint32(unsafe.Sizeof(*sa)), true
}

func (b *batcher) write(ms []Message) (int, error) {
	done := 0
	for done < len(ms) {
		n := min(len(ms)-done, MaxBatch)
		for i := range n {
			m := &ms[done+i]
			if !b.connected {
				namelen, ok := b.putAddr(&b.wnames[i], m.Addr)
				if !ok {
					if i == 0 {
						return done, errFamily
					}
					n = i // send those before it; it fails on the next round
					break
				}
				b.whdrs[i].Hdr.Namelen = namelen
			}
			b.wiovs[i].Base = unsafe.SliceData(m.Buf)
			b.wiovs[i].SetLen(m.N)
		}
		b.wn = n
		b.askSched(b.txSent.Load(), n)
		if err := b.viaWrite(b.writeFn); err != nil {
			return done, err
		}
		if b.werr == os.ErrDeadlineExceeded || b.werr == net.ErrClosed {
			return done, b.werr
		}
		if b.refusedSched(b.werr) {
			continue
		}
		if b.werr != nil {
			return done, wrapErrno("sendmmsg", b.werr)
		}
		b.txSent.Add(uint32(b.wn))
		done += b.wn
	}
	return done, nil
}

func (p *PacketConn) readBatch(ms []Message) (int, error) {
	if p.b == nil {
		return p.readOne(ms)
	}
	return p.b.read(ms)
}

func (p *PacketConn) writeBatch(ms []Message) (int, error) {
	if p.b == nil {
		return p.writeOne(ms)
	}
	return p.b.write(ms)
}

func (c *Conn) readBatch(ms []Message) (int, error) {
	if c.b == nil {
		return c.readOne(ms)
	}
	return c.b.read(ms)
}

func (c *Conn) writeBatch(ms []Message) (int, error) {
	if c.b == nil {
		return c.writeOne(ms)
	}
	return c.b.write(ms)
}

func wrapErrno(op string, err error) error {
	return &opError{op: op, err: err}
}

type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }
