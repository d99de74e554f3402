// Package clock gives volley its time source: Unix nanoseconds that advance
// with the monotonic clock, so a wall-clock step during a run cannot bend a
// measurement, plus a fake for tests.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock returns the current time as Unix nanoseconds and converts such times
// back to time.Time for deadlines.
type Clock interface {
	// Now returns the current time in Unix nanoseconds.
	Now() int64
	// Time returns ns as a time.Time suitable for deadlines.
	Time(ns int64) time.Time
}

// System is the real clock: the wall time read once at creation, advanced
// by the monotonic clock after that.
type System struct {
	base     time.Time
	baseUnix int64
}

var _ Clock = (*System)(nil)

// NewSystem returns a System clock anchored at the current wall time.
func NewSystem() *System {
	now := time.Now()
	return &System{base: now, baseUnix: now.UnixNano()}
}

// Now implements Clock.
func (s *System) Now() int64 { return s.baseUnix + int64(time.Since(s.base)) }

// Time implements Clock. The result carries a monotonic reading, so
// deadlines made from it ignore wall-clock steps.
func (s *System) Time(ns int64) time.Time { return s.base.Add(time.Duration(ns - s.baseUnix)) }

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct{ ns atomic.Int64 }

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake clock set to ns.
func NewFake(ns int64) *Fake {
	f := &Fake{}
	f.ns.Store(ns)
	return f
}

// Now implements Clock.
func (f *Fake) Now() int64 { return f.ns.Load() }

// Time implements Clock.
func (f *Fake) Time(ns int64) time.Time { return time.Unix(0, ns) }

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) { f.ns.Add(int64(d)) }
