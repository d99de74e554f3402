package server

import (
	"sync"

	"github.com/volley-net/volley/internal/reflector"
)

// statsSum adds up the workers' k-th intervals and emits each sum once
// every worker has reported it. With stamp set, the last worker is the
// STAMP listener, whose counters are emitted apart.
type statsSum struct {
	mu      sync.Mutex
	workers int
	stamp   bool
	emit    func(volley, stamp reflector.Counters)
	ticks   map[int]int // worker: intervals reported
	pending map[int]*pendingStats
}

type pendingStats struct {
	s, stamp reflector.Counters
	n        int
}

func (a *statsSum) add(worker int, s reflector.Counters) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers == 1 && !a.stamp {
		a.emit(s, reflector.Counters{}) // nothing to add up, nor to copy
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
		p.stamp = s
	} else {
		p.s = p.s.Add(s)
	}
	p.n++
	if p.n == a.workers {
		delete(a.pending, k)
		a.emit(p.s, p.stamp)
	}
}
