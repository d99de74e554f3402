package udp

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/tstamp"
)

// enablePath asks the kernel for each received datagram's TTL (hop limit)
// and traffic class in its control messages. An IPv6 socket asks at both
// levels: IPv4 datagrams reach it too, and bring IP_TTL and IP_TOS.
func (b *batcher) enablePath() error {
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		v4 := []int{unix.IP_RECVTTL, unix.IP_RECVTOS}
		if b.family == unix.AF_INET6 {
			for _, opt := range []int{unix.IPV6_RECVHOPLIMIT, unix.IPV6_RECVTCLASS} {
				serr = errors.Join(serr, unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, opt, 1))
			}
			for _, opt := range v4 {
				_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, opt, 1) // a v6-only socket refuses: no IPv4 comes
			}
			return
		}
		for _, opt := range v4 {
			serr = errors.Join(serr, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, opt, 1))
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	b.allocControl()
	b.path = true
	return nil
}

// allocControl makes the receive control buffers, once.
func (b *batcher) allocControl() {
	if b.rctl == nil {
		b.rctl = make([][tstamp.RxControlLen]byte, MaxBatch)
	}
}

// parsePath reads the TTL and traffic class in a received datagram's
// control messages. It does not allocate.
func parsePath(oob []byte) Path {
	var p Path
	var ttl, tc bool
	tstamp.Cmsgs(oob, func(level, typ int32, data []byte) {
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_TTL && len(data) >= 1:
			p.TTL, ttl = uint8(hostInt(data)), true
		case level == unix.IPPROTO_IP && typ == unix.IP_TOS && len(data) >= 1:
			p.TClass, tc = data[0], true
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_HOPLIMIT && len(data) >= 4:
			p.TTL, ttl = uint8(hostInt(data)), true
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_TCLASS && len(data) >= 4:
			p.TClass, tc = uint8(hostInt(data)), true
		}
	})
	p.OK = ttl && tc
	return p
}

// hostInt reads a control message's int (host order), or its first byte
// when shorter.
func hostInt(b []byte) int32 {
	if len(b) < 4 {
		return int32(b[0])
	}
	return int32(binary.NativeEndian.Uint32(b))
}
