package stream

import (
	"container/heap"
	"net"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/quota"
)

// streamSpinFor is how long a connection's writer spins before a held
// reply is due: next to nothing (see Accept).
const streamSpinFor = time.Nanosecond

// holdClock is the clock the writers wait for held replies on.
var holdClock = clock.NewSystem()

// queued is a framed reply waiting for its writer.
type queued struct {
	due  time.Time
	n    uint64 // its place in arrival order
	buf  []byte
	held bool // Handler.Send is to stamp it
}

// queue is a min-heap of replies by due time (container/heap), in
// arrival order among equals.
type queue []queued

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].due.Before(q[j].due) || (q[i].due.Equal(q[j].due) && q[i].n < q[j].n)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = queued{}
	*q = old[:len(old)-1]
	return e
}

// WriteTo sends b as one message on the connection of addr. It does not
// wait for the write: b is copied to the connection's queue, and a writer
// sends it. A peer whose queue holds Limits.QueueBytes already is not
// reading: ErrSlowReader; a copy the budget cannot hold: ErrNoMemory.
func (l *Listener) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	l.mu.Lock()
	p := l.peers[addr]
	l.mu.Unlock()
	if p == nil {
		return 0, net.ErrClosed // the connection ended
	}
	if err := l.enqueue(p, b, time.Time{}, false); err != nil {
		return 0, err
	}
	return len(b), nil
}

// maxSpare bounds the written buffers a connection keeps for reuse.
const maxSpare = 4

// enqueue copies b into p's queue, to be sent at due (at once when zero);
// a held reply is given to Handler.Send as it goes.
func (l *Listener) enqueue(p *peer, b []byte, due time.Time, held bool) error {
	if len(b) > MaxMessage {
		return ErrTooLarge
	}
	p.qmu.Lock()
	defer p.qmu.Unlock()
	switch {
	case p.dead:
		return net.ErrClosed
	case p.queued > 0 && !p.stuck.IsZero() && time.Since(p.stuck) > l.lim.SendTimeout/4:
		// A write to it has made no progress for a while: it does not
		// read. (Replies waiting out their holds are bounded by the
		// memory budget.)
		return ErrSlowReader
	}
	need := headerLen + len(b)
	var f []byte
	for i, s := range p.spare {
		if cap(s) >= need {
			f = s[:need]
			p.spare = append(p.spare[:i], p.spare[i+1:]...)
			break
		}
	}
	if f == nil {
		if l.lim.Memory.Take(p.src, need) != quota.OK {
			return ErrNoMemory
		}
		f = make([]byte, need)
	}
	copy(f[headerLen:], b)
	p.arrived++
	heap.Push(&p.queue, queued{due: due, n: p.arrived, buf: f, held: held})
	p.queued += len(b)
	if !p.writing {
		p.writing = true
		p.writer.Go(func() { l.flush(p) })
	} else if p.queue[0].n == p.arrived {
		p.alarm.Wake() // it waits for a later one
	}
	return nil
}

// flush writes p's queue, each reply when it is due, until the queue is
// empty, p's reader is gone, or the connection fails (then it closes it,
// and the reader ends).
func (l *Listener) flush(p *peer) {
	for {
		p.qmu.Lock()
		if len(p.queue) == 0 || p.dead {
			p.writing = false
			p.qmu.Unlock()
			return
		}
		if wait := time.Until(p.queue[0].due); wait > 0 {
			p.qmu.Unlock()
			// Until the first is due, or an earlier one came, or the
			// reader left.
			p.alarm.Until(holdClock.Now() + int64(wait))
			continue
		}
		q := heap.Pop(&p.queue).(queued)
		p.stuck = time.Now()
		p.qmu.Unlock()
		f := q.buf
		if q.held {
			if h := l.handler.Load(); h != nil {
				(*h).Send(f[headerLen:], p.addr)
			}
		}
		p.wmu.Lock()
		err := p.c.WriteFrame(f, len(f)-headerLen, l.lim.SendTimeout)
		p.wmu.Unlock()
		p.qmu.Lock()
		p.stuck = time.Time{}
		p.queued -= len(f) - headerLen
		if len(p.spare) < maxSpare && !p.dead {
			p.spare = append(p.spare, f)
		} else {
			l.lim.Memory.Give(p.src, cap(f))
		}
		p.qmu.Unlock()
		if err != nil {
			p.c.Close()
			p.qmu.Lock()
			p.writing = false
			p.qmu.Unlock()
			return
		}
	}
}
