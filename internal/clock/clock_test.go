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

// TestSystemIdentity: two System clocks of one process read the same
// time, and say so; a clock that kept a wall-clock step the other did not
// see (one made before the step, one after) does not claim to be the same.
func TestSystemIdentity(t *testing.T) {
	a, b := NewSystem(), NewSystem()
	if a.Identity() == 0 {
		t.Skip("skipping: this kernel has no boot ID to read: System clocks have no identity here")
	}
	if a.Identity() != b.Identity() {
		t.Fatalf("Identity() = %x and %x for two clocks of one kernel, want equal", a.Identity(), b.Identity())
	}
	for _, step := range []time.Duration{50 * time.Microsecond, -3 * time.Millisecond, time.Second} {
		stepped := &System{base: a.base, baseUnix: a.baseUnix + int64(step), host: a.host}
		if stepped.Identity() == a.Identity() {
			t.Errorf("a clock %v off the other has its identity %x", step, a.Identity())
		}
	}
	other := &System{base: a.base, baseUnix: a.baseUnix, host: a.host ^ 2}
	if other.Identity() == a.Identity() {
		t.Errorf("a clock of another kernel has this one's identity %x", a.Identity())
	}
}

// TestIdentityRounding: steps within half of IdentityPrecision of each
// other's microsecond share an identity; the host always counts.
func TestIdentityRounding(t *testing.T) {
	const h = 0x1234
	tests := []struct {
		a, b int64
		same bool
	}{
		{0, 0, true},
		{0, 499, true},
		{0, -500, true},
		{0, 500, false},
		{0, -501, false},
		{7_000_200, 6_999_900, true},
		{7_000_000, 7_001_000, false},
	}
	for _, tt := range tests {
		if got := identity(h, tt.a) == identity(h, tt.b); got != tt.same {
			t.Errorf("identity(%d) == identity(%d): %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	if identity(h, 0) == identity(h+1, 0) {
		t.Error("two hosts with no step share an identity")
	}
}

func TestFakeIdentity(t *testing.T) {
	f := NewFake(0)
	if got := IdentityOf(f); got != 0 {
		t.Fatalf("IdentityOf(NewFake) = %x, want 0 (none)", got)
	}
	f.SetIdentity(42)
	if got := IdentityOf(f); got != 42 {
		t.Fatalf("IdentityOf after SetIdentity(42) = %d, want 42", got)
	}
}

// TestDeadline: a deadline keeps to the monotonic clock where its time
// has a reading; the zero time is none, and no other time is 0.
func TestDeadline(t *testing.T) {
	now := time.Now()
	if d := Deadline(now.Add(time.Hour)) - MonoNow(); d < int64(59*time.Minute) || d > int64(time.Hour) {
		t.Errorf("an hour ahead is %v ahead, want an hour less the time this took", time.Duration(d))
	}
	// The same instant by its wall reading alone (Round(0) strips the
	// monotonic one) lands on the same deadline, the wall clock not
	// having moved apart from the monotonic since.
	if a, b := Deadline(now), Deadline(now.Round(0)); a-b > int64(time.Millisecond) || b-a > int64(time.Millisecond) {
		t.Errorf("now: %d by the monotonic reading, %d by the wall's", a, b)
	}
	if Deadline(time.Time{}) != 0 || Deadline(start) == 0 || Deadline(time.Unix(1, 0)) >= 0 {
		t.Errorf("zero time %d, the start %d, 1970 %d: want 0, not 0, negative", Deadline(time.Time{}), Deadline(start), Deadline(time.Unix(1, 0)))
	}
	// Centuries away: held where a difference with MonoNow cannot wrap
	// (found by a reviewer: a deadline in 1700 read as centuries ahead).
	for _, far := range []time.Time{time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if left := Deadline(far) - MonoNow(); (left > 0) != far.After(now) {
			t.Errorf("%v: %d ns left, want the sign of %v", far, left, time.Until(far))
		}
	}
}
