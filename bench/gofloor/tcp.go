//go:build linux

package main

import (
	"io"
	"net"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The TCP floor (-tcp): the same two modes over one TCP connection
// (TCP_NODELAY, as Go and sockperf set it), each message -size bytes read
// whole before the answer. The sockets come from the net package and
// leave it as files (os.File.Fd makes them blocking), so they are outside
// the runtime's poller, as the blocking UDP floor's are; busy calls ask
// not to wait (MSG_DONTWAIT). The server takes one connection at a time.

// With -unix, the same over a Unix stream socket at a path, except that
// a blocking read waits in ppoll for the socket to be readable, and then
// reads without waiting, as volley's do: a Unix stream socket's blocking
// read is also woken each time the peer reads what this end sent
// (docs/benchmarks.md, part 7), which a wait for POLLIN alone is not.

// streamFile takes c out of the net package: the descriptor of a copy, in
// blocking mode, and the file that owns it.
func streamFile(c net.Conn) (*os.File, uintptr, error) {
	f, err := c.(interface{ File() (*os.File, error) }).File()
	c.Close()
	if err != nil {
		return nil, 0, err
	}
	return f, f.Fd(), nil
}

// tcpIO reads (or writes) all of p on fd: with blocking calls the
// scheduler hears of, or busy, with raw calls that do not wait. A read
// that has not finished by limit (zero: none) ends with
// os.ErrDeadlineExceeded, the peer's end with io.EOF.
func tcpIO(fd uintptr, p []byte, busy, write bool, limit time.Time) error {
	call, flags := unix.Syscall6, uintptr(0)
	pollFirst := pollReads && !busy && !write
	if busy || pollFirst {
		call, flags = unix.RawSyscall6, unix.MSG_DONTWAIT
	}
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	ts := unix.NsecToTimespec(int64(time.Second)) // as the blocking reads' SO_RCVTIMEO
	nr := uintptr(unix.SYS_RECVFROM)
	if write {
		nr, flags = unix.SYS_SENDTO, flags|unix.MSG_NOSIGNAL
	}
	for len(p) > 0 {
		if pollFirst {
			unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		}
		n, _, e := call(nr, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), flags, 0, 0)
		switch {
		case e == 0 && n == 0:
			return io.EOF
		case e == 0:
			p = p[n:]
		case e == unix.EAGAIN || e == unix.EINTR:
			if !limit.IsZero() && time.Now().After(limit) {
				return os.ErrDeadlineExceeded
			}
		default:
			return e
		}
	}
	return nil
}

// pollReads: blocking reads wait in ppoll (-unix).
var pollReads bool

// serveStream answers on network ("tcp" or "unix") at addr.
func serveStream(network, addr string, busy bool, size int) error {
	pollReads = network == "unix"
	if !busy {
		runtime.LockOSThread() // as the blocking UDP floor's; the busy ones spin unlocked
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	buf := make([]byte, size)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		f, fd, err := streamFile(c)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			if !busy && i%yieldEvery == 0 {
				runtime.Gosched()
			}
			if tcpIO(fd, buf, busy, false, time.Time{}) != nil || tcpIO(fd, buf, busy, true, time.Time{}) != nil {
				break // the client is done
			}
		}
		f.Close()
	}
}

// runStream pings the server at addr on network ("tcp" or "unix").
func runStream(network, addr string, dur time.Duration, busy bool, size int) error {
	pollReads = network == "unix"
	if !busy {
		runtime.LockOSThread()
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		return err
	}
	f, fd, err := streamFile(c)
	if err != nil {
		return err
	}
	defer f.Close()
	// A blocking read wakes every second to look at its limit.
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	buf := make([]byte, size)
	rtts := make([]time.Duration, 0, 1<<20)
	start := time.Now()
	for i := 0; time.Since(start) < dur; i++ {
		if !busy && i%yieldEvery == 0 {
			runtime.Gosched()
		}
		t1 := time.Now()
		if err := tcpIO(fd, buf, busy, true, time.Time{}); err != nil {
			return err
		}
		if err := tcpIO(fd, buf, busy, false, t1.Add(time.Second)); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(t1))
	}
	return report(addr, rtts, 0, time.Since(start))
}
