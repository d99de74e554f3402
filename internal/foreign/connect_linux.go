package foreign

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/wire"
)

// connectSys is Linux's part of a Connect: the probes' sockets in an epoll
// set of its own, which is in Go's poller (an epoll descriptor is readable
// while it has events), so that reads take deadlines and Close wakes a
// read as on any socket.
type connectSys struct {
	family  int    // AF_INET or AF_INET6
	network string // "tcp4" or "tcp6", for sockopt
	remote  unix.Sockaddr
	bind    unix.Sockaddr // nil: no bind
	noPort  bool          // bind the address only; the kernel picks the port at connect
	errFull error

	ep       *os.File        // the epoll set
	epRaw    syscall.RawConn // ep's
	template *os.File        // a socket with the options, for SyscallConn

	// mu guards the table, closed and the epoll registration (add, ev).
	mu     sync.Mutex
	table  *handshakeTable
	closed atomic.Bool // set under mu; read without it
	add    func(fd uintptr)
	addFd  int
	addErr error
	ev     unix.EpollEvent

	// The reading goroutine's.
	poll       func(fd uintptr) bool
	evs        [64]unix.EpollEvent
	evPos, evN int
	rbuf       []byte
	rn         int
	rerr       error
	toClose    atomic.Int64 // a completed handshake's socket, closed after its reply was returned; -1: none
}

// open sets up the platform's part of c.
func (c *Connect) open() error {
	s := &c.sys
	a := c.cfg.Addr.Addr()
	s.family, s.network = unix.AF_INET, "tcp4"
	if !a.Is4() {
		s.family, s.network = unix.AF_INET6, "tcp6"
	}
	var err error
	if s.remote, err = connectSockaddr(a.Is4(), c.cfg.Addr.Addr().As16(), c.cfg.Addr.Port(), a.Zone()); err != nil {
		return fmt.Errorf("connect: %s: %w", c.cfg.Addr, err)
	}
	if l := c.cfg.Local; l.Addr().IsValid() || l.Port() != 0 {
		la := l.Addr()
		if !la.IsValid() {
			la = netip.IPv6Unspecified()
			if a.Is4() {
				la = netip.IPv4Unspecified()
			}
		}
		if s.bind, err = connectSockaddr(la.Is4(), la.As16(), l.Port(), la.Zone()); err != nil {
			return fmt.Errorf("connect: --bind %s: %w", l, err)
		}
		s.noPort = l.Port() == 0
	}
	s.errFull = fmt.Errorf("%w: %d (a lower --rate, a smaller --window or a shorter --timeout keeps fewer)", ErrTooManyOpen, c.cfg.MaxOpen)
	// A socket with the options, bound as the probes' are: a bad option
	// or address fails here, not at every probe.
	fd, err := c.socket()
	if err != nil {
		return err
	}
	s.template = os.NewFile(uintptr(fd), "connect template")
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		s.template.Close()
		return fmt.Errorf("connect: epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		s.template.Close()
		return fmt.Errorf("connect: epoll set non-blocking: %w", err)
	}
	s.ep = os.NewFile(uintptr(epfd), "connect epoll")
	if err := s.ep.SetReadDeadline(time.Time{}); err != nil {
		s.ep.Close()
		s.template.Close()
		return fmt.Errorf("connect: epoll set not in Go's poller: %w", err)
	}
	if s.epRaw, err = s.ep.SyscallConn(); err != nil {
		s.ep.Close()
		s.template.Close()
		return fmt.Errorf("connect: %w", err)
	}
	s.table = newHandshakeTable(c.cfg.MaxOpen)
	s.add = c.register
	s.poll = c.pollEvents
	s.toClose.Store(-1)
	return nil
}

// sockaddr returns the socket address of ip (its 16-byte form; v4: an
// IPv4 address), port and zone.
func connectSockaddr(v4 bool, ip [16]byte, port uint16, zone string) (unix.Sockaddr, error) {
	if v4 {
		sa := &unix.SockaddrInet4{Port: int(port)}
		copy(sa.Addr[:], ip[12:])
		return sa, nil
	}
	sa := &unix.SockaddrInet6{Port: int(port), Addr: ip}
	if zone != "" {
		ifi, err := net.InterfaceByName(zone)
		if err != nil {
			return nil, fmt.Errorf("zone %q: %w", zone, err)
		}
		sa.ZoneId = uint32(ifi.Index)
	}
	return sa, nil
}

