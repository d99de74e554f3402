package server

import (
	"sync"

	"github.com/volley-net/volley/internal/reflector"
)

// statsSum adds up the workers' k-th intervals and emits each sum once
// every worker has reported it. With stamp set, the last worker is the
// STAMP listener, whose counters are emitted apart.
//
// After start, sums go to an emitter goroutine, so that no worker waits on
// the output (a terminal or pipe nobody reads, a slow log): when the
// emitter is behind by sumQueue sums, the next one is kept and goes with
// the one after, a line over the longer span, its counts whole but
// without response times (merging those takes long enough, under the
// lock every worker takes, to stall them at 100 intervals a second); no
// worker stops answering, and the totals at the end keep everything.
// Without start (tests), add emits itself.
type statsSum struct {
	mu      sync.Mutex
	workers int
	stamp   bool
	emit    func(volley, stamp reflector.Counters)
	ticks   map[int]int // worker: intervals reported
	pending map[int]*pendingStats

	out   chan pendingStats // to the emitter; nil before start
	carry *pendingStats     // a sum the emitter had no room for
	done  chan struct{}     // closed when the emitter has emitted all
}

type pendingStats struct {
	s, stamp reflector.Counters
	n        int
}

// sumQueue is how many sums the emitter may be behind.
const sumQueue = 16

// start starts the emitter goroutine; stop, once no worker adds any more,
// emits what is left and waits for it.
func (a *statsSum) start() {
	a.out, a.done = make(chan pendingStats, sumQueue), make(chan struct{})
	go func() {
		defer close(a.done)
		for p := range a.out {
			a.emit(p.s, p.stamp)
		}
	}()
}

// stop emits what is left and returns once it is out.
func (a *statsSum) stop() {
	a.mu.Lock()
	carry := a.carry
	a.carry = nil
	a.mu.Unlock()
	if carry != nil {
		a.out <- *carry // the workers are done: waiting is no one's loss
	}
	close(a.out)
	<-a.done
}

func (a *statsSum) add(worker int, s reflector.Counters) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Whatever goes to the emitter owns its response times: the worker
	// resets them for its next interval (Add copies them too). Handed
	// over as they were, a reflector with one worker at --rate max, its
	// output behind, crashed when a reset came under the emitter's read.
	if a.workers == 1 && !a.stamp {
		a.ready(pendingStats{s: s.Own()}) // nothing to add up
		return
	}
	if a.ticks == nil {
		a.ticks, a.pending = map[int]int{}, map[int]*pendingStats{}
	}
	k := a.ticks[worker]
	a.ticks[worker]++
	p := a.pending[k]
	if p == nil {
		p = &pendingStats{}
		a.pending[k] = p
	}
	if a.stamp && worker == a.workers-1 {
		p.stamp = s.Own()
	} else {
		p.s = p.s.Add(s)
	}
	p.n++
	if p.n == a.workers {
		delete(a.pending, k)
		a.ready(*p)
	}
}

// ready hands the sum p to the emitter, without waiting; under mu.
func (a *statsSum) ready(p pendingStats) {
	if a.out == nil {
		a.emit(p.s, p.stamp)
		return
	}
	if a.carry != nil {
		p = pendingStats{s: then(a.carry.s, p.s), stamp: then(a.carry.stamp, p.stamp)}
		a.carry = nil
	}
	select {
	case a.out <- p:
	default:
		a.carry = &p
	}
}

// then is the counters of an interval a followed by the next one b, as
// one: counts added, spans too, the sessions open at b's end, and no
// response times (see statsSum).
func then(a, b reflector.Counters) reflector.Counters {
	a.Response, a.ResponseKernel, b.Response, b.ResponseKernel = nil, nil, nil, nil
	c := a.Add(b)
	c.Elapsed = a.Elapsed + b.Elapsed
	c.Sessions = b.Sessions
	return c
}
