package client

import (
	"math"
	"testing"
	"time"
)

// TestOpenLoop: an open-loop run keeps its schedule, says when it could
// not, and ends on time.
func TestOpenLoop(t *testing.T) {
	var highRateSleeps int // the high rate case's sender's
	runCases(t, []runCase{{
		name:  "rate",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 1000, Duration: 2 * time.Second, WarmupCount: 20, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			res, s, d := r.res, r.res.Summary, r.c.Delay
			if s.Counts.Sent != 2000 || s.Counts.Received != 2000 || res.Stopped != "duration" || res.ReflectorCount != "close" {
				t.Fatalf("counts %+v, stopped %q, count from %q, want 2000 sent and received, duration, close", s.Counts, res.Stopped, res.ReflectorCount)
			}
			if len(res.Intervals) != 2 || res.Intervals[0].Counts.Sent != 1000 {
				t.Fatalf("%d intervals, first sent %d, want 2 of 1000", len(res.Intervals), res.Intervals[0].Counts.Sent)
			}
			if s.SendError == nil || s.SendError.Max != 0 || s.RTTFromSchedule.Max != 2*d || s.RTT.Max != 2*d {
				t.Fatalf("send error %+v, RTT from schedule %+v, want exact sends and %v", s.SendError, s.RTTFromSchedule, 2*d)
			}
			// The process's CPU while it sent: over the span it was
			// read in, the 2 s measured give or take the moment the
			// receiver took to take in the first probe and to notice
			// the end (each within drainEvery), no more CPUs than the
			// machine has, and a sender and a receiver used some.
			if c := res.CPU; c == nil || c.CPUs < 1 || math.Abs(c.Seconds-(s.End-s.Start).Seconds()) > drainEvery.Seconds() || c.Used() > float64(c.CPUs) || c.User+c.System <= 0 {
				t.Fatalf("cpu %+v, want the span of the rates (%v) within %v, some CPU time, at most %d CPUs", c, s.End-s.Start, drainEvery, c.CPUs)
			}
			checkTotals(t, res)
		},
	}, {
		// A rate whose next slot lies past the end of the run ends the
		// run at its duration, not at that slot: --rate 0.01 -t 1s is one
		// probe and one second, not a hundred.
		name: "slow rate ends on time",
		cfg:  Config{Rate: 0.01, Duration: time.Second, Timeout: 100 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			if r.res.Stopped != "duration" || r.res.Summary.Counts.Sent != 1 || r.took > 5*time.Second {
				t.Fatalf("stopped %q, sent %d, run took %v, want duration, 1 probe, about 1s", r.res.Stopped, r.res.Summary.Counts.Sent, r.took)
			}
		},
	}, {
		// Above 20k probes/s (gaps under wakeEvery) the sender wakes at
		// most every 50 µs and sends the slots that came due together:
		// every slot is sent, none is skipped, each at most 40 µs late
		// (at 100k/s: 50 less the 10 µs gap; at 25k/s a wake comes 10,
		// 20, 30, 40 µs after its slot, then on time with the next).
		name:  "high rate wakes every 50µs",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 100000, Duration: 100 * time.Millisecond, sleep: countSleeps(&highRateSleeps)},
		check: func(t *testing.T, r ran) { checkWakes(t, r, 10000, 40*time.Microsecond, &highRateSleeps) },
	}, {
		name:  "25k/s wakes every 50µs",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 25000, Duration: 100 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) { checkWakes(t, r, 2500, 40*time.Microsecond, new(int)) },
	}, {
		name:  "a 10µs send interval wakes every 50µs",
		delay: 100 * time.Microsecond,
		cfg:   Config{SendInterval: 10 * time.Microsecond, Duration: 100 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) { checkWakes(t, r, 10000, 40*time.Microsecond, new(int)) },
	}, {
		// A mean gap of 50 µs or more wakes for each slot, even where a
		// Poisson gap is shorter.
		name:  "poisson at 10k/s wakes for each slot",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 10000, Poisson: true, Seed: 1, Duration: 100 * time.Millisecond, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			s := r.res.Summary
			if s.Counts.Sent < 500 || s.Counts.Skipped != 0 || s.SendError == nil || s.SendError.Max != 0 {
				t.Fatalf("counts %+v, send error %+v, want about 1000 sent on time, none skipped", s.Counts, s.SendError)
			}
		},
	}, {
		// Sleeps that wake 150 µs late (a VM's) are learned: after the
		// first, the sender spins 200 µs (maxSpin at 1k/s) and sends on
		// time; spinning 100 µs, every probe would go 50 µs late.
		name:  "late sleeps are learned",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 1000, Duration: time.Second, sleep: lateSleeps(500*time.Microsecond, 150*time.Microsecond)},
		check: func(t *testing.T, r ran) {
			se := r.res.Summary.SendError
			if se == nil || se.Count != 1000 || se.Max == 0 {
				t.Fatalf("send error %+v, want 1000 probes, the first few late", se)
			}
			if p99, ok := se.Percentile(99); !ok || p99 != 0 {
				t.Fatalf("send error %+v, want 1000 probes, the first few late, p99 0", se)
			}
		},
	}, {
		// A sender that starts late (its goroutine, its thread's set-up:
		// 5-12 ms here once) starts its schedule then: no slot missed.
		name:  "late start is no missed slot",
		delay: 100 * time.Microsecond,
		cfg: Config{Rate: 100000, Count: 100, sleep: time.Sleep, Thread: func(_ int, role string) error {
			if role == "sender" {
				time.Sleep(10 * time.Millisecond)
			}
			return nil
		}},
		check: func(t *testing.T, r ran) {
			checkWakes(t, r, 100, 40*time.Microsecond, new(int))
			// Measured from the first slot: the sender's set-up is not
			// in the rate (an outside test saw "-n 5 --rate 100k" said
			// 89-97% short).
			s := r.res.Summary
			if s.End-s.Start != time.Millisecond || s.Throughput.ProbesPerSecUp != 100000 {
				t.Errorf("measured over %v at %.0f probes/s, want 1ms at 100000", s.End-s.Start, s.Throughput.ProbesPerSecUp)
			}
		},
	}, {
		name:  "stall is not hidden",
		delay: 100 * time.Microsecond,
		cfg:   Config{Rate: 1000, Duration: time.Second, sleep: stallOnce(250, 25*time.Millisecond), Poisson: false},
		check: func(t *testing.T, r ran) {
			s := r.res.Summary
			// Slots more than 10ms (ten gaps) behind are skipped, the ten
			// behind less than that are sent at once, stamped with their
			// slots. (At 1000/s ten gaps exceed the 5ms floor.)
			if s.Counts.Skipped < 10 || s.Counts.Skipped > 16 {
				t.Errorf("skipped = %d slots, want about 15", s.Counts.Skipped)
			}
			if s.Counts.Sent+s.Counts.Skipped != 1000 {
				t.Errorf("sent %d + skipped %d, want the schedule's 1000 slots", s.Counts.Sent, s.Counts.Skipped)
			}
			if s.SendError.Max < 9*time.Millisecond || s.RTTFromSchedule.Max < 9*time.Millisecond {
				t.Errorf("send error max %v, RTT from schedule max %v, want 9ms or more: the stall is hidden", s.SendError.Max, s.RTTFromSchedule.Max)
			}
			if s.RTT.Max != 2*r.c.Delay {
				t.Errorf("RTT from the actual send max = %v, want %v", s.RTT.Max, 2*r.c.Delay)
			}
			checkTotals(t, r.res)
		},
	}, {
		name:  "poisson",
		delay: 50 * time.Microsecond,
		cfg:   Config{Rate: 2000, Poisson: true, Seed: 1, Duration: 5 * time.Second, sleep: time.Sleep},
		check: func(t *testing.T, r ran) {
			// 10000 expected; the count of a Poisson process has stdev 100.
			if got := r.res.Summary.Counts.Sent; got < 9500 || got > 10500 {
				t.Fatalf("sent = %d in 5s at a mean of 2000/s, want 10000 ± 500", got)
			}
			if r.res.Config.Seed != 1 || !r.res.Config.Poisson {
				t.Fatalf("config = %+v, want the Poisson seed recorded", r.res.Config)
			}
			checkTotals(t, r.res)
		},
	}, {
		name:  "bursts",
		delay: time.Millisecond,
		cfg:   Config{Burst: 5, Period: 100 * time.Millisecond, Duration: time.Second},
		check: func(t *testing.T, r ran) {
			got := r.res.Summary
			if got.Counts.Sent != 50 || got.Counts.Received != 50 {
				t.Fatalf("counts = %+v, want 10 bursts of 5", got.Counts)
			}
			for i, iv := range r.res.Intervals {
				if iv.Counts.Sent%5 != 0 {
					t.Errorf("interval %d sent %d, want whole bursts", i, iv.Counts.Sent)
				}
			}
			if rps := got.Throughput.RequestsPerSec; rps < 49 || rps > 51 {
				t.Errorf("requests/s = %v, want 50", rps)
			}
			checkTotals(t, r.res)
		},
	}, {
		name:      "interrupted in warm-up",
		delay:     100 * time.Microsecond,
		cfg:       Config{Rate: 100, WarmupDuration: time.Minute, Duration: time.Minute, sleep: time.Sleep},
		interrupt: 500 * time.Millisecond,
		check: func(t *testing.T, r ran) {
			s := r.res.Summary
			if r.res.Stopped != "interrupted" || s.Counts.Sent != 0 || s.End < 0 || s.End > time.Second {
				t.Fatalf("stopped %q, summary %v to %v with %+v, want an empty measurement", r.res.Stopped, s.Start, s.End, s.Counts)
			}
		},
	}})
}

