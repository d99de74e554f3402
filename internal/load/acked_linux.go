package load

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bytesAcked returns the bytes of a TCP socket its peer acknowledged
// (TCP_INFO's tcpi_bytes_acked).
func bytesAcked(rc syscall.RawConn) (uint64, error) {
	var n uint64
	var serr error
	if err := rc.Control(func(fd uintptr) {
		ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			serr = err
			return
		}
		n = ti.Bytes_acked
	}); err != nil {
		return 0, err
	}
	return n, serr
}
