package kwait

import (
	"runtime"
	"time"
)

// Yield keeps a goroutine that waits in the kernel on its locked thread
// known to the scheduler. Such a goroutine is never rescheduled: each
// blocking call keeps its P, so after 10 ms on one scheduling tick the
// runtime's monitor (sysmon) takes that P from the thread, in the middle
// of a wait (which then takes one back as it returns), and starts
// checking again every 20 µs. (Go 1.26's retake: a tick unchanged for 10
// ms forces it, whatever the other Ps do.) Measured on the D-Bus reflector: sysmon woke
// 3.6-4.9k times a second and had a third of the process's CPU samples;
// a yield every 5 ms cut its wake-ups to 1.3k/s and the process's CPU by
// 15%. A yield costs the goroutine two context switches (its thread hands
// the P over and waits to get it back), so it belongs where nothing waits
// on the goroutine: between a reply and the next probe, not inside a
// round trip.
type Yield struct{ last int64 }

// yieldEvery is how often Maybe gives way: well inside sysmon's 10 ms.
const yieldEvery = int64(5 * time.Millisecond)

// Maybe gives way to the scheduler (runtime.Gosched) if it last did
// yieldEvery or more before now (ns, any clock that does not go back),
// and says whether it did.
func (y *Yield) Maybe(now int64) bool {
	if now-y.last < yieldEvery {
		return false
	}
	y.last = now
	runtime.Gosched()
	return true
}
