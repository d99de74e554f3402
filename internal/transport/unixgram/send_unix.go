//go:build unix

package unixgram

import (
	"errors"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sender sends without waiting (MSG_DONTWAIT), allocating nothing per
// datagram: its raw connection and callback are made once.
type sender struct {
	mu  sync.Mutex
	rc  syscall.RawConn
	fn  func(fd uintptr) bool
	b   []byte
	sa  *unix.SockaddrUnix
	err error
}

// send sends b to pe without waiting: a full socket is ErrSlowReader.
func (p *PacketConn) send(b []byte, pe *peer) (int, error) {
	s := &p.sender
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rc == nil {
		rc, err := p.c.SyscallConn()
		if err != nil {
			return 0, err
		}
		s.rc = rc
		s.fn = func(fd uintptr) bool {
			s.err = unix.Sendto(int(fd), s.b, unix.MSG_DONTWAIT, s.sa)
			return true // never wait for the socket to drain
		}
	}
	sa, _ := pe.sa.(*unix.SockaddrUnix)
	if sa == nil {
		sa = &unix.SockaddrUnix{Name: pe.addr.Name}
		pe.sa = sa
	}
	s.b, s.sa = b, sa
	err := s.rc.Write(s.fn)
	s.b, s.sa = nil, nil
	switch {
	case err != nil:
		return 0, err
	case errors.Is(s.err, unix.EAGAIN), errors.Is(s.err, unix.ENOBUFS):
		return 0, ErrSlowReader
	case s.err != nil:
		return 0, s.err
	}
	return len(b), nil
}
