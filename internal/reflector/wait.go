package reflector

import (
	"time"

	"github.com/volley-net/volley/internal/transport"
)

// idleAfter is how long a datagram listener waits in the kernel with
// nothing coming before it goes back to the poller; retryAfter is how
// long one that could not move there waits before it tries again.
const (
	idleAfter  = int64(200 * time.Millisecond)
	retryAfter = int64(time.Second)
)

// kernelWait puts a datagram listener's reads in the kernel, on the read
// loop's own thread (transport.WaitInKernel), while probes come, and back
// in Go's poller once none came for idleAfter.
//
// An idle listener waiting in the kernel holds its thread's processor
// (P) through waits of up to kwait.Cap: with any other goroutine at work
// (a TCP or Unix stream ping-pong on the same reflector), the runtime's
// monitor (sysmon) then took that processor back every 20 ms or so and
// went back to checking every 20 µs each time. In the poller an idle
// listener holds nothing. The first datagram of a busy spell is read from
// the poller (a few µs later than from the kernel, before its receive
// stamp), and the move to the kernel comes after its answer.
//
// Its methods are called with the reflector's lock held: the goroutine
// that sends held replies writes to the socket under it, and a write
// must not start in one mode and wait in the other.
type kernelWait struct {
	conn    any
	on      bool   // reads wait in the kernel
	undo    func() // back to the poller, while on
	last    int64  // when the last datagram came (the reflector's clock, ns)
	check   int64  // while on: when to look whether the spell is over
	retryAt int64  // a move that failed is not tried again before
}

// after notes a read that returned n datagrams at now: the first after
// an idle spell moves the reads into the kernel, and at each check one
// that came idleAfter or longer after the last moves them back.
func (k *kernelWait) after(n int, now int64) {
	if n > 0 {
		k.last = now
		if !k.on && now >= k.retryAt {
			if k.undo, k.on = transport.WaitInKernel(k.conn); k.on {
				k.check = now + idleAfter
			} else {
				k.retryAt = now + retryAfter
			}
		}
	}
	if !k.on || now < k.check {
		return
	}
	if now-k.last >= idleAfter {
		k.stop()
		return
	}
	k.check = k.last + idleAfter
}

// until is the read deadline to set for one that is due at deadline:
// while waiting in the kernel, no later than the next check. It moves at
// most once per idleAfter, so that a busy loop does not set a deadline
// per read.
func (k *kernelWait) until(deadline int64) int64 {
	if k.on && k.check < deadline {
		return k.check
	}
	return deadline
}

// stop puts the reads back in the poller.
func (k *kernelWait) stop() {
	if k.on {
		k.undo()
		k.on, k.undo = false, nil
	}
}
