package reflector

import (
	"container/heap"
	"math"
	"net/netip"

	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// Held replies: kept until their hold is over, then stamped, signed and
// sent, by the holding goroutine (see Serve) or the caller of Due.

// held is a reply waiting out its hold.
type held struct {
	due  int64
	addr netip.AddrPort
	src  netip.Prefix
	buf  []byte
	rep  sentReply
}

// heldReplies is the replies waiting out their holds.
type heldReplies struct {
	heldQ  heldQueue      // by due time
	heldBy *quota.Counter // the held replies of each source, at most heldShare of MaxHeld
	free   [][]byte       // buffers of replies sent after their hold
	// alarm wakes the goroutine that sends held replies when they are
	// due (see holdStep); a reply held for sooner than the others wakes
	// it early.
	alarm *pace.Alarm
}

// heldQueue is the replies waiting out their holds, a min-heap by due
// time kept by container/heap. Replies go in and out through heap.Fix, not
// heap.Push and heap.Pop: those pass a held through an any, which costs two
// allocations per held reply (measured with testing.AllocsPerRun), where
// Fix moves elements of the preallocated slice only. Push and Pop are
// there for heap.Interface.
type heldQueue []held

var _ heap.Interface = (*heldQueue)(nil)

func (q heldQueue) Len() int           { return len(q) }
func (q heldQueue) Less(i, j int) bool { return q[i].due < q[j].due }
func (q heldQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// Push appends x, a held, for heap.Interface; the reflector uses push.
func (q *heldQueue) Push(x any) { *q = append(*q, x.(held)) }

// Pop removes the last element, for heap.Interface; the reflector uses
// pop.
func (q *heldQueue) Pop() any {
	n := len(*q) - 1
	x := (*q)[n]
	(*q)[n] = held{}
	*q = (*q)[:n]
	return x
}

// push adds hd and reports whether it is now the first due (it rises to
// the top only when due strictly sooner than the one there).
func (q *heldQueue) push(hd held) (first bool) {
	first = len(*q) == 0 || hd.due < (*q)[0].due
	*q = append(*q, hd)
	heap.Fix(q, len(*q)-1) // only up: it has no children
	return first
}

// pop removes and returns the first due; q is not empty.
func (q *heldQueue) pop() held {
	n := len(*q) - 1
	q.Swap(0, n)
	top := (*q)[n]
	(*q)[n] = held{} // let go of its buffer
	*q = (*q)[:n]
	if n > 0 {
		heap.Fix(q, 0)
	}
	return top
}

// next returns when the first reply is due, or 0 when none is held.
func (q heldQueue) next() int64 {
	if len(q) == 0 {
		return 0
	}
	return q[0].due
}

// maxFreeHeld bounds the size of a held reply's buffer kept for reuse, and
// maxFree their number: larger ones come from the memory budget each time.
const (
	// heldShare: a source may hold at most 1/heldShare of MaxHeld (or
	// minHeldShare, when that is more), so that one cannot take every
	// slot from the others.
	heldShare    = 4
	minHeldShare = 64
	maxFreeHeld  = 2048
	maxFree      = 1024
)

// hold keeps the encoded reply pkt for rep.addr, of source src, until due.
// Small replies' buffers are reused; larger ones are taken from the memory
// budget.
func (r *Reflector) hold(pkt []byte, h *wire.Header, src netip.Prefix, due int64, rep sentReply) {
	if len(r.heldQ) >= r.cfg.MaxHeld || r.heldBy.Take(src) != quota.OK {
		r.st.Drops[DropHoldFull]++
		return
	}
	var buf []byte
	if len(pkt) <= maxFreeHeld {
		if n := len(r.free); n > 0 {
			buf, r.free = r.free[n-1], r.free[:n-1]
		} else {
			buf = make([]byte, 0, maxFreeHeld)
		}
	} else if r.cfg.Memory.Take(src, len(pkt)) != quota.OK {
		r.heldBy.Give(src)
		r.st.Drops[DropMemory]++
		return
	}
	r.sealLater(pkt, h)
	buf = append(buf[:0], pkt...)
	first := r.heldQ.push(held{due: due, addr: rep.addr, src: src, buf: buf, rep: rep})
	if first {
		r.alarm.Wake() // due before the one waited for, if any
	}
}

// holdStep waits until the next held reply is due, and hands those due
// to send (under the lock); a reply held for sooner than the one waited
// for wakes it to wait for that one instead. It returns after sending, or
// when woken with stop true. The wait is precise (see pace.Alarm): it
// spins only for the last stretch before a reply is due, and sleeps
// otherwise, also while nothing is held.
func (r *Reflector) holdStep(send heldSender, stop func() bool) {
	for {
		r.mu.Lock()
		due := r.NextDue()
		r.mu.Unlock()
		if due == 0 {
			due = math.MaxInt64
		}
		if _, woken := r.alarm.Until(due); !woken {
			break
		}
		if stop() {
			return
		}
	}
	r.mu.Lock()
	r.due(r.clk.Now(), send)
	if r.stamps != nil {
		r.drainTx()
	}
	r.mu.Unlock()
}

// NextDue returns when the next held reply is due, or 0 when none is held.
func (r *Reflector) NextDue() int64 {
	return r.heldQ.next()
}

// heldSender sends a held reply b, now due, to its peer; rep is what is
// known of it, to account it once it left (see sent). It must not keep b.
type heldSender func(b []byte, to netip.AddrPort, rep sentReply)

// Due hands every held reply due by now to send, stamped with its send
// time; send must not keep the buffer.
func (r *Reflector) Due(now int64, send func(b []byte, addr netip.AddrPort)) {
	r.due(now, func(b []byte, to netip.AddrPort, _ sentReply) { send(b, to) })
}

// due hands every held reply due by now to send, stamped with its send
// time and signed.
func (r *Reflector) due(now int64, send heldSender) {
	for len(r.heldQ) > 0 && r.heldQ[0].due <= now {
		top := r.heldQ.pop()
		top.rep.t3 = r.clk.Now()
		wire.PutT3(top.buf, top.rep.t3)
		if r.signer != nil {
			r.signer.Sign(top.buf)
		}
		send(top.buf, top.addr, top.rep)
		r.release(top)
	}
}

// release gives back a held reply's buffer once it was sent: to the free
// list when small, to the memory budget otherwise.
func (r *Reflector) release(hd held) {
	r.heldBy.Give(hd.src)
	if cap(hd.buf) <= maxFreeHeld {
		if len(r.free) < maxFree {
			r.free = append(r.free, hd.buf)
		}
		return
	}
	r.cfg.Memory.Give(hd.src, len(hd.buf))
}