// socket opens a non-blocking TCP socket with c's options, bound where
// --bind says.
func (c *Connect) socket() (int, error) {
	s := &c.sys
	fd, err := unix.Socket(s.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("connect: open a socket: %w", err)
	}
	if err := c.cfg.Options.Apply(fd, s.network); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	if s.bind == nil {
		return fd, nil
	}
	if s.noPort {
		// The port is picked at connect, per destination: more ports
		// to go round than a bind's own pick.
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	} else {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	}
	if err == nil {
		err = unix.Bind(fd, s.bind)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect: --bind %s: %w", c.cfg.Local, err)
	}
	return fd, nil
}

// Write starts a handshake for the volley probe b. A handshake that fails
// at once (refused, no route, no local port) is counted, and the write
// succeeds: its probe is lost, as one that the network dropped. Write
// fails when b is not a probe, when MaxOpen handshakes are open
// (ErrTooManyOpen) and when no socket can be opened or bound.
func (c *Connect) Write(b []byte) (int, error) {
	s := &c.sys
	var h wire.Header
	if err := h.Decode(b); err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	if h.Type != wire.TypeProbe {
		return 0, ErrConnectNotProbe
	}
	now := c.now()
	s.mu.Lock()
	c.expireLocked(now, int64(c.cfg.Timeout))
	full, closed := s.table.full(), s.closed.Load()
	s.mu.Unlock()
	switch {
	case closed:
		return 0, net.ErrClosed
	case full:
		return 0, s.errFull
	}
	fd, err := c.socket()
	if err != nil {
		return 0, err
	}
	start := c.now()
	switch err := unix.Connect(fd, s.remote); err {
	case nil, unix.EINPROGRESS:
	case unix.ECONNREFUSED:
		unix.Close(fd)
		c.refused.Add(1)
		return len(b), nil
	default:
		unix.Close(fd)
		c.failed.Add(1)
		return len(b), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		unix.Close(fd)
		return 0, net.ErrClosed
	}
	ref, ok := s.table.add(handshake{fd: fd, token: h.Token, seq: h.Seq, t1: h.T1, start: start})
	if !ok {
		unix.Close(fd)
		return 0, s.errFull
	}
	s.ev = unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(ref.idx), Pad: int32(ref.gen)}
	s.addFd, s.addErr = fd, nil
	if err := s.epRaw.Control(s.add); err != nil || s.addErr != nil {
		s.table.take(ref)
		unix.Close(fd)
		if err != nil {
			return 0, net.ErrClosed
		}
		return 0, fmt.Errorf("connect: epoll_ctl: %w", s.addErr)
	}
	return len(b), nil
}

// register adds the socket addFd to the epoll set epfd with the event ev;
// under mu.
func (c *Connect) register(epfd uintptr) {
	s := &c.sys
	s.addErr = unix.EpollCtl(int(epfd), unix.EPOLL_CTL_ADD, s.addFd, &s.ev)
}

// Read waits until a handshake completes, before the read deadline, and
// writes the volley reply to its probe into b (wire.HeaderLen bytes; T2
// and T3 are 0). Handshakes that end otherwise are counted on the way.
func (c *Connect) Read(b []byte) (int, error) {
	s := &c.sys
	if s.closed.Load() {
		return 0, net.ErrClosed
	}
	if len(b) < wire.HeaderLen {
		return 0, io.ErrShortBuffer
	}
	if fd := s.toClose.Swap(-1); fd >= 0 {
		unix.Close(int(fd))
	}
	s.rbuf, s.rn, s.rerr = b, 0, nil
	err := s.epRaw.Read(s.poll)
	n, rerr := s.rn, s.rerr
	s.rbuf = nil
	switch {
	case n > 0:
		return n, nil
	case rerr != nil:
		return 0, rerr
	case s.closed.Load():
		return 0, net.ErrClosed
	}
	return 0, err
}

