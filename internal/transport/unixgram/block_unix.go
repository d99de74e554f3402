//go:build unix

package unixgram

import (
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
)

// SetBlockingReads makes ReadFrom wait inside the kernel on the caller's
// thread, out of the runtime's poller (see package kwait), as
// udp.PacketConn.SetBlockingReads does; replies never waited anyway
// (MSG_DONTWAIT). Linux only.
func (p *PacketConn) SetBlockingReads(on bool) error {
	rc, err := p.c.SyscallConn()
	if err != nil {
		return err
	}
	if !on {
		br := p.block.Swap(nil)
		if br == nil {
			return nil
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = br.ks.Rejoin(int(fd)) }); err != nil {
			return err
		}
		return serr
	}
	if p.block.Load() != nil {
		return nil
	}
	// One reader for the socket's life: its kwait.Socket keeps the
	// poller entry read at the first move (a reflector moves at every
	// busy spell; the read from /proc grows with its connections).
	br := p.reader
	if br == nil {
		br = &blockReader{rc: rc, deadline: &p.rdeadline}
		br.fn = br.recv
		p.reader = br
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = br.ks.Leave(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	p.block.Store(br)
	return nil
}

// recv receives one datagram into br.buf, waiting in the kernel up to the
// read deadline.
func (br *blockReader) recv(fd uintptr) {
	br.n, br.from, br.err = 0, "", nil
	for {
		if err := br.ks.Wait(fd, br.deadline.Load()); err != nil {
			if err == os.ErrDeadlineExceeded {
				// What is there already is read, deadline or not.
				if n, from, rerr := unix.Recvfrom(int(fd), br.buf, unix.MSG_DONTWAIT); rerr == nil && !br.closing.Load() {
					br.n = n
					if sa, ok := from.(*unix.SockaddrUnix); ok {
						br.from = sa.Name
					}
					return
				}
			}
			br.err = err
			return
		}
		if !br.ks.Block(br.deadline.Load(), clock.MonoNow()) {
			continue // Wait takes what is queued and says the deadline
		}
		n, from, err := unix.Recvfrom(int(fd), br.buf, 0)
		br.ks.Unblock()
		if br.closing.Load() {
			br.err = net.ErrClosed // Close woke it: what came came too late
			return
		}
		switch err {
		case nil:
			br.n = n
			if sa, ok := from.(*unix.SockaddrUnix); ok {
				br.from = sa.Name
			}
			return
		case unix.EAGAIN, unix.EINTR:
			// The socket's timeout (or a signal): look at the deadline
			// again.
		default:
			br.err = err
			return
		}
	}
}

// read reads one datagram into b: its length and its sender's socket
// address ("" for an unbound sender).
func (br *blockReader) read(b []byte) (int, string, error) {
	br.buf = b
	err := br.rc.Control(br.fn) // Read would end at the deadline before recv looks

	br.buf = nil
	if err != nil {
		return 0, "", err
	}
	return br.n, br.from, br.err
}
