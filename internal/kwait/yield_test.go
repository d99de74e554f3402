package kwait

import (
	"testing"
	"time"
)

// TestYield: Maybe gives way once per yieldEvery of the clock it is
// given, the first time at once, and allocates nothing.
func TestYield(t *testing.T) {
	var y Yield
	t0 := time.Now().UnixNano()
	for _, step := range []struct {
		at   int64
		want bool
	}{
		{t0, true},
		{t0 + int64(4*time.Millisecond), false},
		{t0 + yieldEvery - 1, false},
		{t0 + yieldEvery, true},
		{t0 + yieldEvery + 1, false},
		{t0 + 3*yieldEvery, true},
	} {
		if got := y.Maybe(step.at); got != step.want {
			t.Errorf("Maybe at +%v: %v, want %v", time.Duration(step.at-t0), got, step.want)
		}
	}
	now := t0 + 4*yieldEvery
	if a := testing.AllocsPerRun(100, func() { now += yieldEvery; y.Maybe(now) }); a != 0 {
		t.Errorf("Maybe allocated %.1f times a call", a)
	}
}