// pollEvents takes the epoll set's events until one is a handshake
// completed (true, with its reply in rbuf) or there are none left (false:
// wait for more).
func (c *Connect) pollEvents(epfd uintptr) bool {
	s := &c.sys
	c.expire()
	for {
		for s.evPos < s.evN {
			ev := &s.evs[s.evPos]
			s.evPos++
			if c.settle(ev) {
				return true
			}
		}
		n, err := unix.EpollWait(int(epfd), s.evs[:], 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			s.rerr = fmt.Errorf("connect: epoll_wait: %w", err)
			return true
		case n == 0:
			return false
		}
		s.evPos, s.evN = 0, n
	}
}

// settle ends the handshake of the event ev: completed (true, with the
// reply to its probe in rbuf), refused or failed (counted).
func (c *Connect) settle(ev *unix.EpollEvent) bool {
	s := &c.sys
	s.mu.Lock()
	h, ok := s.table.take(handshakeRef{uint32(ev.Fd), uint32(ev.Pad)})
	s.mu.Unlock()
	if !ok {
		return false // timed out meanwhile
	}
	soerr, err := unix.GetsockoptInt(h.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soerr == 0 && ev.Events&unix.EPOLLOUT != 0 {
		// Closed at the next read: not in the time of this one.
		s.toClose.Store(int64(h.fd))
		r := wire.Header{Type: wire.TypeReply, Token: h.token, Seq: h.seq, T1: h.t1}
		_ = r.Encode(s.rbuf) // Read checked its length
		s.rn = wire.HeaderLen
		return true
	}
	unix.Close(h.fd)
	if err != nil {
		c.failed.Add(1)
		return false
	}
	switch unix.Errno(soerr) {
	case unix.ECONNREFUSED:
		c.refused.Add(1)
	case unix.ETIMEDOUT:
		c.timedOut.Add(1)
	default:
		c.failed.Add(1)
	}
	return false
}

// expire closes the handshakes past their timeout and counts them.
func (c *Connect) expire() {
	now := c.now()
	c.sys.mu.Lock()
	c.expireLocked(now, int64(c.cfg.Timeout))
	c.sys.mu.Unlock()
}

// giveUp closes every handshake still open, counted as timed out: the
// run is over, and its client counted each of them lost (it waited its
// timeout for them, or the run was cut short).
func (c *Connect) giveUp() {
	c.sys.mu.Lock()
	c.expireLocked(c.now(), 0)
	c.sys.mu.Unlock()
}

// expireLocked closes the handshakes older than timeout at now, counted
// as timed out; under mu.
func (c *Connect) expireLocked(now, timeout int64) {
	for {
		h, ok := c.sys.table.expired(now, timeout)
		if !ok {
			return
		}
		unix.Close(h.fd)
		c.timedOut.Add(1)
	}
}

// SetReadDeadline sets the deadline of Read; a time in the past makes it
// return os.ErrDeadlineExceeded at once, the zero time waits for ever.
func (c *Connect) SetReadDeadline(t time.Time) error {
	if err := c.sys.ep.SetReadDeadline(t); err != nil {
		if c.sys.closed.Load() {
			return net.ErrClosed
		}
		return err
	}
	return nil
}

// SyscallConn returns a socket with the options the probes' sockets
// have, which the kernel can be asked about (transport.Granted): not one
// that connects.
func (c *Connect) SyscallConn() (syscall.RawConn, error) { return c.sys.template.SyscallConn() }

// Close closes every socket: the handshakes still in flight are
// abandoned, counted nowhere. A read waiting returns net.ErrClosed.
// Closing again does nothing.
func (c *Connect) Close() error {
	s := &c.sys
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	for {
		h, ok := s.table.drain()
		if !ok {
			break
		}
		unix.Close(h.fd)
	}
	s.mu.Unlock()
	err := s.ep.Close() // waits for a read under way to return
	if fd := s.toClose.Swap(-1); fd >= 0 {
		unix.Close(int(fd))
	}
	if terr := s.template.Close(); err == nil {
		err = terr
	}
	return err
}
