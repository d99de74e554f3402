//go:build !linux

package udp

import (
	"errors"
	"syscall"
)

func reusePort(network, address string, c syscall.RawConn) error { return errors.ErrUnsupported }
