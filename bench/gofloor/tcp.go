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

// A wait is how a stream floor's calls wait for their socket.
type wait int

const (
	blocking wait = iota // blocking calls the scheduler hears of
	busyWait             // raw calls that never wait
	polling              // reads wait in ppoll, then read without waiting (-unix); writes block
)

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

// streamIO reads (or writes) all of p on fd, waiting as w says. A read
// that has not finished by limit (zero: none) ends with
// os.ErrDeadlineExceeded, the peer's end with io.EOF.
func streamIO(fd uintptr, p []byte, w wait, write bool, limit time.Time) error {
	call, flags := unix.Syscall6, uintptr(0)
	pollFirst := w == polling && !write
	if w == busyWait || pollFirst {
		call, flags = unix.RawSyscall6, unix.MSG_DONTWAIT
	}
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	var ts unix.Timespec
	nr := uintptr(unix.SYS_RECVFROM)
	if write {
		nr, flags = unix.SYS_SENDTO, flags|unix.MSG_NOSIGNAL
	}
	for len(p) > 0 {
		if pollFirst {
			// A second at most, as the client's blocking reads (SO_RCVTIMEO);
			// ppoll writes back what is left of it.
			ts = unix.NsecToTimespec(int64(time.Second))
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

// serveStream answers on network ("tcp" or "unix") at addr. A Unix
// socket left there by a server before it (killed, so its listener did
// not remove it) is removed first.
func serveStream(network, addr string, w wait, size int) error {
	if w != busyWait {
		runtime.LockOSThread() // as the blocking UDP floor's; the busy ones spin unlocked
	}
	if fi, err := os.Lstat(addr); network == "unix" && err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(addr)
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
			if w != busyWait && i%yieldEvery == 0 {
				runtime.Gosched()
			}
			if streamIO(fd, buf, w, false, time.Time{}) != nil || streamIO(fd, buf, w, true, time.Time{}) != nil {
				break // the client is done
			}
		}
		f.Close()
	}
}

// runStream pings the server at addr on network ("tcp" or "unix").
func runStream(network, addr string, dur time.Duration, w wait, size int) error {
	if w != busyWait {
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
		if w != busyWait && i%yieldEvery == 0 {
			runtime.Gosched()
		}
		t1 := time.Now()
		if err := streamIO(fd, buf, w, true, time.Time{}); err != nil {
			return err
		}
		if err := streamIO(fd, buf, w, false, t1.Add(time.Second)); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(t1))
	}
	return report(addr, rtts, 0, time.Since(start))
}
