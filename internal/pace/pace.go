// Package pace schedules probe send times for open-loop runs and waits for
// them precisely: fixed gaps or Poisson gaps (exponential, with a seed),
// bounded catch-up after a stall, and a waiter that sleeps most of a gap
// and spins the rest, because Go timers round short waits up to about a
// millisecond. An Alarm waits as precisely for a time that another
// goroutine may bring forward: a reflector's next held reply.
package pace

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// Schedule yields the times at which probes should leave.
//
// A sender that falls behind (a stall) sends the slots it missed back to
// back, each stamped with its own scheduled time so the stall shows in the
// latency measured from the schedule; but slots more than MaxLag behind are
// skipped and counted instead of sent, so a long stall never ends in a
// flood.
type Schedule struct {
	start   int64
	gap     float64 // mean gap in ns
	poisson bool
	rng     *rand.Rand
	k       uint64 // fixed: index of the next slot
	next    int64  // poisson: time of the next slot
	maxLag  int64
}

// DefaultMaxLag returns the catch-up bound for a mean gap: ten gaps, and
// at least 5ms, a scheduler hiccup on a busy machine. Sending 5ms of slots
// back to back at 100k probes/s is 500 probes, which a loopback socket
// writes at only about 1.4 times the nominal rate: a catch-up, not a flood.
func DefaultMaxLag(gap time.Duration) time.Duration {
	return max(10*gap, 5*time.Millisecond)
}

// NewFixed returns a schedule with a slot every gap from start.
func NewFixed(start int64, gap time.Duration) *Schedule {
	return &Schedule{start: start, gap: float64(gap), maxLag: int64(DefaultMaxLag(gap))}
}

// NewRate returns a schedule of pps slots a second from start. Slot k is
// at start + k/pps exactly (rounded to the nanosecond), so rates whose gap
// is not a whole number of nanoseconds do not drift.
func NewRate(start int64, pps float64) *Schedule {
	gap := 1e9 / pps
	return &Schedule{start: start, gap: gap, maxLag: int64(DefaultMaxLag(time.Duration(gap)))}
}

// NewPoisson returns a schedule whose gaps are exponentially distributed
// with the given mean, drawn from a generator seeded with seed. The first
// slot is at start.
func NewPoisson(start int64, mean time.Duration, seed uint64) *Schedule {
	return &Schedule{
		start: start, gap: float64(mean), poisson: true, next: start,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		maxLag: int64(DefaultMaxLag(mean)),
	}
}

// SetMaxLag changes the catch-up bound.
func (s *Schedule) SetMaxLag(d time.Duration) { s.maxLag = int64(d) }

// peek returns the time of the next slot without taking it.
func (s *Schedule) peek() int64 {
	if s.poisson {
		return s.next
	}
	return s.start + int64(math.Round(float64(s.k)*s.gap))
}

func (s *Schedule) advance() {
	if s.poisson {
		s.next += int64(math.Round(s.rng.ExpFloat64() * s.gap))
		return
	}
	s.k++
}

// Next takes the next slot to send at, given the time now: it skips the
// slots more than the catch-up bound behind now and returns how many it
// skipped. The slot returned may lie in the past (send at once) or the
// future (wait for it).
func (s *Schedule) Next(now int64) (at int64, skipped uint64) {
	for {
		at = s.peek()
		s.advance()
		if now-at <= s.maxLag {
			return at, skipped
		}
		skipped++
	}
}

// Waiter waits until a point in time: it sleeps until SpinFor before it,
// then spins on the clock. With a MaxSpin it learns how late its sleeps
// wake, so it keeps state: one goroutine's, not to be shared or copied.
type Waiter struct {
	Clock clock.Clock
	// SpinFor is how long before the target the waiter stops sleeping and
	// spins (default 100µs; waits shorter than it are spun whole).
	SpinFor time.Duration
	// MaxSpin, above SpinFor, lets the waiter spin longer where its sleeps
	// wake late: up to MaxSpin, for lateMargin times their mean lateness.
	// (On a 2-core VM, nanosleep with a 1 ns timer slack woke 63 µs late
	// at the median, 116-127 µs at p99: a 100 µs spin missed 1-2% of the
	// targets.) Keep it well under the waits: a wait it spins whole
	// teaches the waiter nothing, so a margin grown past the waits would
	// stay.
	MaxSpin time.Duration
	// Sleep sleeps for d; nil means the platform's precise sleep. Tests
	// with a fake clock set one that advances it.
	Sleep func(d time.Duration)
	late  int64 // how late the sleeps woke, a moving mean (ns)
}

// lateMargin is how many times the sleeps' mean lateness a Waiter with a
// MaxSpin spins for: about their p99 where the lateness is a VM's (see
// MaxSpin).
const lateMargin = 3

// lateWeight is the weight of the moving mean's past, against 1 for a
// new sleep's lateness: it follows the machine over a few dozen sleeps.
const lateWeight = 15

// DefaultSpinFor is the waiter's default spin margin.
const DefaultSpinFor = 100 * time.Microsecond

// Until returns once the clock reads t or later, with the time it read.
func (w *Waiter) Until(t int64) int64 {
	spin := w.spin()
	sleep := w.Sleep
	if sleep == nil {
		sleep = preciseSleep
	}
	var woke int64 // when the sleep would have ended on time
	slept := false
	for {
		now := w.Clock.Now()
		if slept {
			w.learn(now - woke)
			slept = false
		}
		d := t - now
		switch {
		case d <= 0:
			return now
		case d > spin:
			sleep(time.Duration(d - spin))
			woke, slept = t-spin, true
		case w.Sleep != nil:
			// A fake clock does not move while we spin.
			sleep(time.Duration(d))
		}
	}
}

// spin is how long before its target the waiter spins.
func (w *Waiter) spin() int64 {
	spin := int64(w.SpinFor)
	if spin <= 0 {
		spin = int64(DefaultSpinFor)
	}
	if most := int64(w.MaxSpin); most > spin {
		spin = max(spin, min(most, lateMargin*w.late))
	}
	return spin
}

// learn takes in how late a sleep woke, at most MaxSpin: one stall does
// not make the waiter spin long for dozens of waits.
func (w *Waiter) learn(late int64) {
	if w.MaxSpin <= 0 {
		return
	}
	late = min(max(late, 0), int64(w.MaxSpin))
	w.late = (lateWeight*w.late + late) / (lateWeight + 1)
}

// PrepareThread readies the calling OS thread for precise sleeps (on Linux,
// a timer slack of 1ns). Call it from a goroutine locked to its thread.
func PrepareThread() error { return prepareThread() }
