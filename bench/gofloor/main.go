//go:build linux

// Command gofloor is the floor for a Go ping-pong on this machine: the
// least a Go program can do per UDP round trip, with none of volley's
// work, in two modes, each at both ends:
//
//   - busy (default): the server spins on non-blocking recvfrom and
//     answers with sendto; the client sends and spins on read until the
//     answer. The floor for volley --busy-poll.
//   - block: blocking read/recvfrom and sendto system calls on sockets the
//     program opened itself (never in the runtime's poller), each end on a
//     locked OS thread. The floor for volley's default path.
//
// Run by bench/gofloor.sh and bench/compare.sh beside sockperf, so that
// volley's ratios can be read against what Go itself costs:
//
//	gofloor -server 127.0.0.1:12999 [-mode block] &
//	gofloor -client 127.0.0.1:12999 -t 3s [-mode block]   # p50 p99 p99.9 (µs) round-trips/s
//
// With -stamps at both ends, each datagram also carries the kernel's work
// that volley's default kernel stamps and path marks ask for (stamped.go).
// With -tcp at both ends, the two modes run over a TCP connection, with
// messages of -size bytes (tcp.go); with -unix, over a Unix stream socket
// at the path -server and -client name.
//
// It is a measuring stick, not part of volley.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	server := flag.String("server", "", "answer on this address (UDP, -tcp's, or -unix's path)")
	client := flag.String("client", "", "send to this address (UDP, -tcp's, or -unix's path)")
	dur := flag.Duration("t", 3*time.Second, "client: how long to run")
	mode := flag.String("mode", "busy", "busy: spin on non-blocking calls; block: blocking calls on locked threads")
	flag.BoolVar(&stamps, "stamps", false, "ask for the kernel's work a default volley run asks for: stamps and path marks (stamped.go); both ends")
	partList := flag.String("parts", "rx,tx,marks", "-stamps: which of that work, a list of rx, tx and marks, or none (stamped.go)")
	tcp := flag.Bool("tcp", false, "ping-pong over TCP (tcp.go); both ends")
	unixStream := flag.Bool("unix", false, "ping-pong over a Unix stream socket at the path -server and -client name, as -tcp's; both ends")
	size := flag.Int("size", 100, "-tcp, -unix: bytes in a message")
	flag.Parse()
	partsSet := false
	flag.Visit(func(f *flag.Flag) { partsSet = partsSet || f.Name == "parts" })
	network, w, err := settings(*mode, *tcp, *unixStream, partsSet, *partList, *size)
	if err == nil && *server == "" && *client == "" {
		err = fmt.Errorf("want -server ADDR or -client ADDR")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(2)
	}
	switch {
	case network != "" && *server != "":
		err = serveStream(network, *server, w, *size)
	case network != "" && *client != "":
		err = runStream(network, *client, *dur, w, *size)
	case *server != "" && *mode == "block":
		err = serveBlocking(*server)
	case *client != "" && *mode == "block":
		err = runBlocking(*client, *dur)
	case *server != "":
		err = serve(*server)
	default:
		err = run(*client, *dur)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(1)
	}
}

// stamps: -stamps.
var stamps bool

// settings checks the flags: it returns the stream floor's network ("tcp"
// or "unix"; "": the UDP floor) and how its calls wait, and sets parts.
func settings(mode string, tcp, unixStream, partsSet bool, partList string, size int) (network string, w wait, err error) {
	switch {
	case mode != "busy" && mode != "block":
		return "", 0, fmt.Errorf("-mode %q: want busy or block", mode)
	case tcp && unixStream:
		return "", 0, fmt.Errorf("-tcp or -unix, not both")
	case tcp:
		network = "tcp"
	case unixStream:
		network = "unix"
	}
	switch {
	case partsSet && (!stamps || network != ""):
		return "", 0, fmt.Errorf("-parts goes with -stamps, over UDP")
	case network != "" && (stamps || size < 1):
		return "", 0, fmt.Errorf("-%s: no -stamps, and a -size of 1 byte or more", network)
	case mode == "busy":
		w = busyWait
	case network == "unix":
		w = polling
	}
	return network, w, setParts(partList)
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

// busySocket opens the busy floor's socket for addr: the runtime's own
// (net.ListenUDP, net.Dial), or with -stamps one outside the runtime's
// poller, as volley's busy sockets are (in it, every transmit stamp would
// wake the poller's thread), and its stamper. done releases it.
func busySocket(addr string, connect bool) (fd uintptr, st *stamper, done func(), err error) {
	if stamps {
		sfd, st, err := udpSocket(addr, connect)
		return uintptr(sfd), st, func() { unix.Close(sfd) }, err
	}
	var c *net.UDPConn
	if connect {
		nc, err := net.Dial("udp", addr)
		if err != nil {
			return 0, nil, nil, err
		}
		c = nc.(*net.UDPConn)
	} else {
		ua, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return 0, nil, nil, err
		}
		if c, err = net.ListenUDP("udp", ua); err != nil {
			return 0, nil, nil, err
		}
	}
	fd, err = fdOf(c)
	return fd, nil, func() { c.Close() }, err
}

func serve(addr string) error {
	fd, st, done, err := busySocket(addr, false)
	if err != nil {
		return err
	}
	defer done()
	buf := make([]byte, 2048)
	var sa unix.RawSockaddrInet6
	for {
		if st != nil {
			if n, e := st.recv(unix.RawSyscall6, buf, unix.MSG_DONTWAIT); e == 0 {
				st.reply(unix.RawSyscall6, buf[:n])
				st.drain()
			} else if e != unix.EAGAIN && e != unix.EINTR {
				return e
			}
			continue
		}
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
	fd, st, done, err := busySocket(addr, true)
	if err != nil {
		return err
	}
	defer done()
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
			var e unix.Errno
			if st != nil {
				_, e = st.recv(unix.RawSyscall6, buf, unix.MSG_DONTWAIT)
			} else {
				_, _, e = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			}
			if e == 0 {
				rtts = append(rtts, time.Since(t1))
				if st != nil {
					st.drain()
				}
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
	return report(addr, rtts, lost, time.Since(start))
}

// report prints the round trips' p50, p99 and p99.9 in µs and their rate.
func report(addr string, rtts []time.Duration, lost int, took time.Duration) error {
	if len(rtts) == 0 {
		return fmt.Errorf("no answer from %s", addr)
	}
	secs := took.Seconds()
	slices.Sort(rtts)
	q := func(p float64) float64 { return float64(rtts[int(p*float64(len(rtts)-1))]) / 1e3 }
	fmt.Printf("%.2f %.2f %.2f %.0f\n", q(0.5), q(0.99), q(0.999), float64(len(rtts))/secs)
	if lost > 0 {
		fmt.Fprintf(os.Stderr, "gofloor: %d probes got no answer within 10ms\n", lost)
	}
	return nil
}
