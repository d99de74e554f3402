package unixgram

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadAt: the client's reads with a read clock say when the datagram
// they returned came (ReadAt): after the Read began, in the poller and in
// the kernel, one of them for a datagram that came while it waited;
// without a clock, 0.
func TestReadAt(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		l, c := pair(t)
		if blocking {
			if err := c.SetBlockingReads(true); err != nil {
				t.Skipf("skipping: %v", err)
			}
		}
		l.SetReadDeadline(time.Now().Add(10 * time.Second))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		// The listener answers the address it heard the client from.
		if _, err := c.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		_, from, err := l.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		for i, clock := range []bool{false, true, true} {
			if clock && i == 1 {
				c.SetReadClock(func() int64 { return calls.Add(1) })
			}
			before := calls.Load()
			// The last Read waits for its datagram.
			got := make(chan error, 1)
			go func() {
				n, err := c.Read(buf)
				if err == nil && n != 1 {
					err = fmt.Errorf("read %d bytes", n)
				}
				got <- err
			}()
			if i == 2 {
				time.Sleep(20 * time.Millisecond) // let it wait
			}
			if _, err := l.WriteTo([]byte{2}, from); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("blocking %v, read %d: %v", blocking, i, err)
			}
			at := c.ReadAt()
			if !clock && at != 0 || clock && (at <= before || at > calls.Load()) {
				t.Fatalf("blocking %v, read %d, clock %v: ReadAt %d; want 0 without a clock, else a reading after %d and by %d",
					blocking, i, clock, at, before, calls.Load())
			}
		}
	}
}
