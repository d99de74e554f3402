package e2e

import (
	"math"
	"testing"
	"time"
)

// Each volley process's clock keeps the wall time it read at its start
// and moves with the monotonic clock after that (internal/clock). When
// the wall clock steps, a process started after the step reads another
// time than one started before it, and the kernel's stamps, which read
// the wall clock, part from the processes' own times. This VM's wall
// clock stepped by half a millisecond once in some fifty CI runs, and
// once jumped 5 s and then stepped 0.5 ms every 100 ms for three minutes
// (a tester's monitor), failing TestClockSameHost in CI.

// Steps are waited out this long before a measurement is run again, and
// measurements run this often at most.
const (
	stepSettle   = time.Second
	stepAttempts = 5
)

// unstepped runs measure, which measures and leaves the checks to the
// caller, and runs it again while the wall clock steps under it
// (stepDuring), up to stepAttempts times, each after the clock held still
// for stepSettle.
// When it steps under every one, the test is skipped with why: what the
// test checks cannot hold on a clock that moves, and it says nothing of
// volley.
func unstepped(t *testing.T, why string, measure func()) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		step := stepDuring(measure)
		if step.Abs() < time.Microsecond {
			return
		}
		if attempt == stepAttempts {
			t.Skipf("skipping: the wall clock stepped during each of %d runs (by %v in the last): %s", attempt, step, why)
		}
		t.Logf("the wall clock stepped by %v during run %d: running it again once it holds still", step, attempt)
		waitStill(stepSettle, 10*stepSettle)
	}
}

// waitStill returns once the wall clock has not moved against the
// monotonic one for d, or after at most limit.
func waitStill(d, limit time.Duration) {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if stepDuring(func() { time.Sleep(d) }).Abs() < time.Microsecond {
			return
		}
	}
}

// stepDuring returns how far the wall clock moved from the monotonic one
// while f ran.
func stepDuring(f func()) time.Duration {
	ref := time.Now()
	before := wallOffset(ref)
	f()
	return time.Duration(wallOffset(ref) - before)
}

// wallOffset returns how far the wall clock has moved from the monotonic
// one since ref, the largest of seven readings: time.Now reads the wall
// clock first, so a preemption between its two readings can only make
// the difference smaller.
func wallOffset(ref time.Time) int64 {
	best := int64(math.MinInt64)
	for range 7 {
		now := time.Now()
		best = max(best, now.UnixNano()-ref.UnixNano()-int64(now.Sub(ref)))
	}
	return best
}
