package stream

import (
	"io"
	"syscall"

	"github.com/volley-net/volley/internal/kwait"
)

// SetBlockingReads makes reads wait for data inside the kernel, on the
// reader's thread, as a blocking recv does in C, instead of in the
// runtime's poller (see package kwait): the lightest wait there is for a
// reader that has its thread to itself (runtime.LockOSThread), such as a
// ping-pong's. Writes wait in the kernel too. Read and write deadlines
// still hold (to the kernel's tick; on a Unix stream, a wait for a
// message's start, in ppoll, to the timer's), interrupts and Close
// included (seen within kwait.Cap). Not with busy polling, and for TCP
// and Unix sockets on Linux only. Turning it off is the reader's to do,
// between its reads (see kwait.Copy.Release).
func (c *Conn) SetBlockingReads(on bool) error {
	if on && c.busy.Load() != nil {
		return ErrBusyBlocking
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return errBusyUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return c.block.Set(rc, on)
}

// readBlocking reads what is there, waiting in the kernel; 0 bytes is the
// peer's end.
func readBlocking(b *kwait.Conn, p []byte, rest bool) (int, error) {
	var n int
	var err error
	if rest {
		n, err = b.ReadRest(p)
	} else {
		n, err = b.Read(p)
	}
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}