// stallOnce is a sender's sleep that stalls once, by stall more, at its
// nth sleep.
func stallOnce(nth int, stall time.Duration) func(time.Duration) {
	sleeps := 0
	return func(d time.Duration) {
		sleeps++
		if sleeps == nth {
			d += stall
		}
		time.Sleep(d)
	}
}

// countSleeps is a sender's sleep that counts its calls in n.
func countSleeps(n *int) func(time.Duration) {
	return func(d time.Duration) {
		*n++
		time.Sleep(d)
	}
}

// checkWakes checks a run of sent probes sent each at most maxErr late,
// none skipped, by a sender that woke at most every wakeEvery (sleeps:
// its sleep's calls, two a wake-up: the sleep, then the spin's).
func checkWakes(t *testing.T, r ran, sent uint64, maxErr time.Duration, sleeps *int) {
	t.Helper()
	s := r.res.Summary
	if s.Counts.Sent != sent || s.Counts.Skipped != 0 || s.Counts.Received != sent {
		t.Fatalf("counts %+v, want %d sent and received, none skipped", s.Counts, sent)
	}
	if s.SendError == nil || s.SendError.Max != maxErr {
		t.Fatalf("send error %+v, want a max of %v", s.SendError, maxErr)
	}
	if wakes := int64(s.End-s.Start) / wakeEvery; int64(*sleeps) > 2*min(wakes, int64(sent))+10 {
		t.Fatalf("%d sleeps for %d probes in %v, want at most two per %v and per probe", *sleeps, sent, s.End-s.Start, time.Duration(wakeEvery))
	}
	checkTotals(t, r.res)
}

// lateSleeps is a sender's sleep whose sleeps longer than over (the
// kernel's, not a spin's) wake late by late.
func lateSleeps(over, late time.Duration) func(time.Duration) {
	return func(d time.Duration) {
		if d > over {
			d += late
		}
		time.Sleep(d)
	}
}

// TestMaxSpin: a fifth of the gap, at most 1 ms.
func TestMaxSpin(t *testing.T) {
	for gap, want := range map[time.Duration]time.Duration{
		time.Millisecond: 200 * time.Microsecond,
		10 * time.Second: time.Millisecond,
	} {
		if got := maxSpin(gap); got != want {
			t.Errorf("maxSpin(%v) = %v, want %v", gap, got, want)
		}
	}
}
