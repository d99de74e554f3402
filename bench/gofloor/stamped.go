//go:build linux

package main

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The stamped floor (-stamps): the same ping-pong with the kernel's work
// that a default volley run asks for on every datagram, and none of
// volley's own: software receive and transmit stamps (SO_TIMESTAMPING,
// set as volley sets it), the TTL and traffic class of every datagram
// received (IP_RECVTTL, IP_RECVTOS), receives that bring them (recvmmsg,
// one datagram, with a control buffer), and each transmit stamp read
// from the error queue once the answer is handled. Its gap to the plain
// floor is what that kernel work costs on this machine; volley's gap to
// it is volley's own.

// stampFlags are volley's (internal/tstamp): software stamps both ways,
// transmit stamps numbered and without the datagram.
const stampFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
	unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// stamper receives on fd with the stamps and the path's marks, and drains
// its transmit stamps.
type stamper struct {
	fd   uintptr
	hdr  [1]unix.Mmsghdr
	iov  unix.Iovec
	name unix.RawSockaddrInet6
	ctl  [256]byte
	ehdr unix.Msghdr
	eiov unix.Iovec
	ebuf [64]byte
	ectl [128]byte
}

// newStamper turns fd's stamps and marks on.
func newStamper(fd int, v4 bool) (*stamper, error) {
	opts := [][2]int{{unix.SOL_SOCKET, unix.SO_TIMESTAMPING}}
	if v4 {
		opts = append(opts, [2]int{unix.IPPROTO_IP, unix.IP_RECVTTL}, [2]int{unix.IPPROTO_IP, unix.IP_RECVTOS})
	} else {
		opts = append(opts, [2]int{unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT}, [2]int{unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS})
	}
	for i, o := range opts {
		v := 1
		if i == 0 {
			v = stampFlags
		}
		if err := unix.SetsockoptInt(fd, o[0], o[1], v); err != nil {
			return nil, fmt.Errorf("setsockopt %d/%d: %w", o[0], o[1], err)
		}
	}
	s := &stamper{fd: uintptr(fd)}
	s.hdr[0].Hdr.Iov = &s.iov
	s.hdr[0].Hdr.SetIovlen(1)
	s.hdr[0].Hdr.Name = (*byte)(unsafe.Pointer(&s.name))
	s.eiov.Base = &s.ebuf[0]
	s.eiov.SetLen(len(s.ebuf))
	s.ehdr.Iov = &s.eiov
	s.ehdr.SetIovlen(1)
	return s, nil
}

// recv receives one datagram into buf with recvmmsg and flags through
// call (unix.Syscall6 where it may wait, unix.RawSyscall6 where it never
// does); the sender's address is in s.name.
func (s *stamper) recv(call sysCall6, buf []byte, flags int) (int, syscall.Errno) {
	h := &s.hdr[0].Hdr
	s.iov.Base = &buf[0]
	s.iov.SetLen(len(buf))
	h.Namelen = uint32(unsafe.Sizeof(s.name))
	h.Control = &s.ctl[0]
	h.SetControllen(len(s.ctl))
	n, _, e := call(unix.SYS_RECVMMSG, s.fd, uintptr(unsafe.Pointer(&s.hdr[0])), 1, uintptr(flags), 0, 0)
	if e != 0 || n != 1 {
		return 0, e
	}
	return int(s.hdr[0].Len), 0
}

// drain reads the transmit stamps waiting on the error queue.
func (s *stamper) drain() {
	for {
		s.ehdr.Control = &s.ectl[0]
		s.ehdr.SetControllen(len(s.ectl))
		if _, _, e := unix.RawSyscall(unix.SYS_RECVMSG, s.fd, uintptr(unsafe.Pointer(&s.ehdr)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT); e != 0 {
			return
		}
	}
}

// reply sends b back to the sender of the datagram received last,
// through call as the plain floor's sends go.
func (s *stamper) reply(call sysCall6, b []byte) {
	call(unix.SYS_SENDTO, s.fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_DONTWAIT,
		uintptr(unsafe.Pointer(&s.name)), uintptr(s.hdr[0].Hdr.Namelen))
}

// sysCall6 is unix.Syscall6 or unix.RawSyscall6.
type sysCall6 = func(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno)
