package sockopt

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func (o Options) apply(fd int, network string) error {
	v6 := strings.HasSuffix(network, "6")
	tcp := strings.HasPrefix(network, "tcp")
	if o.Interface != "" {
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, o.Interface); err != nil {
			return fmt.Errorf("--interface %s (SO_BINDTODEVICE): %w", o.Interface, err)
		}
	}
	if o.Buffer > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.Buffer); err != nil {
			return fmt.Errorf("--buffer %d (SO_SNDBUF): %w", o.Buffer, err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.Buffer); err != nil {
			return fmt.Errorf("--buffer %d (SO_RCVBUF): %w", o.Buffer, err)
		}
	}
	if o.TOS >= 0 {
		level, opt := unix.IPPROTO_IP, unix.IP_TOS
		if v6 {
			level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
		}
		if err := unix.SetsockoptInt(fd, level, opt, o.TOS); err != nil {
			return fmt.Errorf("--tos %d: %w", o.TOS, err)
		}
	}
	if o.TTL > 0 {
		level, opt := unix.IPPROTO_IP, unix.IP_TTL
		if v6 {
			level, opt = unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS
		}
		if err := unix.SetsockoptInt(fd, level, opt, o.TTL); err != nil {
			return fmt.Errorf("--ttl %d: %w", o.TTL, err)
		}
	}
	if o.DF {
		level, opt, val := unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO
		if v6 {
			level, opt, val = unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO
		}
		if err := unix.SetsockoptInt(fd, level, opt, val); err != nil {
			return fmt.Errorf("--df: %w", err)
		}
	}
	if tcp && o.Congestion != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
			return congestionError(o.Congestion, err)
		}
	}
	// NoDelayOff is applied after the connect: Go sets TCP_NODELAY as it
	// connects.
	return nil
}

// Read returns what the kernel applied to the socket behind c, of
// network "udp", "udp6", "tcp" or "tcp6".
func Read(c syscall.RawConn, network string) (Granted, error) {
	var g Granted
	var serr error
	v6 := strings.HasSuffix(network, "6")
	err := c.Control(func(fd uintptr) {
		f := int(fd)
		g.SendBuffer, serr = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if serr != nil {
			return
		}
		g.RecvBuffer, _ = unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_RCVBUF)
		if v6 {
			g.TOS, _ = unix.GetsockoptInt(f, unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
			g.TTL, _ = unix.GetsockoptInt(f, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS)
			d, _ := unix.GetsockoptInt(f, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER)
			g.DF = d == unix.IPV6_PMTUDISC_DO
		} else {
			g.TOS, _ = unix.GetsockoptInt(f, unix.IPPROTO_IP, unix.IP_TOS)
			g.TTL, _ = unix.GetsockoptInt(f, unix.IPPROTO_IP, unix.IP_TTL)
			d, _ := unix.GetsockoptInt(f, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER)
			g.DF = d == unix.IP_PMTUDISC_DO
		}
		if strings.HasPrefix(network, "tcp") {
			g.Congestion, _ = unix.GetsockoptString(f, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
			nd, _ := unix.GetsockoptInt(f, unix.IPPROTO_TCP, unix.TCP_NODELAY)
			g.NoDelay = nd != 0
		}
		g.Interface, _ = unix.GetsockoptString(f, unix.SOL_SOCKET, unix.SO_BINDTODEVICE)
	})
	if err != nil {
		return g, err
	}
	return g, serr
}

// QuickAcker returns a function that turns on TCP_QUICKACK on c's socket,
// which the kernel turns off again as it pleases: a reflector calls it
// after each read, as iperf 2's bounceback server does, so that requests
// are acknowledged at once. The function does not allocate.
func QuickAcker(c syscall.RawConn) func() error {
	var serr error
	set := func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1) }
	return func() error {
		if err := c.Control(set); err != nil {
			return err
		}
		return serr
	}
}
