package pace

import (
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// CoarseFor is how long before its target an Alarm stops parking on a Go
// timer and sleeps in the kernel instead: Go timers round short waits up
// to about a millisecond, and fire later still on a busy machine.
const CoarseFor = 2 * time.Millisecond

// An Alarm waits precisely until a time that another goroutine may bring
// forward, as a reflector waits for its next held reply while new ones
// come. Far from the time, it parks on a Go timer (no CPU, no thread);
// within CoarseFor, it sleeps in the kernel (on Linux a futex, with a
// timer slack of 1ns); the last SpinFor it spins on the clock. Wake cuts
// any of these short. One goroutine waits on an Alarm at a time; any may
// wake it.
type Alarm struct {
	Clock clock.Clock
	// SpinFor is how long before the target the alarm spins (default
	// DefaultSpinFor).
	SpinFor time.Duration
	// Sleep, when set, replaces every wait (tests with a fake clock): it
	// is given the length of each stage, coarse, kernel and spin in turn,
	// and a Wake made meanwhile is seen when it returns.
	Sleep func(d time.Duration)

	ch       chan struct{} // a Wake not yet seen
	word     atomic.Uint32 // bumped by each Wake: the kernel sleep's futex
	sleeping atomic.Bool   // the waiter may be in the kernel sleep
	timer    *time.Timer
}

// NewAlarm returns an alarm on clk.
func NewAlarm(clk clock.Clock) *Alarm {
	return &Alarm{Clock: clk, ch: make(chan struct{}, 1)}
}

// Wake makes the wait under way (or the next one) return at once, woken.
// It does not block or allocate, and costs a system call only when the
// waiter sleeps in the kernel.
func (a *Alarm) Wake() {
	select {
	case a.ch <- struct{}{}:
	default:
	}
	a.word.Add(1)
	if a.sleeping.Load() {
		futexWake(&a.word)
	}
}

// woken takes a Wake not yet seen.
func (a *Alarm) woken() bool {
	select {
	case <-a.ch:
		return true
	default:
		return false
	}
}

// Until returns once the clock reads t or later (woken false), or when
// Wake is called first (woken true), with the time it read last.
func (a *Alarm) Until(t int64) (now int64, woken bool) {
	spin := int64(a.SpinFor)
	if spin <= 0 {
		spin = int64(DefaultSpinFor)
	}
	for {
		now = a.Clock.Now()
		d := t - now
		if d <= 0 {
			return now, false
		}
		if a.woken() {
			return now, true
		}
		switch {
		case a.Sleep != nil:
			a.Sleep(time.Duration(stage(d, spin)))
		case d > int64(CoarseFor):
			if a.park(time.Duration(d - int64(CoarseFor))) {
				return a.Clock.Now(), true
			}
		case d > spin:
			a.nap(d - spin)
		}
		// Below spin: go round, reading the clock, until t.
	}
}

// stage is the length of the stage a wait of d ns is in: up to CoarseFor
// before the target, up to spin before, or the spin.
func stage(d, spin int64) int64 {
	switch {
	case d > int64(CoarseFor):
		return d - int64(CoarseFor)
	case d > spin:
		return d - spin
	}
	return d
}

// park waits on a Go timer for d, or until a Wake: it reports which.
func (a *Alarm) park(d time.Duration) (woken bool) {
	if a.timer == nil {
		a.timer = time.NewTimer(d)
	} else {
		a.timer.Reset(d)
	}
	select {
	case <-a.timer.C:
		return false
	case <-a.ch:
		a.timer.Stop()
		return true
	}
}

// nap sleeps in the kernel for d ns, or until a Wake (seen by the caller
// next).
func (a *Alarm) nap(d int64) {
	v := a.word.Load()
	a.sleeping.Store(true)
	// A Wake after the load changed the word: the futex does not sleep.
	// One before it left its mark in ch.
	if len(a.ch) == 0 {
		if !futexWait(&a.word, v, d) {
			a.sleeping.Store(false)
			if a.park(time.Duration(d)) { // no futex here: a Go timer, coarse
				// It took the Wake from ch: leave it for the caller.
				select {
				case a.ch <- struct{}{}:
				default:
				}
			}
			return
		}
	}
	a.sleeping.Store(false)
}
