package reflector

import (
	"math"
	"net/netip"

	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// held is a reply waiting out its hold.
type held struct {
	due  int64
	addr netip.AddrPort
	src  netip.Prefix
	buf  []byte
	rep  sentReply
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
	if r.signer != nil {
		h.Flags |= wire.FlagAuth
	}
	_ = h.Encode(pkt)
	buf = append(buf[:0], pkt...)
	// Push onto the heap.
	r.heldQ = append(r.heldQ, held{due: due, addr: rep.addr, src: src, buf: buf, rep: rep})
	i := len(r.heldQ) - 1
	for i > 0 {
		p := (i - 1) / 2
		if r.heldQ[p].due <= r.heldQ[i].due {
			break
		}
		r.heldQ[p], r.heldQ[i] = r.heldQ[i], r.heldQ[p]
		i = p
	}
	if i == 0 {
		r.alarm.Wake() // due before the one waited for, if any
	}
}

// holdStep waits until the next held reply is due, and hands those due
// to send (under the lock); a reply held for sooner than the one waited
// for wakes it to wait for that one instead. It returns after sending, or
// when woken with stop true. The wait is precise (see pace.Alarm): it
// spins only for the last stretch before a reply is due, and sleeps
// otherwise, also while nothing is held.
func (r *Reflector) holdStep(send func(b []byte, addr netip.AddrPort), stop func() bool) {
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
	r.Due(r.clk.Now(), send)
	if r.stamps != nil {
		r.drainTx()
	}
	r.mu.Unlock()
}

// NextDue returns when the next held reply is due, or 0 when none is held.
func (r *Reflector) NextDue() int64 {
	if len(r.heldQ) == 0 {
		return 0
	}
	return r.heldQ[0].due
}

// Due hands every held reply due by now to send, stamped with its send
// time; send must not keep the buffer.
func (r *Reflector) Due(now int64, send func(b []byte, addr netip.AddrPort)) {
	for len(r.heldQ) > 0 && r.heldQ[0].due <= now {
		top := r.heldQ[0]
		last := len(r.heldQ) - 1
		r.heldQ[0] = r.heldQ[last]
		r.heldQ[last] = held{}
		r.heldQ = r.heldQ[:last]
		// Sift the moved element down.
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(r.heldQ) && r.heldQ[l].due < r.heldQ[m].due {
				m = l
			}
			if l+1 < len(r.heldQ) && r.heldQ[l+1].due < r.heldQ[m].due {
				m = l + 1
			}
			if m == i {
				break
			}
			r.heldQ[i], r.heldQ[m] = r.heldQ[m], r.heldQ[i]
			i = m
		}
		top.rep.t3 = r.clk.Now()
		wire.PutT3(top.buf, top.rep.t3)
		if r.signer != nil {
			r.signer.Sign(top.buf)
		}
		r.last, r.lastOK = top.rep, true
		send(top.buf, top.addr)
		r.lastOK = false
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
