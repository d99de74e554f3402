package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/kwait"
)

// busyPair is pair with both sockets busy-polling.
func busyPair(t *testing.T) (*PacketConn, *Conn) {
	t.Helper()
	p, c := pair(t)
	if err := p.SetBusyPoll(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBusyPoll(true); err != nil {
		t.Fatal(err)
	}
	return p, c
}

// TestBusyLeavesPoller: busy-polling sockets are out of the runtime's
// poller, so that what they send and receive wakes no other thread;
// datagrams still go both ways through every read and write, and turned
// back, the sockets rejoin the poller, whose reads get what comes.
func TestBusyLeavesPoller(t *testing.T) {
	p, c := busyPair(t)
	if kwait.InPoller(p.c) || kwait.InPoller(c.UDPConn) {
		t.Fatalf("busy sockets still in the poller: reflector %v, client %v", kwait.InPoller(p.c), kwait.InPoller(c.UDPConn))
	}
	p.SetDeadline(time.Now().Add(10 * time.Second))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for i := range 20 {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		n, from, err := p.ReadFrom(buf)
		if n != 1 || err != nil || buf[0] != byte(i) {
			t.Fatalf("busy ReadFrom = %d, %v, %v", n, err, buf[:n])
		}
		if _, err := p.WriteTo([]byte{byte(i) + 100}, from); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != byte(i)+100 {
			t.Fatalf("busy Read = %d, %v, %v", n, err, buf[:n])
		}
	}
	if err := p.SetBusyPoll(false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBusyPoll(false); err != nil {
		t.Fatal(err)
	}
	if !kwait.InPoller(p.c) || !kwait.InPoller(c.UDPConn) {
		t.Fatalf("sockets not back in the poller: reflector %v, client %v", kwait.InPoller(p.c), kwait.InPoller(c.UDPConn))
	}
	if _, err := c.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	if n, _, err := p.ReadFrom(buf); n != 1 || err != nil || buf[0] != 7 {
		t.Fatalf("ReadFrom in the poller again = %d, %v", n, err)
	}
}

// TestBusyClose: Close ends a spinning read that has no deadline, on
// either socket, with net.ErrClosed: one just begun, and one that has
// spun a while (failed some receives first).
func TestBusyClose(t *testing.T) {
	for _, spun := range []bool{false, true} {
		t.Run(fmt.Sprintf("spun=%v", spun), func(t *testing.T) {
			p, c := busyPair(t)
			errs := make(chan error, 2)
			begun := make(chan struct{}, 2)
			spin := func(setDeadline func(time.Time) error, read func() error) {
				if spun {
					setDeadline(time.Now().Add(time.Millisecond))
					read() // spins to its deadline; the next spins with none
					setDeadline(time.Time{})
				}
				begun <- struct{}{}
				errs <- read()
			}
			go spin(p.SetReadDeadline, func() error {
				_, err := p.ReadBatch([]Message{{Buf: make([]byte, 64)}})
				return err
			})
			go spin(c.SetReadDeadline, func() error {
				_, err := c.Read(make([]byte, 64))
				return err
			})
			<-begun
			<-begun
			// In goroutines: Close waits for a read in progress to
			// return, and must not hang the test where a spin does not
			// look at it.
			go p.Close()
			go c.Close()
			for range 2 {
				select {
				case err := <-errs:
					if !errors.Is(err, net.ErrClosed) {
						t.Errorf("spinning read after Close: %v, want net.ErrClosed", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a spinning read went on after Close")
				}
			}
		})
	}
}

// TestBusyReadFromDeadline: a busy ReadFrom on a quiet socket spins to its
// deadline (it must not wait in the kernel: the socket, out of the
// poller, is blocking).
func TestBusyReadFromDeadline(t *testing.T) {
	p, c := busyPair(t)
	done := make(chan error, 1)
	go func() {
		p.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, _, err := p.ReadFrom(make([]byte, 64))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("busy ReadFrom on a quiet socket = %v, want the deadline", err)
		}
	case <-time.After(10 * time.Second):
		c.Write([]byte{1}) // ends the read, so that Close does not wait for it
		t.Fatal("a busy ReadFrom went on past its deadline")
	}
}

// TestSendFull: what a send that found the buffer full does next, by
// socket: in the poller it waits there; a busy socket's raw try becomes
// a call that waits in the kernel; a blocking socket's tries again until
// its write deadline or Close.
func TestSendFull(t *testing.T) {
	p, _ := pair(t)
	b := p.b
	call, flags, wait := b.sendCall()
	if again, err := b.full(&call, &flags, wait); again || err != nil {
		t.Errorf("in the poller: again %v, %v; want to wait in the poller", again, err)
	}
	if err := p.SetBusyPoll(true); err != nil {
		t.Fatal(err)
	}
	call, flags, wait = b.sendCall()
	if flags&unix.MSG_DONTWAIT == 0 || !wait {
		t.Fatalf("busy: flags %#x, wait %v; want a raw try that does not wait, out of the poller", flags, wait)
	}
	if again, err := b.full(&call, &flags, wait); !again || err != nil || flags != 0 {
		t.Errorf("busy, full: again %v, %v, flags %#x; want to wait in the kernel", again, err, flags)
	}
	if again, err := b.full(&call, &flags, wait); !again || err != nil {
		t.Errorf("waiting in the kernel, no deadline: again %v, %v; want to try again", again, err)
	}
	p.SetWriteDeadline(time.Now().Add(-time.Second))
	if again, err := b.full(&call, &flags, wait); again || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("past the write deadline: again %v, %v", again, err)
	}
	p.SetWriteDeadline(time.Time{})
	p.Close()
	if again, err := b.full(&call, &flags, wait); again || !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed: again %v, %v", again, err)
	}
}

// TestBusyWriteTo: a busy socket out of the poller sends to an address
// of the other family with a clear error, and to its own family's.
func TestBusyWriteTo(t *testing.T) {
	p, c := busyPair(t)
	if _, err := p.WriteTo([]byte{1}, netip.MustParseAddrPort("[2001:db8::1]:9")); err == nil {
		t.Error("an IPv6 destination on an IPv4 socket was accepted")
	}
	if _, err := p.WriteTo([]byte{2}, netip.MustParseAddrPort(c.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 8)
	if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != 2 {
		t.Fatalf("Read = %d, %v", n, err)
	}
}

// readWaiting starts read, lets it find nothing and wait (in the poller,
// in the kernel or spinning; if it has not, it reads the datagram at once,
// and a caller's checks hold either way), then sends with send and
// returns what the read returned.
func readWaiting(t *testing.T, read func() (int, error), send func() error) (int, error) {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := read()
		got <- result{n, err}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := send(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	return r.n, r.err
}

// TestBusyStampedSpin: a busy read that spins (its queue empty when it
// began) for a socket whose stamps and path are on returns the datagram
// that came, one, with its sender, its receive stamp, its TTL and traffic
// class, at both ends; datagrams queued before a read still come in one
// batch.
func TestBusyStampedSpin(t *testing.T) {
	p, c := busyPair(t)
	for _, s := range []interface {
		EnableTimestamps(bool) error
		EnablePath() error
	}{p, c} {
		if err := s.EnableTimestamps(false); err != nil {
			t.Fatal(err)
		}
		if err := s.EnablePath(); err != nil {
			t.Fatal(err)
		}
	}
	p.SetDeadline(time.Now().Add(10 * time.Second))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	ms := make([]Message, MaxBatch)
	for i := range ms {
		ms[i].Buf = make([]byte, 128)
	}
	check := func(who string, n int, err error, want byte, from netip.AddrPort) {
		t.Helper()
		m := ms[0]
		switch {
		case err != nil || n != 1:
			t.Fatalf("%s: ReadBatch = %d, %v: want the one datagram", who, n, err)
		case m.N != 3 || m.Buf[0] != want:
			t.Fatalf("%s: got %d bytes %v, want 3 starting %d", who, m.N, m.Buf[:m.N], want)
		case from.IsValid() && m.Addr != from:
			t.Fatalf("%s: from %v, want %v", who, m.Addr, from)
		case m.Stamp.SW == 0 || !m.Path.OK || m.Path.TTL == 0:
			t.Fatalf("%s: stamp %+v, path %+v: want both", who, m.Stamp, m.Path)
		}
	}
	cAddr := netip.MustParseAddrPort(c.LocalAddr().String())
	for i := range 5 {
		n, err := readWaiting(t, func() (int, error) { return p.ReadBatch(ms) }, func() error {
			_, err := c.Write([]byte{byte(i), 1, 2})
			return err
		})
		check("reflector", n, err, byte(i), cAddr)
		n, err = readWaiting(t, func() (int, error) { return c.ReadBatch(ms[:1]) }, func() error {
			_, err := p.WriteTo([]byte{byte(i) + 100, 1, 2}, cAddr)
			return err
		})
		check("client", n, err, byte(i)+100, netip.AddrPort{})
	}
	for i := range 3 {
		if _, err := c.Write([]byte{byte(i), 1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	// Loopback queues each datagram within its send.
	if n, err := p.ReadBatch(ms); n != 3 || err != nil {
		t.Fatalf("ReadBatch with three queued = %d, %v: want them in one batch", n, err)
	}
}
