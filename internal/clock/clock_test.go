package clock

import (
	"testing"
	"time"
)

func TestSystemRoundTrip(t *testing.T) {
	c := NewSystem()
	a := c.Now()
	b := c.Now()
	if b < a {
		t.Fatalf("Now() went backwards: %d then %d", a, b)
	}
	if got := c.Time(a).UnixNano(); got != a {
		t.Fatalf("Time(%d).UnixNano() = %d, want %d", a, got, a)
	}
}

func TestFake(t *testing.T) {
	f := NewFake(100)
	f.Advance(time.Microsecond)
	if got := f.Now(); got != 1100 {
		t.Fatalf("Now() after Advance(1µs) = %d, want 1100", got)
	}
	if got := f.Time(5).UnixNano(); got != 5 {
		t.Fatalf("Time(5).UnixNano() = %d, want 5", got)
	}
}
