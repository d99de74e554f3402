package kwait

import (
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestParseEntry: an epoll instance's fdinfo gives each target's events
// and its 64-bit data whole; a descriptor it does not list is not found.
func TestParseEntry(t *testing.T) {
	info := "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n" +
		"tfd:        7 events:       19 data:           67a858  pos:0 ino:40e sdev:10\n" +
		"tfd:       15 events: 8000201d data: 3fc3b9f248000001  pos:0 ino:455c19 sdev:9\n"
	for _, tt := range []struct {
		fd     int
		ok     bool
		events uint32
		data   uint64
	}{
		{7, true, 0x19, 0x67a858},
		{15, true, 0x8000201d, 0x3fc3b9f248000001},
		{5, false, 0, 0},
		{1, false, 0, 0},
	} {
		e, ok := parseEntry(info, tt.fd)
		if ok != tt.ok {
			t.Fatalf("fd %d: found %v, want %v", tt.fd, ok, tt.ok)
		}
		if !ok {
			continue
		}
		if data := *(*uint64)(unsafe.Pointer(&e.Fd)); e.Events != tt.events || data != tt.data {
			t.Errorf("fd %d: events %x data %x, want %x %x", tt.fd, e.Events, data, tt.events, tt.data)
		}
	}
}

// TestLeaveRejoin: a socket leaves the runtime's poller and comes back
// with its entry as it was: a read waiting in the poller afterwards is
// woken by a datagram.
func TestLeaveRejoin(t *testing.T) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var s Socket
	var before, after unix.EpollEvent
	call := func(f func(fd int) error) {
		t.Helper()
		var ferr error
		if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil || ferr != nil {
			t.Fatal(err, ferr)
		}
	}
	call(func(fd int) error {
		_, e, err := pollerEntry(fd)
		before = e
		return err
	})
	call(s.Leave)
	if InPoller(a) {
		t.Fatal("the socket is still in the poller")
	}
	call(s.Rejoin)
	call(func(fd int) error {
		_, e, err := pollerEntry(fd)
		after = e
		return err
	})
	if before != after {
		t.Fatalf("the entry came back as %+v, not as it was, %+v", after, before)
	}
	b, err := net.DialUDP("udp", nil, a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		b.Write([]byte("x"))
	}()
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := a.ReadFrom(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("a read in the poller after Rejoin = %d, %v", n, err)
	}
}
