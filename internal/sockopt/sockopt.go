// Package sockopt applies volley's socket options (the client's --tos,
// --ttl, --df, --buffer, --congestion, --interface, --nodelay and the
// reflector's TCP_QUICKACK) and reads back what the kernel granted.
// Options a platform lacks fail with errors.ErrUnsupported: never a silent
// no-op.
package sockopt

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Options are the socket options of a run. The zero value changes
// nothing; NoDelay is on unless NoDelayOff.
type Options struct {
	TOS        int    // IP_TOS / IPV6_TCLASS; -1: the system's
	TTL        int    // IP_TTL / IPV6_UNICAST_HOPS; 0: the system's
	DF         bool   // don't fragment (UDP): path MTU discovery "do"
	Buffer     int    // SO_SNDBUF and SO_RCVBUF; 0: volley's default
	Congestion string // TCP_CONGESTION
	Interface  string // SO_BINDTODEVICE
	NoDelayOff bool   // TCP: leave Nagle's algorithm on
}

// Granted is what the kernel applied to a socket, as Read finds it: the
// buffer sizes it doubled for its bookkeeping, the TOS and TTL in force,
// and for TCP the congestion control and Nagle's algorithm. The caller
// turns it into its report's form (result.Socket), so that the packages
// that open sockets need not know the report.
type Granted struct {
	SendBuffer int    // SO_SNDBUF
	RecvBuffer int    // SO_RCVBUF
	TOS        int    // IP_TOS / IPV6_TCLASS
	TTL        int    // IP_TTL / IPV6_UNICAST_HOPS
	DF         bool   // path MTU discovery "do"
	Congestion string // TCP_CONGESTION; TCP only
	NoDelay    bool   // TCP_NODELAY; TCP only
	Interface  string // SO_BINDTODEVICE; "": none
}

// ErrCongestion: the congestion control algorithm asked for is not
// available.
var ErrCongestion = errors.New("unknown TCP congestion control algorithm")

// Control returns a net.Dialer/ListenConfig Control function that applies
// o to the socket before it connects or binds. network is "udp4", "tcp6"
// and so on.
func (o Options) Control(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) { serr = o.apply(int(fd), network) })
	if err != nil {
		return err
	}
	return serr
}

// Apply applies o to the socket fd, as Control does, for a socket opened
// without package net (network is "tcp4", "udp6" and so on). It does not
// allocate.
func (o Options) Apply(fd int, network string) error { return o.apply(fd, network) }

// Available lists the congestion control algorithms the kernel offers.
func Available() []string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

func congestionError(name string, err error) error {
	if av := Available(); len(av) > 0 {
		return fmt.Errorf("%w %q (available: %s)", ErrCongestion, name, strings.Join(av, ", "))
	}
	return fmt.Errorf("%w %q: %v", ErrCongestion, name, err)
}
