package clock

import "time"

// The read and write deadlines that package deadline, kwait, spin and the
// transports keep in an int64 are times on the monotonic clock: ns since
// the process's start (Deadline), compared with MonoNow. They were Unix ns
// compared with the wall clock, while the times they are made from (the
// reflector's and client's clock.System) move with the monotonic clock:
// once the wall clock ran ahead of it (a VM resumed from a snapshot, an
// NTP step or slew), every deadline looked already past and a reflector's
// idle loops spun, found by an outside tester (an idle reflector at
// 40-77% of a CPU while the wall clock gained 50 ms every 10 s).

// start is the origin of the monotonic deadlines.
var start = time.Now()

// Deadline is t as a deadline: ns on the monotonic clock since the process's
// start where t has a monotonic reading (a time from time.Now or a
// clock.System), by its wall reading otherwise; 0 for the zero time (no
// deadline), and never 0 otherwise. Times centuries away are held at
// ±2^62 ns (146 years), so that a difference with MonoNow cannot wrap.
func Deadline(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if d := min(max(int64(t.Sub(start)), -1<<62), 1<<62); d != 0 {
		return d
	}
	return 1
}

// MonoNow is the time now as Deadline gives it.
func MonoNow() int64 { return int64(time.Since(start)) }
