package udp

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReadClock: with a read clock, every message of a batch is stamped
// with its reading as the system call returned (after the datagrams were
// sent, before ReadBatch returned), whether the read waits in the poller,
// in the kernel or spins; without one, At is 0.
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
			before := calls.Load()
			for i := range 3 {
				if _, err := c.Write([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			got := 0
			for got < 3 {
				n, err := p.ReadBatch(ms[got:])
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms[got : got+n] {
					if m.At <= before || m.At > calls.Load() || m.At != ms[got].At {
						t.Fatalf("At %d: want the clock's one reading for the batch, after %d and by %d", m.At, before, calls.Load())
					}
				}
				before = calls.Load()
				got += n
			}
		})
	}
}
