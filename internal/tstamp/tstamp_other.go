//go:build !linux

package tstamp

import (
	"errors"
	"net/netip"
)

// Query is Linux's.
func Query(iface string) (Caps, error) { return Caps{}, errors.ErrUnsupported }

// Enable is Linux's.
func Enable(fd int, hw bool) error { return errors.ErrUnsupported }

// EnableSched is Linux's.
func EnableSched(fd int, hw bool) (bool, error) { return false, errors.ErrUnsupported }

// RxControlLen and TxControlLen are Linux's.
const (
	RxControlLen = 0
	TxControlLen = 0
)

// ParseRx is Linux's.
func ParseRx(oob []byte) Stamp { return Stamp{} }

// ParseTx is Linux's.
func ParseTx(oob []byte) (TxStamp, bool) { return TxStamp{}, false }

// PrepareHardware is Linux's.
func PrepareHardware(iface string) error { return errors.ErrUnsupported }

// InterfaceOf is Linux's.
func InterfaceOf(addr netip.Addr) (string, error) { return "", errors.ErrUnsupported }
