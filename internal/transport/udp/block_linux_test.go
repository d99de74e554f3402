package udp

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/testsock"
)

// blockingPair is pair with both sockets' reads blocking.
func blockingPair(t *testing.T) (*PacketConn, *Conn) {
	t.Helper()
	p, c := pair(t)
	if err := p.SetBlockingReads(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBlockingReads(true); err != nil {
		t.Fatal(err)
	}
	return p, c
}

// TestBlockingReads: with blocking reads, datagrams go both ways through
// every read and write, a quiet socket's read ends at its deadline, and the
// sockets are out of the runtime's poller until turned back, when the
// poller hears of what came meanwhile.
func TestBlockingReads(t *testing.T) {
	p, c := pair(t)
	if !kwait.InPoller(p.c) || !kwait.InPoller(c.UDPConn) {
		t.Fatal("the sockets are not in the runtime's poller to begin with")
	}
	if err := p.SetBlockingReads(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBlockingReads(true); err != nil {
		t.Fatal(err)
	}
	if kwait.InPoller(p.c) || kwait.InPoller(c.UDPConn) {
		t.Fatal("blocking sockets still in the runtime's poller")
	}
	p.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	ms := []Message{{Buf: make([]byte, 64)}}
	if n, err := p.ReadBatch(ms); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocking ReadBatch on a quiet socket = %d, %v; want the deadline", n, err)
	}
	p.SetDeadline(time.Now().Add(5 * time.Second))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for i := range 100 {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if n, err := p.ReadBatch(ms); n != 1 || err != nil || ms[0].Buf[0] != byte(i) {
				t.Fatalf("blocking ReadBatch = %d, %v, %v", n, err, ms[0].Buf[:1])
			}
			if _, err := p.WriteBatch(ms[:1]); err != nil {
				t.Fatal(err)
			}
		} else {
			n, from, err := p.ReadFrom(buf)
			if n != 1 || err != nil || buf[0] != byte(i) {
				t.Fatalf("blocking ReadFrom = %d, %v, %v", n, err, buf[:1])
			}
			if _, err := p.WriteTo(buf[:n], from); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != byte(i) {
			t.Fatalf("blocking Read = %d, %v, %v", n, err, buf[:1])
		}
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocking Read on a quiet socket = %v, want the deadline", err)
	}

	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetBlockingReads(false); err != nil {
		t.Fatal(err)
	}
	if !kwait.InPoller(p.c) {
		t.Fatal("the socket did not go back to the runtime's poller")
	}
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := p.ReadFrom(buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Fatalf("ReadFrom back in the poller = %d, %v; want the datagram sent before", n, err)
	}
	// Back in the poller, a read waits there: the datagram sent while it
	// waits wakes it.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		time.Sleep(50 * time.Millisecond)
		c.Write([]byte{'y'})
	}()
	if n, _, err := p.ReadFrom(buf); n != 1 || err != nil || buf[0] != 'y' {
		t.Fatalf("ReadFrom waiting in the poller = %d, %v", n, err)
	}
	<-wrote
	// Out again (the poller entry kept from the first time) and back: a
	// reflector's listener moves at each busy spell.
	for i := range 3 {
		if err := p.SetBlockingReads(true); err != nil || kwait.InPoller(p.c) {
			t.Fatalf("move %d out of the poller: %v, still in it: %v", i, err, kwait.InPoller(p.c))
		}
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if n, err := p.ReadBatch(ms); n != 1 || err != nil || ms[0].Buf[0] != byte(i) {
			t.Fatalf("blocking ReadBatch after move %d = %d, %v", i, n, err)
		}
		if err := p.SetBlockingReads(false); err != nil || !kwait.InPoller(p.c) {
			t.Fatalf("move %d back to the poller: %v, in it: %v", i, err, kwait.InPoller(p.c))
		}
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			time.Sleep(20 * time.Millisecond)
			c.Write([]byte{'z'})
		}()
		if n, _, err := p.ReadFrom(buf); n != 1 || err != nil || buf[0] != 'z' {
			t.Fatalf("ReadFrom in the poller after move %d = %d, %v", i, n, err)
		}
		<-wrote
	}
}

