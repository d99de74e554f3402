package client

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
)

// RunFlows measures through every conn at once: one flow per conn, each its
// own session and goroutine locked to its own OS thread. The result's
// Intervals and Summary cover all flows together (the k-th interval of each
// flow makes the k-th total interval); Flows has each flow's summary. With
// one conn it is Run.
func RunFlows(ctx context.Context, cfg Config, conns []transport.Conn) (*result.Result, error) {
	if len(conns) == 1 {
		return Run(ctx, cfg, conns[0])
	}
	if len(conns) == 0 {
		return nil, fmt.Errorf("%w: no flows", ErrConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := handlerOf(&cfg)
	col := &collector{want: len(conns), pct: cfg.Percentiles, handler: h, keep: !cfg.StreamIntervals, shared: cfg.Shared}
	flowCfg := cfg
	if cfg.Handler != nil {
		flowCfg.Handler = reconnectsOnly{h: h}
	}
	flowCfg.StreamIntervals = true // a flow's go to the collector
	runs := make([]*run, len(conns))
	for i, c := range conns {
		fc := flowCfg
		fc.Seed += uint64(i) // each flow its own draws
		r := newRun(fc, c)
		r.flow = i + 1
		r.collect = col.add
		if cfg.Log != nil {
			r.log = newProbeLog(cfg.Log, i+1)
		}
		if cfg.Samples != nil {
			r.samples = cfg.Samples.flow(i+1, len(conns))
		}
		stop := context.AfterFunc(ctx, r.interrupt)
		defer stop()
		if err := r.start(ctx); err != nil {
			return nil, fmt.Errorf("flow %d: %w", i+1, err)
		}
		runs[i] = r
	}
	res := *runs[0].res
	res.Config.Parallel = len(conns)
	h.Start(&res)
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs[i] = r.execute(ctx)
		})
	}
	wg.Wait()
	res.Intervals = col.finish()
	err = errors.Join(errs...)
	res.Summary, res.Histogram, res.Distribution = total(runs, cfg)
	if len(cfg.Workload) > 0 {
		entries := runs[0].entries
		for _, r := range runs[1:] {
			for i, e := range r.entries {
				entries[i].merge(e)
			}
		}
		res.Workload = workloadResults(&cfg, entries)
	}
	flowsInto(&res, runs, errs)
	h.End(&res)
	return &res, err
}

// flowsInto fills in what res says of the flows runs, which ended with
// errs: each flow's summary, and where the flows' figures agree, theirs.
func flowsInto(res *result.Result, runs []*run, errs []error) {
	res.ReflectorCount, res.Stopped, res.Reconnects = "close", runs[0].res.Stopped, nil
	res.Timestamps = stampsOfFlows(runs)
	res.CPU = runs[0].res.CPU   // the process's, over the first flow's sending
	res.Path = runs[0].res.Path // the first flow's, like Socket
	res.PeerResults = peerResults(runs)
	// The flows' delays are measured when every flow's reflector reads
	// the client's clock; estimates of one flow would not fit the
	// merged delays.
	res.ClockOffset = runs[0].res.ClockOffset
	for _, r := range runs {
		if co := r.res.ClockOffset; co == nil || co.Method != "same-clock" {
			res.ClockOffset = nil
		}
	}
	for i, r := range runs {
		f := result.Flow{LocalAddr: r.res.Config.LocalAddr, Summary: r.res.Summary,
			ReflectorCount: r.res.ReflectorCount, Stopped: r.res.Stopped, Error: r.res.Error}
		res.Flows = append(res.Flows, f)
		res.Reconnects = append(res.Reconnects, r.res.Reconnects...)
		if f.ReflectorCount != "close" {
			res.ReflectorCount = f.ReflectorCount
		}
		if errs[i] != nil && res.Error == "" {
			res.Stopped, res.Error = f.Stopped, fmt.Sprintf("flow %d: %s", i+1, f.Error)
		}
	}
}

