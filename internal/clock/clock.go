// Package clock gives volley its time source: Unix nanoseconds that advance
// with the monotonic clock, so a wall-clock step during a run cannot bend a
// measurement, plus a fake for tests.
//
// A clock may also say which clock it is (Identifier): two ends of a run
// whose clocks have the same identity read the same time, so the one-way
// delays between them are measured, not estimated.
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

// Identifier is a Clock that can say which clock it reads.
type Identifier interface {
	// Identity returns a number that another clock returns only when it
	// reads the same time as this one, to within IdentityPrecision; 0
	// when the clock cannot tell.
	Identity() uint64
}

// IdentityPrecision is how far apart two clocks of the same identity may
// read at most: System clocks compare their steps from the kernel's wall
// clock rounded to the microsecond.
const IdentityPrecision = time.Microsecond

// IdentityOf returns c's identity, 0 when it has none.
func IdentityOf(c Clock) uint64 {
	if i, ok := c.(Identifier); ok {
		return i.Identity()
	}
	return 0
}

// System is the real clock: the wall time read once at creation, advanced
// by the monotonic clock after that.
//
// Two System clocks on one kernel read the same time unless the wall clock
// was stepped between their creations: each then keeps the step it saw.
// Identity accounts for that: it is a hash of the kernel's boot ID (one per
// boot of one kernel, shared by its containers and network namespaces,
// whose CLOCK_REALTIME is the same; time namespaces shift only the
// monotonic and boot clocks, of which a System clock uses differences
// alone) and of how far this clock is from the kernel's wall clock now.
type System struct {
	base     time.Time
	baseUnix int64
	host     uint64 // the kernel's identity (see hostIdentity), 0: unknown
}

var (
	_ Clock      = (*System)(nil)
	_ Identifier = (*System)(nil)
)

// NewSystem returns a System clock anchored at the current wall time.
func NewSystem() *System {
	now := anchor()
	return &System{base: now, baseUnix: now.UnixNano(), host: hostID()}
}

// anchor reads the clock a few times and keeps the reading whose wall
// and monotonic parts agree best with the others': a thread preempted
// between the two would otherwise leave its gap in the clock for good.
func anchor() time.Time {
	var t [5]time.Time
	var gap [5]int64 // wall minus monotonic, from the first reading's
	for i := range t {
		t[i] = time.Now()
		gap[i] = t[i].UnixNano() - t[0].UnixNano() - int64(t[i].Sub(t[0]))
	}
	return t[median(gap[:])]
}

// median returns the index of the median of v (len(v) odd and small).
func median(v []int64) int {
	for i := range v {
		below, above := 0, 0
		for j := range v {
			switch {
			case v[j] < v[i]:
				below++
			case v[j] > v[i]:
				above++
			}
		}
		if below <= len(v)/2 && above <= len(v)/2 {
			return i
		}
	}
	return 0
}

// Now implements Clock.
func (s *System) Now() int64 { return s.baseUnix + int64(time.Since(s.base)) }

// Time implements Clock. The result carries a monotonic reading, so
// deadlines made from it ignore wall-clock steps.
func (s *System) Time(ns int64) time.Time { return s.base.Add(time.Duration(ns - s.baseUnix)) }

// Identity implements Identifier: 0 where the kernel has no boot ID to
// read. It does not allocate.
func (s *System) Identity() uint64 {
	if s.host == 0 {
		return 0
	}
	return identity(s.host, s.step())
}

// step returns how far the clock is from the kernel's wall clock now: the
// wall-clock steps since it was made (0 without any), the median of three
// readings.
func (s *System) step() int64 {
	var d [3]int64
	for i := range d {
		t := time.Now()
		d[i] = s.baseUnix + int64(t.Sub(s.base)) - t.UnixNano()
	}
	return d[median(d[:])]
}

// identity mixes host with step rounded to IdentityPrecision; never 0.
func identity(host uint64, step int64) uint64 {
	p := int64(IdentityPrecision)
	r := step / p
	if rem := step % p; rem >= p/2 {
		r++
	} else if rem < -p/2 {
		r--
	}
	id := mix(host ^ mix(uint64(r)))
	if id == 0 {
		id = 1
	}
	return id
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	ns atomic.Int64
	id atomic.Uint64
}

var (
	_ Clock      = (*Fake)(nil)
	_ Identifier = (*Fake)(nil)
)

// NewFake returns a Fake clock set to ns, without an identity.
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

// SetIdentity gives the clock the identity id (0: none), as a test that
// shares it between both ends of a run would.
func (f *Fake) SetIdentity(id uint64) { f.id.Store(id) }

// Identity implements Identifier.
func (f *Fake) Identity() uint64 { return f.id.Load() }
