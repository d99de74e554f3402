package tstamp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Enabler is a socket that takes the kernel's stamps, or with hw the
// NIC's (transport.Stamper is one).
type Enabler interface {
	EnableTimestamps(hw bool) error
}

// ErrNoStamps: a socket has no stamps per message (only UDP sockets take
// them).
var ErrNoStamps = errors.New("tstamp: no stamps per message")

// Use turns on the stamps asked for on every socket of socks and returns
// the mode in use. User asks for nothing; Kernel and Auto ask for the
// kernel's stamps, Hardware for the NIC's. A nil socket (one with no
// stamps per message: ErrNoStamps) or one that refuses makes Auto fall
// back to User, and fellBack says why; under Kernel or Hardware the
// reason is err instead. This is the one place where auto falls back.
func Use(asked Mode, socks ...Enabler) (used Mode, fellBack, err error) {
	if asked == User {
		return User, nil, nil
	}
	hw := asked == Hardware
	for _, s := range socks {
		why := ErrNoStamps
		if s != nil {
			why = s.EnableTimestamps(hw)
		}
		switch {
		case why == nil:
			continue
		case asked == Auto:
			return User, why, nil
		}
		return User, nil, why
	}
	if hw {
		return Hardware, nil, nil
	}
	return Kernel, nil, nil
}

// PrepareHardwareFor turns on hardware stamping (see PrepareHardware) on
// the interface a socket sends through: iface, or when iface is "" the
// one that holds local, the socket's local address. It returns the
// interface's name, "" when there is none (err then says why).
func PrepareHardwareFor(iface string, local net.Addr) (string, error) {
	if iface == "" {
		if local == nil {
			return "", errors.New("no interface given and no local address to find it by")
		}
		ap, err := netip.ParseAddrPort(local.String())
		if err != nil {
			return "", fmt.Errorf("%s has no network interface", local)
		}
		if iface, err = InterfaceOf(ap.Addr()); err != nil {
			return "", err
		}
	}
	return iface, PrepareHardware(iface)
}
