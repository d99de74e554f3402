// Package deadline is a read deadline for readers that wait on channels
// rather than on a socket (a stream listener's connections, a D-Bus
// connection's replies): the deadline can be moved while a reader waits,
// and waking at it allocates nothing.
package deadline

import (
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// Deadline is a read deadline with one reader. Set may be called from any
// goroutine; Wait from the reader only.
type Deadline struct {
	at    atomic.Int64 // clock.Deadline's; 0: none
	kick  chan struct{}
	timer *time.Timer
}

// New returns a Deadline that is not set.
func New() *Deadline {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Deadline{kick: make(chan struct{}, 1), timer: t}
}

// Set sets the deadline (the zero time: none), and wakes a reader waiting
// for the old one.
func (d *Deadline) Set(t time.Time) {
	d.at.Store(clock.Deadline(t))
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Passed reports whether the deadline is set and has passed.
func (d *Deadline) Passed() bool {
	at := d.at.Load()
	return at != 0 && clock.MonoNow() >= at
}

// Outcome is how a Wait ended.
type Outcome int

// The outcomes.
const (
	Ready   Outcome = iota // ready was signalled; what it sent is the reader's
	Expired                // the deadline passed
	Closed                 // closed was closed
)

// Wait waits for a value on ready (returned with Ready), the deadline, or
// closed. A deadline moved meanwhile is waited for anew.
func Wait[T any](d *Deadline, ready <-chan T, closed <-chan struct{}) (T, Outcome) {
	var zero T
	for {
		var fire <-chan time.Time
		if at := d.at.Load(); at != 0 {
			wait := time.Duration(at - clock.MonoNow())
			if wait <= 0 {
				return zero, Expired
			}
			d.timer.Reset(wait)
			fire = d.timer.C
		}
		select {
		case v := <-ready:
			d.timer.Stop()
			return v, Ready
		case <-fire:
			return zero, Expired
		case <-d.kick:
			d.timer.Stop()
		case <-closed:
			d.timer.Stop()
			return zero, Closed
		}
	}
}
