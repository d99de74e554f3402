package stream

import (
	"errors"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// TCPInfo reads the kernel's view of a TCP connection (TCP_INFO).
func (c *Conn) TCPInfo() (TCPInfo, error) {
	tc, ok := c.Conn.(*net.TCPConn)
	if !ok {
		return TCPInfo{}, errors.ErrUnsupported
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return TCPInfo{}, err
	}
	var ti *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return TCPInfo{}, err
	}
	if serr != nil {
		return TCPInfo{}, serr
	}
	return TCPInfo{
		TotalRetrans: ti.Total_retrans,
		Cwnd:         ti.Snd_cwnd,
		MSS:          ti.Snd_mss,
		RTT:          time.Duration(ti.Rtt) * time.Microsecond,
		RTTVar:       time.Duration(ti.Rttvar) * time.Microsecond,
	}, nil
}