// total merges the flows' distributions and adds up their counts. The
// counts are the flows' summaries', which hold the exact split of loss
// (and, one-way, the reflector's counts) that the accumulators do not.
func total(runs []*run, cfg Config) (result.Interval, *result.Histogram, *result.Distribution) {
	all := newAcc(cfg.Shared)
	var origin, end int64
	var counts result.Counts
	for i, r := range runs {
		all.merge(r.total)
		s := r.res.Summary
		if i == 0 || r.origin < origin {
			origin = r.origin
		}
		end = max(end, r.origin+int64(s.End))
		counts.Add(s.Counts)
	}
	all.counts = counts
	all.start = origin
	sum := all.interval(origin, end, cfg.Percentiles)
	if cfg.OneWay {
		sum.Throughput.ProbesPerSecDown, sum.Throughput.RequestsPerSec = 0, 0
	}
	return sum, histogram(&cfg, all), distribution(&cfg, all)
}

// collector merges the flows' k-th intervals into the k-th total interval.
// It holds at most maxPending total intervals at once, and reuses their
// accumulators: a run of many intervals, or one flow far behind the others
// (its intervals skipped in a stall), keeps its memory flat.
type collector struct {
	mu      sync.Mutex
	want    int
	pct     []float64
	handler Handler
	keep    bool // keep the total intervals for the result (not StreamIntervals)
	shared  bool // coarse histograms (Config.Shared)
	pending []*pendingInterval
	free    []*pendingInterval
	emitted int
	out     []result.Interval
}

// maxPending is the most total intervals the collector waits on: when a
// flow runs further ahead of the slowest, the oldest is emitted with the
// flows it has, and what the others bring for it later goes into the
// oldest one still pending. Every count lands in some total interval.
const maxPending = 4

type pendingInterval struct {
	acc        *acc
	n          int  // flows that brought this interval
	has        bool // something was merged in
	start, end time.Duration
}

// add takes a flow's interval number no, a ending at end, and emits the total
// intervals that are complete.
func (c *collector) add(no int, a *acc, start, end time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for no-c.emitted >= maxPending {
		c.emitFirst()
	}
	i := max(no-c.emitted, 0) // a flow that fell behind adds to the oldest
	for len(c.pending) <= i {
		c.pending = append(c.pending, c.newPending())
	}
	p := c.pending[i]
	if no >= c.emitted {
		if p.n == 0 {
			p.start, p.end = start, end
			p.acc.start = a.start
		}
		p.n++
	} else if !p.has && p.n == 0 {
		p.start, p.end = start, end
		p.acc.start = a.start
	}
	p.acc.merge(a)
	p.has = true
	for len(c.pending) > 0 && c.pending[0].n == c.want {
		c.emitFirst()
	}
}

func (c *collector) newPending() *pendingInterval {
	if n := len(c.free); n > 0 {
		p := c.free[n-1]
		c.free = c.free[:n-1]
		return p
	}
	return &pendingInterval{acc: newAcc(c.shared)}
}

// emitFirst emits the oldest pending interval (if it has anything) and
// keeps it for reuse.
func (c *collector) emitFirst() {
	p := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	if p.has {
		c.emit(p)
	}
	c.emitted++
	p.acc.reset(0)
	p.n, p.has = 0, false
	c.free = append(c.free, p)
}

func (c *collector) emit(p *pendingInterval) {
	iv := p.acc.interval(p.acc.start, p.acc.start+int64(p.end-p.start), c.pct)
	iv.Start, iv.End = p.start, p.end
	if c.keep {
		c.out = append(c.out, iv)
	}
	c.handler.Interval(iv)
}

// finish emits what is left, from flows that had fewer intervals, and
// returns every total interval (none when they are not kept).
func (c *collector) finish() []result.Interval {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 {
		c.emitFirst()
	}
	c.free = nil
	if c.out == nil {
		c.out = []result.Interval{}
	}
	return c.out
}

// peerResults is what a foreign peer said to the flows runs: the first
// flow's, with every flow's handshakes that did not complete added up.
func peerResults(runs []*run) *result.PeerResults {
	first := runs[0].res.PeerResults
	if first == nil || first.Connect == nil {
		return first
	}
	sum := *first
	c := *first.Connect
	for _, r := range runs[1:] {
		if o := r.res.PeerResults; o != nil && o.Connect != nil {
			c.Refused += o.Connect.Refused
			c.TimedOut += o.Connect.TimedOut
			c.Failed += o.Connect.Failed
		}
	}
	sum.Connect = &c
	return &sum
}
