package pace

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

func TestFixedSchedule(t *testing.T) {
	// 3 probes/s: gaps of 333.33ms must not drift over many slots.
	s := NewRate(1000, 3)
	var at int64
	for i := 0; i < 3000; i++ {
		at, _ = s.Next(at)
	}
	if want := int64(1000 + 999_666_666_667); at != want {
		t.Fatalf("slot 3000 at %d, want %d", at, want)
	}
}

func TestPoissonMean(t *testing.T) {
	const n = 200000
	mean := 100 * time.Microsecond
	s := NewPoisson(0, mean, 42)
	s.SetMaxLag(math.MaxInt64)
	first, _ := s.Next(0)
	var last int64
	var gaps []float64
	prev := first
	for i := 1; i < n; i++ {
		last, _ = s.Next(0)
		gaps = append(gaps, float64(last-prev))
		prev = last
	}
	got := float64(last-first) / float64(n-1)
	// The mean of 200k exponential gaps is within 1% of the mean with
	// overwhelming probability (its standard error is 0.22%).
	if math.Abs(got-float64(mean))/float64(mean) > 0.01 {
		t.Fatalf("mean gap %.0fns, want %v within 1%%", got, mean)
	}
	// Exponential: the standard deviation equals the mean.
	var sq float64
	for _, g := range gaps {
		sq += (g - got) * (g - got)
	}
	if sd := math.Sqrt(sq / float64(len(gaps))); math.Abs(sd-got)/got > 0.02 {
		t.Fatalf("gap stdev %.0fns, want about the mean %.0fns", sd, got)
	}
	// The same seed gives the same schedule.
	a, b := NewPoisson(0, mean, 7), NewPoisson(0, mean, 7)
	for i := 0; i < 100; i++ {
		x, _ := a.Next(0)
		y, _ := b.Next(0)
		if x != y {
			t.Fatalf("slot %d: %d and %d from the same seed", i, x, y)
		}
	}
}

func TestCatchUpAfterStall(t *testing.T) {
	gap := 100 * time.Microsecond
	s := NewFixed(0, gap)
	if lag := DefaultMaxLag(gap); lag != 5*time.Millisecond {
		t.Fatalf("DefaultMaxLag(100µs) = %v, want 5ms", lag)
	}
	s.SetMaxLag(time.Millisecond)
	// Slot 0 on time, then a 5ms stall: slots 1..39 are more than 1ms
	// behind and skipped; 40..50 are sent back to back with their own
	// scheduled times; then the schedule goes on.
	at, skipped := s.Next(0)
	if at != 0 || skipped != 0 {
		t.Fatalf("Next(0) = %d, %d, want 0, 0", at, skipped)
	}
	now := int64(5 * time.Millisecond)
	at, skipped = s.Next(now)
	if skipped != 39 || at != int64(40*gap) {
		t.Fatalf("after a 5ms stall Next = %v, skipped %d; want slot 40 (4ms), 39 skipped", time.Duration(at), skipped)
	}
	late := 0
	for {
		at, skipped = s.Next(now)
		if skipped != 0 {
			t.Fatalf("skipped %d while catching up", skipped)
		}
		if at > now {
			break
		}
		late++
	}
	if late != 10 || at != int64(51*gap) {
		t.Fatalf("%d late slots sent back to back, then %v; want 10 and 5.1ms", late, time.Duration(at))
	}
}

func TestBurstSchedule(t *testing.T) {
	// Bursts are slots at the same time: a fixed schedule of periods.
	s := NewFixed(0, time.Second)
	for i := 0; i < 3; i++ {
		at, _ := s.Next(int64(i) * int64(time.Second))
		if at != int64(i)*int64(time.Second) {
			t.Fatalf("period %d at %d", i, at)
		}
	}
}

func TestWaiter(t *testing.T) {
	clk := clock.NewFake(0)
	var slept []time.Duration
	w := &Waiter{Clock: clk, Sleep: func(d time.Duration) { slept = append(slept, d); clk.Advance(d) }}
	if got := w.Until(int64(time.Millisecond)); got != int64(time.Millisecond) {
		t.Fatalf("Until(1ms) returned at %d", got)
	}
	// It sleeps to 100µs before the target, then finishes the wait.
	if len(slept) != 2 || slept[0] != 900*time.Microsecond || slept[1] != 100*time.Microsecond {
		t.Fatalf("slept %v, want [900µs 100µs]", slept)
	}
	slept = nil
	if got := w.Until(0); got != int64(time.Millisecond) || len(slept) != 0 {
		t.Fatalf("Until(past) = %d after sleeping %v, want at once", got, slept)
	}
}

func TestWaiterRealClock(t *testing.T) {
	// The precise sleep path on the real clock reaches its target; how
	// close it comes is for bench/rate.sh to measure, not a test.
	clk := clock.NewSystem()
	w := &Waiter{Clock: clk}
	target := clk.Now() + int64(2*time.Millisecond)
	if got := w.Until(target); got < target {
		t.Fatalf("Until returned %dns early", target-got)
	}
}

