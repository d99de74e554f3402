package udp

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReadClock: with a read clock, every message of a batch is stamped
// with the clock's one reading as the system call returned: a read that
// waited (in the poller, in the kernel, or spinning) for a datagram sent
// after it began, a read of datagrams queued before it, and a blocking
// read whose deadline had passed with a datagram queued. Without a clock,
// At is 0.
func TestReadClock(t *testing.T) {
	modes := []struct {
		name string
		set  func(p *PacketConn) error
	}{
		{"poller", func(*PacketConn) error { return nil }},
		{"blocking", func(p *PacketConn) error { return p.SetBlockingReads(true) }},
		{"busy", func(p *PacketConn) error { return p.SetBusyPoll(true) }},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			p, c := pair(t)
			if err := mode.set(p); err != nil {
				t.Fatal(err)
			}
			p.SetReadDeadline(time.Now().Add(10 * time.Second))
			ms := make([]Message, MaxBatch)
			for i := range ms {
				ms[i].Buf = make([]byte, 64)
				ms[i].At = -1
			}
			if _, err := c.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			if n, err := p.ReadBatch(ms); n != 1 || err != nil || ms[0].At != 0 {
				t.Fatalf("without a read clock: %d, %v, At %d: want 1 message, At 0", n, err, ms[0].At)
			}
			var calls atomic.Int64
			p.SetReadClock(func() int64 { return calls.Add(1) })
			// checkBatch checks that ms[:n] carry one reading, taken after
			// before and by the time ReadBatch returned.
			checkBatch := func(what string, n int, err error, before int64) {
				t.Helper()
				if err != nil || n < 1 {
					t.Fatalf("%s: ReadBatch = %d, %v", what, n, err)
				}
				for _, m := range ms[:n] {
					if m.At <= before || m.At > calls.Load() || m.At != ms[0].At {
						t.Fatalf("%s: At %d: want the clock's one reading for the batch, after %d and by %d", what, m.At, before, calls.Load())
					}
				}
			}

			// A read that waits for its datagram.
			before := calls.Load()
			n, err := readWaiting(t, func() (int, error) { return p.ReadBatch(ms) }, func() error {
				_, err := c.Write([]byte{2})
				return err
			})
			checkBatch("a read that waited", n, err, before)

			// Datagrams queued before the read: loopback queues each
			// within its send.
			for i := range 3 {
				if _, err := c.Write([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			// (A blocking read that slept asks for one datagram next.)
			for total := 0; total < 3; total += n {
				before = calls.Load()
				n, err = p.ReadBatch(ms)
				checkBatch("a read of a queue", n, err, before)
			}

			if mode.name == "blocking" {
				// What is queued is read past the deadline too.
				if _, err := c.Write([]byte{3}); err != nil {
					t.Fatal(err)
				}
				p.SetReadDeadline(time.Now().Add(-time.Second))
				before = calls.Load()
				n, err = p.ReadBatch(ms)
				checkBatch("a read past its deadline", n, err, before)
			}
		})
	}
}

// TestReadAt: a connected socket's single reads with a read clock say
// when the datagram they returned came (ReadAt), read as the call that
// brought it returned: after the Read began for a datagram that came
// while it waited, in the poller, in the kernel or spinning; without a
// clock, 0.
func TestReadAt(t *testing.T) {
	modes := []struct {
		name string
		set  func(c *Conn) error
	}{
		{"poller", func(*Conn) error { return nil }},
		{"blocking", func(c *Conn) error { return c.SetBlockingReads(true) }},
		{"busy", func(c *Conn) error { return c.SetBusyPoll(true) }},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			p, c := pair(t)
			if err := mode.set(c); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 64)
			if _, err := c.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			// The listener answers from the address the connected socket
			// takes datagrams from.
			ms := []Message{{Buf: make([]byte, 64)}}
			p.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := p.ReadBatch(ms); n != 1 || err != nil {
				t.Fatalf("ReadBatch = %d, %v", n, err)
			}
			peer := ms[0].Addr
			if _, err := p.WriteTo([]byte{2}, peer); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Read(buf); n != 1 || err != nil || c.ReadAt() != 0 {
				t.Fatalf("without a read clock: Read = %d, %v, ReadAt %d: want 1 byte, 0", n, err, c.ReadAt())
			}
			var calls atomic.Int64
			c.SetReadClock(func() int64 { return calls.Add(1) })
			for _, what := range []string{"a read that waited", "a queued datagram"} {
				before := calls.Load()
				send := func() error {
					_, err := p.WriteTo([]byte{3}, peer)
					return err
				}
				var n int
				var err error
				if what == "a queued datagram" {
					if err := send(); err != nil {
						t.Fatal(err)
					}
					n, err = c.Read(buf)
				} else {
					n, err = readWaiting(t, func() (int, error) { return c.Read(buf) }, send)
				}
				if n != 1 || err != nil {
					t.Fatalf("%s: Read = %d, %v", what, n, err)
				}
				if at := c.ReadAt(); at <= before || at > calls.Load() {
					t.Fatalf("%s: ReadAt %d, want a reading after %d and by %d", what, at, before, calls.Load())
				}
			}
		})
	}
}
