//go:build linux

package main

import (
	"fmt"
	"strings"
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
// it is volley's own. -parts turns on only some of that work, so that
// bench/stampcost.sh can tell what each part costs: rx (receive stamps),
// tx (transmit stamps), marks (TTL and traffic class); with none of them
// ("none"), the calls alone (recvmmsg with a control buffer, and the
// error queue's read that finds nothing). rx and tx each carry
// SOF_TIMESTAMPING_SOFTWARE, the flag that reports software stamps, so
// their work overlaps.

// The parts of volley's stamp flags (internal/tstamp): software stamps
// each way, transmit stamps numbered and without the datagram.
const (
	rxFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE
	txFlags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
)

// parts is -parts: which of the stamped floor's kernel work to ask for.
var parts = struct{ rx, tx, marks bool }{true, true, true}

// setParts reads -parts: a comma-separated list of rx, tx and marks, or
// none.
func setParts(list string) error {
	parts.rx, parts.tx, parts.marks = false, false, false
	for _, p := range strings.Split(list, ",") {
		switch p {
		case "rx":
			parts.rx = true
		case "tx":
			parts.tx = true
		case "marks":
			parts.marks = true
		case "none":
		default:
			return fmt.Errorf("-parts %q: want a comma-separated list of rx, tx and marks, or none", list)
		}
	}
	return nil
}

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
	var opts [][3]int // level, option, value
	flags := 0
	if parts.rx {
		flags |= rxFlags
	}
	if parts.tx {
		flags |= txFlags
	}
	if flags != 0 {
		opts = append(opts, [3]int{unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags})
	}
	switch {
	case parts.marks && v4:
		opts = append(opts, [3]int{unix.IPPROTO_IP, unix.IP_RECVTTL, 1}, [3]int{unix.IPPROTO_IP, unix.IP_RECVTOS, 1})
	case parts.marks:
		opts = append(opts, [3]int{unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1}, [3]int{unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1})
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o[0], o[1], o[2]); err != nil {
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
