package kwait

import (
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCopy: a Copy is another descriptor of the same socket; Enter gives
// it until Release, or while the closing flag is set not at all; Release
// waits for a call under way to Leave, closes the copy, and is harmless a
// second time, and on a nil Copy.
func TestCopy(t *testing.T) {
	ln, rc := udpRaw(t)
	var orig uintptr
	rc.Control(func(fd uintptr) { orig = fd })
	c := NewCopy(rc)
	if c == nil {
		t.Skip("skipping: no descriptor to copy into")
	}
	var closing atomic.Bool
	fd, ok := c.Enter(&closing)
	if !ok || fd == orig {
		t.Fatalf("Enter = %d, %v; want a descriptor other than the socket's %d", fd, ok, orig)
	}
	// The same socket: its local address.
	sa, err := unix.Getsockname(int(fd))
	if a, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || a.Port != ln.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("the copy's address %v (%v), want the socket's %v", sa, err, ln.LocalAddr())
	}
	released := make(chan struct{})
	go func() {
		c.Release()
		close(released)
	}()
	select {
	case <-released:
		t.Fatal("Release returned with a call under way")
	case <-time.After(20 * time.Millisecond):
	}
	if _, ok := c.Enter(&closing); ok {
		t.Fatal("Enter during Release: ok, want the RawConn")
	}
	c.Leave()
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("Release did not return after the call left")
	}
	if _, err := unix.Getsockname(int(fd)); err != unix.EBADF {
		t.Fatalf("the copy after Release: %v, want it closed (EBADF)", err)
	}
	c.Release() // a second time: returns
	var none *Copy
	if _, ok := none.Enter(&closing); ok {
		t.Fatal("a nil Copy's Enter: ok")
	}
	none.Release()

	c2 := NewCopy(rc)
	closing.Store(true)
	if _, ok := c2.Enter(&closing); ok {
		t.Fatal("Enter with the closing flag set: ok, want the RawConn")
	}
	c2.Release()
}

// TestSlotClosingFirst: a Conn that Set makes after Closing was called
// (a Close that looked before the Conn was stored) is closing at once,
// its copy released: it does not go on with a closed connection.
func TestSlotClosingFirst(t *testing.T) {
	_, rc := udpRaw(t)
	var s Slot
	s.Closing()
	if err := s.Set(rc, true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	c := s.Conn()
	if !c.closing.Load() {
		t.Fatal("a Conn set after Closing is not closing")
	}
	var closing atomic.Bool
	if _, ok := c.cp.Enter(&closing); ok {
		t.Fatal("its copy still takes calls")
	}
	if err := s.Set(rc, false); err != nil {
		t.Fatal(err)
	}
}

// udpRaw returns a UDP socket on loopback, closed when the test ends, and
// its RawConn.
func udpRaw(t *testing.T) (net.PacketConn, syscall.RawConn) {
	t.Helper()
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	rc, err := ln.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return ln, rc
}
