package deadline

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New()
		ready := make(chan int, 1)
		closed := make(chan struct{})
		d.Set(time.Now().Add(time.Second))
		start := time.Now()
		if _, o := Wait(d, ready, closed); o != Expired || time.Since(start) != time.Second {
			t.Fatalf("Wait = %v after %v, want Expired after 1s", o, time.Since(start))
		}
		if !d.Passed() {
			t.Error("Passed after the deadline = false")
		}
		// A deadline moved while waiting is waited for anew.
		d.Set(time.Now().Add(time.Second))
		go func() {
			time.Sleep(500 * time.Millisecond)
			d.Set(time.Now().Add(2 * time.Second))
		}()
		start = time.Now()
		if _, o := Wait(d, ready, closed); o != Expired || time.Since(start) != 2500*time.Millisecond {
			t.Fatalf("Wait = %v after %v, want Expired after 2.5s", o, time.Since(start))
		}
		d.Set(time.Time{})
		ready <- 7
		if v, o := Wait(d, ready, closed); o != Ready || v != 7 {
			t.Fatalf("Wait = %d, %v; want 7, Ready", v, o)
		}
		close(closed)
		if _, o := Wait(d, ready, closed); o != Closed {
			t.Fatalf("Wait on a closed reader = %v, want Closed", o)
		}
	})
}