func TestAlarm(t *testing.T) {
	clk := clock.NewFake(0)
	a := NewAlarm(clk)
	var slept []time.Duration
	var wakeAt int // Wake in this sleep (1-based), 0: never
	a.Sleep = func(d time.Duration) {
		slept = append(slept, d)
		clk.Advance(d)
		if len(slept) == wakeAt {
			a.Wake()
		}
	}
	// Parked on a timer to CoarseFor before, in the kernel to SpinFor
	// before, then spun.
	if now, woken := a.Until(int64(5 * time.Millisecond)); now != int64(5*time.Millisecond) || woken {
		t.Fatalf("Until(5ms) = %v, woken %v; want 5ms, not woken", time.Duration(now), woken)
	}
	if want := []time.Duration{3 * time.Millisecond, 1900 * time.Microsecond, 100 * time.Microsecond}; fmt.Sprint(slept) != fmt.Sprint(want) {
		t.Fatalf("stages %v, want %v", slept, want)
	}
	// A Wake in the kernel stage ends the wait after it.
	slept, wakeAt = nil, 2
	if now, woken := a.Until(int64(10 * time.Millisecond)); now != int64(9900*time.Microsecond) || !woken {
		t.Fatalf("Until(10ms) woken in the kernel stage = %v, woken %v; want 9.9ms, woken", time.Duration(now), woken)
	}
	// One before the wait: at once; it is seen once.
	slept, wakeAt = nil, 0
	a.Wake()
	if now, woken := a.Until(int64(20 * time.Millisecond)); now != int64(9900*time.Microsecond) || !woken || len(slept) != 0 {
		t.Fatalf("Until after a Wake = %v, woken %v, slept %v; want at once, woken", time.Duration(now), woken, slept)
	}
	if now, woken := a.Until(int64(20 * time.Millisecond)); now != int64(20*time.Millisecond) || woken {
		t.Fatalf("Until(20ms) = %v, woken %v; want 20ms, not woken", time.Duration(now), woken)
	}
}

func TestAlarmWakes(t *testing.T) {
	// On the real clock, a Wake from another goroutine ends each stage
	// of a wait an hour long: the timer's, and the kernel sleep's.
	a := NewAlarm(clock.NewSystem())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, woken := a.Until(a.Clock.Now() + int64(time.Hour)); !woken {
			t.Error("Until(1h) returned, not woken")
		}
	}()
	for {
		a.Wake()
		select {
		case <-done:
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		a.nap(int64(time.Hour))
	}()
	for {
		a.Wake()
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestAlarmAllocs(t *testing.T) {
	a := NewAlarm(clock.NewSystem())
	a.park(time.Microsecond) // the timer, made once
	if n := testing.AllocsPerRun(100, func() {
		a.Wake()
		a.Until(a.Clock.Now() + int64(time.Microsecond))
		a.nap(int64(time.Microsecond))
	}); n != 0 {
		t.Fatalf("%v allocations a wait, want 0", n)
	}
}

// TestWaiterLearnsLateSleeps: where sleeps wake late, a Waiter with a
// MaxSpin learns it and spins longer, so that it reaches its targets on
// time; one without stays late; sleeps that wake early teach it nothing;
// a stall is taken in as MaxSpin at most.
func TestWaiterLearnsLateSleeps(t *testing.T) {
	const late = 150 * time.Microsecond
	for _, tc := range []struct {
		name    string
		maxSpin time.Duration
		early   int           // waits whose sleeps wake 500 µs early, first
		n       int           // then waits whose sleeps wake late
		want    time.Duration // how late the last of them ends
	}{
		{"without MaxSpin", 0, 0, 100, late - DefaultSpinFor},
		{"with MaxSpin", time.Millisecond, 0, 100, 0},
		// The mean after 50 early wakes, were they learned as -500 µs,
		// would take more than 20 late wakes to reach 50 µs (a spin of
		// 150); learned as on time, 20 bring it to 109 µs.
		{"early wakes are on time", time.Millisecond, 50, 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(0)
			w := &Waiter{Clock: clk, MaxSpin: tc.maxSpin}
			kernel, off := false, time.Duration(0) // the next sleep is the kernel's, off its error
			w.Sleep = func(d time.Duration) {
				if kernel {
					d += off
					kernel = false
				}
				clk.Advance(d)
			}
			var lateBy time.Duration
			for i := range tc.early + tc.n {
				kernel, off = true, late
				if i < tc.early {
					off = -500 * time.Microsecond
				}
				target := clk.Now() + int64(time.Millisecond)
				lateBy = time.Duration(w.Until(target) - target)
			}
			if lateBy != tc.want {
				t.Errorf("the last wait ended %v late, want %v (spin %v)", lateBy, tc.want, time.Duration(w.spin()))
			}
		})
	}
	w := &Waiter{MaxSpin: 200 * time.Microsecond}
	w.learn(int64(10 * time.Millisecond))
	if got := w.spin(); got != int64(DefaultSpinFor) {
		t.Errorf("after one 10 ms stall, spin %v, want %v: the stall counted as MaxSpin, a 16th of it", time.Duration(got), DefaultSpinFor)
	}
}
