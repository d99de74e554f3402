//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The blocking floor: sockets opened with socket(2), so never in the
// runtime's poller, read with blocking calls the scheduler hears of
// (unix.Syscall), each end on a locked thread that yields now and then
// (a locked thread that goes from one system call to the next makes the
// runtime's monitor take its P away again and again).

const yieldEvery = 256

// udpSocket opens a blocking UDP socket for addr's family, bound (server)
// or connected (client) to addr, and with -stamps its stamper.
func udpSocket(addr string, connect bool) (int, *stamper, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, nil, err
	}
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ap.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	if connect {
		err = unix.Connect(fd, sa)
	} else {
		err = unix.Bind(fd, sa)
	}
	var st *stamper
	if err == nil && stamps {
		st, err = newStamper(fd, ap.Addr().Is4())
	}
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, st, nil
}

func serveBlocking(addr string) error {
	runtime.LockOSThread()
	fd, st, err := udpSocket(addr, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := make([]byte, 2048)
	var sa unix.RawSockaddrInet6
	for i := 0; ; i++ {
		if i%yieldEvery == 0 {
			runtime.Gosched()
		}
		if st != nil {
			if n, e := st.recv(unix.Syscall6, buf, 0); e == 0 {
				st.reply(unix.Syscall6, buf[:n])
				st.drain()
			} else if e != unix.EINTR {
				return e
			}
			continue
		}
		nl := uint32(unsafe.Sizeof(sa))
		n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&nl)))
		switch e {
		case 0:
			unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), n, unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), uintptr(nl))
		case unix.EINTR:
		default:
			return e
		}
	}
}

func runBlocking(addr string, dur time.Duration) error {
	runtime.LockOSThread()
	fd, st, err := udpSocket(addr, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// A lost datagram ends its read after 10 ms.
	tv := unix.NsecToTimeval(int64(10 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	out, buf := make([]byte, 64), make([]byte, 2048)
	rtts := make([]time.Duration, 0, 1<<20)
	var lost int
	start := time.Now()
	for i := uint64(0); time.Since(start) < dur; i++ {
		if i%yieldEvery == 0 {
			runtime.Gosched()
		}
		// Each probe carries its number: a late answer to a lost one is
		// not taken for this one's.
		binary.LittleEndian.PutUint64(out, i)
		t1 := time.Now()
		if _, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&out[0])), uintptr(len(out))); e != 0 {
			if e == unix.ECONNREFUSED {
				return fmt.Errorf("no server at %s", addr)
			}
			continue
		}
		for {
			var n uintptr
			var e unix.Errno
			if st != nil {
				m, errno := st.recv(unix.Syscall6, buf, 0)
				n, e = uintptr(m), errno
			} else {
				n, _, e = unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			}
			if e == 0 {
				if n < 8 || binary.LittleEndian.Uint64(buf) != i {
					continue // a late answer to an earlier probe
				}
				rtts = append(rtts, time.Since(t1))
				if st != nil {
					st.drain()
				}
				break
			}
			if e == unix.EAGAIN {
				lost++
				break
			}
			if e != unix.EINTR {
				return e
			}
		}
	}
	return report(addr, rtts, lost, time.Since(start))
}
