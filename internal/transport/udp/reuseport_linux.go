//go:build linux

package udp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort sets SO_REUSEPORT, so that several sockets share one port and
// the kernel spreads the peers among them by address.
func reusePort(network, address string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