// TestBlockingInterrupt: a read blocked with no deadline ends when another
// goroutine sets a deadline in the past (as an interrupt does), and when
// the socket is closed.
func TestBlockingInterrupt(t *testing.T) {
	p, c := blockingPair(t)
	for _, stop := range []struct {
		name string
		do   func()
		want error
	}{
		{"deadline", func() { c.SetReadDeadline(time.Unix(1, 0)) }, os.ErrDeadlineExceeded},
		{"close", func() { c.Close() }, net.ErrClosed},
	} {
		c.SetReadDeadline(time.Time{})
		done := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 64))
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // let it block
		stop.do()
		select {
		case err := <-done:
			if !errors.Is(err, stop.want) && !(stop.name == "close" && err != nil) {
				t.Fatalf("%s: the blocked read returned %v, want %v", stop.name, err, stop.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the blocked read did not return", stop.name)
		}
	}
	_ = p
}

// TestBlockingAllocs: blocking reads and their writes allocate nothing.
func TestBlockingAllocs(t *testing.T) {
	p, c := blockingPair(t)
	p.SetReadDeadline(time.Now().Add(10 * time.Second))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf = make([]byte, 128)
	}
	msg, buf := make([]byte, 64), make([]byte, 128)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		n, err := p.ReadBatch(ms)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteBatch(ms[:n]); err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteTo(ms[0].Buf[:ms[0].N], ms[0].Addr); err != nil {
			t.Fatal(err)
		}
		for range n + 1 {
			if _, err := c.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per blocking round trip, want 0", allocs)
	}
}

// TestBlockingPastDeadline: a datagram already queued is read even when
// the read deadline has passed (a process stopped past its deadline finds
// its replies waiting); with nothing queued, the read says the deadline.
func TestBlockingPastDeadline(t *testing.T) {
	p, c := blockingPair(t)
	if _, err := c.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let it arrive
	p.SetReadDeadline(time.Unix(1, 0))
	ms := []Message{{Buf: make([]byte, 64)}}
	if n, err := p.ReadBatch(ms); n != 1 || err != nil || ms[0].Buf[0] != 7 {
		t.Fatalf("ReadBatch past its deadline with a datagram queued = %d, %v", n, err)
	}
	if n, err := p.ReadBatch(ms); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadBatch past its deadline with nothing queued = %d, %v; want the deadline", n, err)
	}
}

// TestDescriptorCopy: out of the poller, busy or blocking, a socket reads
// and writes through a copy of its descriptor (kwait.Copy), which goes
// when it rejoins the poller, not again when it leaves it twice, and when
// it closes, a read spinning or waiting in the kernel then included: none
// is left open.
func TestDescriptorCopy(t *testing.T) {
	for _, mode := range []string{"busy", "blocking"} {
		t.Run(mode, func(t *testing.T) {
			p, c := pair(t)
			set := c.SetBusyPoll
			if mode == "blocking" {
				set = c.SetBlockingReads
			}
			base := testsock.OpenFDs(t)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 64)
			ms := []Message{{Buf: make([]byte, 64)}}
			p.SetReadDeadline(time.Now().Add(10 * time.Second))
			testsock.StepCopies(t, set, base, func(i int, step string) {
				if _, err := c.Write([]byte{byte(i)}); err != nil {
					t.Fatalf("step %d (%s): Write: %v", i, step, err)
				}
				if n, err := p.ReadBatch(ms); n != 1 || err != nil {
					t.Fatalf("step %d (%s): the peer's ReadBatch = %d, %v", i, step, n, err)
				}
				if _, err := p.WriteTo([]byte{byte(i)}, ms[0].Addr); err != nil {
					t.Fatal(err)
				}
				if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != byte(i) {
					t.Fatalf("step %d (%s): Read = %d, %v", i, step, n, err)
				}
			})
			// A Close while a read spins or waits ends it, and closes the
			// copy with the socket.
			testsock.CloseEndsRead(t, func() error { _, err := c.Read(buf); return err }, func() { c.Close() })
			if n := testsock.OpenFDs(t); n != base-1 {
				t.Fatalf("after Close: %d descriptors open, want %d (the socket's and its copy gone)", n, base-1)
			}
		})
	}
}
