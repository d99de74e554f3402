package load

import (
	"net"
	"sync/atomic"
	"syscall"
)

// acked follows what the kernel says the peer acknowledged of an upload
// (TCP_INFO's bytes_acked), from the start of the stream's data.
type acked struct {
	rc   syscall.RawConn // nil: the system cannot tell
	base uint64          // acknowledged before the data: the handshake
	last atomic.Uint64   // the latest count read, from base
}

// init starts following c's acknowledgements, where the system tells
// them.
func (a *acked) init(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	base, err := bytesAcked(rc)
	if err != nil {
		return
	}
	a.rc, a.base = rc, base
}

// read returns the bytes acknowledged since init (the last count read,
// once the socket is closed); false when the system cannot tell.
func (a *acked) read() (uint64, bool) {
	if a.rc == nil {
		return 0, false
	}
	if n, err := bytesAcked(a.rc); err == nil && n >= a.base {
		// Counts only grow; a reader that lost a race leaves the higher.
		for {
			old := a.last.Load()
			if n-a.base <= old || a.last.CompareAndSwap(old, n-a.base) {
				break
			}
		}
	}
	return a.last.Load(), true
}
