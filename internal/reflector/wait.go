package reflector

import (
	"time"

	"github.com/volley-net/volley/internal/transport"
)

// idleAfter is how long a datagram listener waits in the kernel with
// nothing coming before it goes back to the poller.
const idleAfter = int64(200 * time.Millisecond)

// kernelWait puts a datagram listener's reads in the kernel, on the read
// loop's own thread (transport.WaitInKernel), while probes come, and back
// in Go's poller once none came for idleAfter.
//
// An idle listener waiting in the kernel holds its thread's processor
// (P) through waits of up to kwait.Cap: with any other goroutine at work
// (a TCP or Unix stream ping-pong on the same reflector), the runtime's
// monitor (sysmon) then took that processor back every 20 ms or so and
// went back to checking every 20 µs each time. Measured with an idle
// UDP listener beside a Unix stream or TCP ping-pong: sysmon woke
// 1,000-2,900 times a second instead of 100-190, on a core the ping-pong
// needs. In the poller an idle listener holds nothing. The first datagram
// of a busy spell is read from the poller (a few µs later than from the
// kernel, before its receive stamp), and the switch to the kernel comes
// after its answer.
type kernelWait struct {
	conn  transport.PacketConn
	on    bool   // reads wait in the kernel
	never bool   // conn cannot (busy polling, or no blocking reads)
	undo  func() // back to the poller, while on
	last  int64  // when the last datagram came (the reflector's clock, ns)
}

// after notes a read that returned n datagrams at now: the first after
// an idle spell moves the reads into the kernel; idleAfter with none
// moves them back to the poller.
func (k *kernelWait) after(n int, now int64) {
	switch {
	case n > 0:
		k.last = now
		if !k.on && !k.never {
			k.undo, k.on = transport.WaitInKernel(k.conn)
			k.never = !k.on
		}
	case k.on && now-k.last >= idleAfter:
		k.stop()
	}
}

// until is the read deadline to set for one that is due at deadline: in
// the kernel, no later than the end of the idle spell.
func (k *kernelWait) until(deadline int64) int64 {
	if k.on && k.last+idleAfter < deadline {
		return k.last + idleAfter
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
