// Command gofloor is the floor for busy polling in Go on this machine: the
// least a Go program can do per UDP round trip, with none of volley's
// work. The server spins on non-blocking recvfrom and answers with sendto;
// the client sends, spins on read until the answer and records the round
// trip. Run by bench/compare.sh beside sockperf --nonblocked, so that
// volley's busy-poll ratio can be read against what Go itself costs:
//
//	gofloor -server 127.0.0.1:12999 &
//	gofloor -client 127.0.0.1:12999 -t 3s   # p50 p99 p99.9 (µs) round-trips/s
//
// It is a measuring stick, not part of volley.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	server := flag.String("server", "", "answer on this UDP address")
	client := flag.String("client", "", "send to this UDP address")
	dur := flag.Duration("t", 3*time.Second, "client: how long to run")
	flag.Parse()
	var err error
	switch {
	case *server != "":
		err = serve(*server)
	case *client != "":
		err = run(*client, *dur)
	default:
		err = fmt.Errorf("want -server ADDR or -client ADDR")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(1)
	}
}

// fdOf returns c's descriptor; the caller keeps c alive (runtime.KeepAlive)
// while it uses it, or c's finalizer closes it.
func fdOf(c syscall.Conn) (uintptr, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd uintptr
	err = rc.Control(func(f uintptr) { fd = f })
	return fd, err
}

func serve(addr string) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return err
	}
	fd, err := fdOf(c)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(c)
	buf := make([]byte, 2048)
	var sa unix.RawSockaddrInet6
	for {
		nl := uint32(unsafe.Sizeof(sa))
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.MSG_DONTWAIT,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&nl)))
		switch e {
		case 0:
			unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&buf[0])), n, unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), uintptr(nl))
		case unix.EAGAIN, unix.EINTR:
		default:
			return e
		}
	}
}

func run(addr string, dur time.Duration) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	fd, err := fdOf(c.(*net.UDPConn))
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(c)
	buf := make([]byte, 2048)
	rtts := make([]time.Duration, 0, 1<<20)
	var lost int
	start := time.Now()
	for time.Since(start) < dur {
		t1 := time.Now()
		if _, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&buf[0])), 64, unix.MSG_DONTWAIT, 0, 0); e != 0 {
			continue // the socket's buffer is full: try again
		}
		for {
			_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if e == 0 {
				rtts = append(rtts, time.Since(t1))
				break
			}
			if e != unix.EAGAIN && e != unix.EINTR {
				return e
			}
			if time.Since(t1) > 10*time.Millisecond {
				lost++
				break
			}
		}
	}
	if len(rtts) == 0 {
		return fmt.Errorf("no answer from %s", addr)
	}
	secs := time.Since(start).Seconds()
	slices.Sort(rtts)
	q := func(p float64) float64 { return float64(rtts[int(p*float64(len(rtts)-1))]) / 1e3 }
	fmt.Printf("%.2f %.2f %.2f %.0f\n", q(0.5), q(0.99), q(0.999), float64(len(rtts))/secs)
	if lost > 0 {
		fmt.Fprintf(os.Stderr, "gofloor: %d probes got no answer within 10ms\n", lost)
	}
	return nil
}
