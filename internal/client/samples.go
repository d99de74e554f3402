package client

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// Samples keeps a run's measured probes for a plot (--plot): when each
// left, its delays, or that it was lost. Each flow keeps its own share of
// the limit in a slice allocated as the flow starts, so keeping a probe
// takes no lock and allocates nothing; a flow that measures more than its
// share keeps none (the plot then draws each interval's percentiles), so
// memory stays flat however long the run.
type Samples struct {
	limit int
	mu    sync.Mutex // guards flows as flows start and Probes reads them
	flows []*flowSamples
}

// NewSamples returns Samples that keep at most limit probes in all.
func NewSamples(limit int) *Samples { return &Samples{limit: max(limit, 1)} }

// flowSamples is one flow's probes.
type flowSamples struct {
	flow   int
	probes []result.Probe
	over   bool // it measured more than it could keep
}

// flow returns the slice flow no (from 1) of n keeps its probes in.
func (s *Samples) flow(no, n int) *flowSamples {
	f := &flowSamples{flow: no, probes: make([]result.Probe, 0, max(s.limit/max(n, 1), 1))}
	s.mu.Lock()
	s.flows = append(s.flows, f)
	s.mu.Unlock()
	return f
}

// add keeps p, or gives up keeping any when the flow's share is full.
func (f *flowSamples) add(p result.Probe) {
	if f.over {
		return
	}
	if len(f.probes) == cap(f.probes) {
		f.over, f.probes = true, nil
		return
	}
	p.Flow = f.flow
	f.probes = append(f.probes, p)
}

// Probes returns the probes kept, ordered by the time they left, once the
// run has returned; complete is false when a flow measured more than it
// could keep, and then probes is nil. Each flow's times are from its own
// end of warm-up (in a parallel run, the flows' ends of warm-up are apart
// by the time their sessions took to open).
func (s *Samples) Probes() (probes []result.Probe, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.flows {
		if f.over {
			return nil, false
		}
		probes = append(probes, f.probes...)
	}
	slices.SortStableFunc(probes, func(a, b result.Probe) int { return cmp.Compare(a.Sent, b.Sent) })
	return probes, true
}

// sample keeps measured probe s: lost, or answered with these delays.
func (rec *recorder) sample(s *slot, lost bool, rtt, up, down int64) {
	rec.samples.add(result.Probe{Sent: time.Duration(s.sent - rec.origin), Lost: lost,
		RTT: time.Duration(rtt), Up: time.Duration(up), Down: time.Duration(down)})
}
