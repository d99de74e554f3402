package saved

import (
	"cmp"
	"slices"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// The distributions an accumulator keeps, as the client's do.
const (
	dRTT = iota
	dResponse
	dUp
	dDown
	dIPDVRTT
	dIPDVUp
	dIPDVDown
	dRTTSched
	dSendError
	dRTTK
	dResponseK
	dUpK
	dDownK
	dSendStack
	dRecvStack
	numDists
)

// acc accumulates one interval, or the whole log. Its distributions are
// made on first use: a histogram is some 200 KB.
type acc struct {
	counts result.Counts
	d      [numDists]*stats.Dist
}

func (a *acc) record(i int, v int64) {
	if a.d[i] == nil {
		a.d[i] = stats.NewDist()
	}
	a.d[i].Record(v)
}

// summary is distribution i's figures (none when it has no values).
func (a *acc) summary(i int, pct []float64) result.Latency {
	if a.d[i] == nil {
		return result.Latency{Percentiles: []result.Percentile{}}
	}
	return a.d[i].Summary(pct)
}

func (a *acc) count(i int) int64 {
	if a.d[i] == nil {
		return 0
	}
	return a.d[i].Count()
}

// interval renders a over [start, end), as the client renders its
// accumulators (no bytes: a log does not have the sizes).
func (a *acc) interval(start, end time.Duration, pct []float64) result.Interval {
	iv := result.Interval{Start: start, End: end, Counts: a.counts,
		RTT: a.summary(dRTT, pct), Response: a.summary(dResponse, pct), Up: a.summary(dUp, pct), Down: a.summary(dDown, pct),
		IPDV: result.IPDV{RTT: a.summary(dIPDVRTT, pct), Up: a.summary(dIPDVUp, pct), Down: a.summary(dIPDVDown, pct)},
	}
	if a.count(dSendError) > 0 || a.count(dRTTSched) > 0 {
		rs, se := a.summary(dRTTSched, pct), a.summary(dSendError, pct)
		iv.RTTFromSchedule, iv.SendError = &rs, &se
	}
	if a.count(dRTTK) > 0 || a.count(dSendStack) > 0 || a.count(dRecvStack) > 0 {
		iv.Kernel = &result.KernelTimes{RTT: a.summary(dRTTK, pct), Response: a.summary(dResponseK, pct),
			Up: a.summary(dUpK, pct), Down: a.summary(dDownK, pct),
			SendStack: a.summary(dSendStack, pct), RecvStack: a.summary(dRecvStack, pct)}
		// LocalQueue stays unknown (omitted): the probe log has no
		// scheduler stamps.
	}
	c := &iv.Counts
	if c.Sent > 0 {
		c.LossPercent = 100 * float64(c.Lost) / float64(c.Sent)
	}
	if secs := (end - start).Seconds(); secs > 0 {
		t := &iv.Throughput
		t.ProbesPerSecUp = float64(c.Sent) / secs
		t.ProbesPerSecDown = float64(c.Received) / secs
		t.RequestsPerSec = float64(c.Received) / secs
	}
	return iv
}

// maxOpen bounds the intervals open at once: lines come in about the
// order their probes were answered or timed out, so an interval is
// complete a little after the next one starts. A line for an interval
// closed already is counted in it, its delays only in the summary.
const maxOpen = 16

// dupRing is how many of a flow's last replies are remembered, to tell a
// duplicate's direction by its T3.
const dupRing = 256

// flowState is what the builder follows per flow, as the client's
// recorder does: the last reply (IPDV), the highest sequence number and
// reflector send time received (reordering), the recent replies' T3s.
type flowState struct {
	prevSeq                 uint64
	prevRTT, prevUp, prevDn int64
	highest                 uint64
	maxT3                   int64
	t3                      []struct {
		seq uint64
		t3  [2]int64
	}
}

// builder rebuilds a result from a probe log's lines.
type builder struct {
	name    string // in errors
	label   string // as the target
	opt     Options
	pct     []float64
	origin  int64 // the first send time, Unix ns (0: not settled yet)
	maxSent time.Duration
	open    map[int64]*acc
	closed  map[int64]int // interval number to its index in ivs
	ivs     []result.Interval
	free    []*acc
	cur     int64 // the interval of the latest send time
	total   acc
	flows   map[int]*flowState
	kernel  bool // a line had kernel stamps
	refl    bool // a line had the reflector's kernel stamps
	probes  []result.Probe
	over    bool
	patched int
	merged  int // how many times the intervals rebuilt were merged in pairs
}

func newBuilder(name, label string, opt Options) *builder {
	pct := opt.Percentiles
	if pct == nil {
		pct = defaultPercentiles
	}
	return &builder{name: name, label: label, opt: opt, pct: slices.Clone(pct), open: map[int64]*acc{}, closed: map[int64]int{}, flows: map[int]*flowState{}}
}

// intervalOf returns the number of the interval of a probe placed at t
// (see logLine.placed; 0: unknown, the latest one).
func (b *builder) intervalOf(t int64) int64 {
	if t == 0 || b.opt.Interval <= 0 {
		return b.cur
	}
	return int64(nsSince(t, b.origin) / b.opt.Interval)
}

// accOf returns the accumulator of interval n, opening it (and closing
// the oldest open one when too many are), or nil when n was closed.
func (b *builder) accOf(n int64) *acc {
	if a, ok := b.open[n]; ok {
		return a
	}
	if _, ok := b.closed[n]; ok {
		return nil
	}
	if len(b.open) >= maxOpen {
		oldest := n
		for k := range b.open {
			oldest = min(oldest, k)
		}
		if oldest == n {
			return nil // older than all open: counted as closed
		}
		b.close(oldest)
	}
	var a *acc
	if len(b.free) > 0 {
		a, b.free = b.free[len(b.free)-1], b.free[:len(b.free)-1]
	} else {
		a = new(acc)
	}
	b.open[n] = a
	return a
}

// close renders open interval n and frees its accumulator.
func (b *builder) close(n int64) {
	a := b.open[n]
	delete(b.open, n)
	start := time.Duration(n) * b.opt.Interval
	end := min(start+b.opt.Interval, max(b.maxSent, start))
	b.closed[n] = len(b.ivs)
	b.ivs = append(b.ivs, a.interval(start, end, b.pct))
	b.thinClosed()
	a.counts = result.Counts{}
	for _, d := range a.d {
		if d != nil {
			d.Reset()
		}
	}
	b.free = append(b.free, a)
}

// flow returns the state of flow n.
func (b *builder) flow(n int) *flowState {
	f := b.flows[n]
	if f == nil {
		f = &flowState{}
		b.flows[n] = f
	}
	return f
}

// result renders the whole log.
func (b *builder) result() *result.Result {
	if b.opt.Interval > 0 {
		for len(b.open) > 0 {
			oldest := int64(-1)
			for k := range b.open {
				if oldest < 0 || k < oldest {
					oldest = k
				}
			}
			b.close(oldest)
		}
	}
	slices.SortFunc(b.ivs, func(x, y result.Interval) int { return cmp.Compare(x.Start, y.Start) })
	sum := b.total.interval(0, b.maxSent, b.pct)
	res := &result.Result{SchemaVersion: result.SchemaVersion, Tool: "volley", Intervals: b.ivs, Summary: sum}
	if b.origin > 1 {
		res.Start = time.Unix(0, b.origin).UTC()
	}
	res.Config = result.Config{Target: b.label, Duration: b.maxSent, Percentiles: b.pct, Parallel: len(b.flows), Timestamps: "user"}
	if b.opt.Interval > 0 {
		res.Config.ReportInterval = b.opt.Interval
	}
	if b.kernel {
		res.Config.Timestamps = "kernel"
		res.Timestamps = &result.Timestamps{Client: "kernel"}
		if b.refl {
			res.Timestamps.Reflector = "kernel"
		}
	}
	rtt, up, down := b.total.d[dRTT], b.total.d[dUp], b.total.d[dDown]
	for _, d := range []**stats.Dist{&rtt, &up, &down} {
		if *d == nil {
			*d = stats.NewDist()
		}
	}
	res.Distribution = stats.Distribution(rtt, up, down) // as the client's
	return res
}

// add counts line l, and records its delays, in its interval and the
// total.
func (b *builder) add(l *logLine) error {
	if len(b.flows) >= maxFlows && b.flows[l.flow] == nil {
		return &Error{Name: b.name, Line: l.line, Field: "flow", Err: errTooManyFlows}
	}
	f := b.flow(l.flow)
	t1 := l.v[colT1]
	if t1 != 0 && (l.status == statusReceived || l.status == statusLost) {
		b.maxSent = max(b.maxSent, nsSince(t1, b.origin))
		b.cur = max(b.cur, b.intervalOf(l.placed()))
	}
	var a *acc
	n := b.intervalOf(l.placed())
	if b.opt.Interval > 0 {
		if a = b.accOf(n); a == nil {
			b.patched++
		}
	}
	each := func(fn func(a *acc)) {
		fn(&b.total)
		if a != nil {
			fn(a)
		}
	}
	switch l.status {
	case statusReceived:
		b.received(l, f, each)
	case statusLost:
		each(func(a *acc) {
			a.counts.Sent++
			a.counts.Lost++
			if l.v[colSched] != 0 {
				a.record(dSendError, t1-l.v[colSched])
			}
		})
		b.keep(result.Probe{Flow: l.flow, Sent: nsSince(t1, b.origin), Lost: true})
	case statusLate:
		each(func(a *acc) { a.counts.Late++ })
	case statusDuplicate:
		// A peer with no times of its own (echo://) leaves T3 out: the
		// way of its duplicates is not known, and neither is counted.
		known := l.v[colT3] != 0
		up := known && f.duplicate(l.seq, l.v[colT3])
		each(func(a *acc) {
			a.counts.Duplicates++
			switch {
			case up:
				a.counts.DuplicatesUp++
			case known:
				a.counts.DuplicatesDown++
			}
		})
	}
	if a == nil && b.opt.Interval > 0 {
		b.patch(n, l)
	}
	return nil
}

// patch counts line l in interval n, rendered already (or never opened:
// then it is opened empty and closed at once).
func (b *builder) patch(n int64, l *logLine) {
	i, ok := b.closed[n]
	if !ok {
		b.closed[n] = len(b.ivs)
		start := time.Duration(n) * b.opt.Interval
		b.ivs = append(b.ivs, new(acc).interval(start, start+b.opt.Interval, b.pct))
		b.thinClosed()
		i = b.closed[n]
	}
	c := &b.ivs[i].Counts
	switch l.status {
	case statusReceived:
		c.Sent++
		c.Received++
	case statusLost:
		c.Sent++
		c.Lost++
	case statusLate:
		c.Late++
	case statusDuplicate:
		c.Duplicates++
		c.DuplicatesUp++ // its first reply's T3 is not at hand here
	}
	if c.Sent > 0 {
		c.LossPercent = 100 * float64(c.Lost) / float64(c.Sent)
	}
}

// received counts and records the received line l of flow f.
func (b *builder) received(l *logLine, f *flowState, each func(func(*acc))) {
	v := &l.v
	t1, t3, t4 := v[colT1], v[colT3], v[colT4]
	// A foreign peer's line (echo://, connect://) has the round trip
	// alone: no response, up or down.
	delays := l.ok(colRTT)
	oneWay := delays && l.ok(colResponse) && l.ok(colUp) && l.ok(colDown)
	reordered := l.seq < f.highest
	f.highest = max(f.highest, l.seq)
	reorderedDown := t3 < f.maxT3
	f.maxT3 = max(f.maxT3, t3)
	ipdv := delays && f.prevSeq != 0 && l.seq == f.prevSeq+1
	if l.ok(colT1K) || l.ok(colT4K) {
		b.kernel = true
	}
	if l.ok(colT2K) {
		b.refl = true
	}
	each(func(a *acc) {
		a.counts.Sent++
		a.counts.Received++
		if reordered {
			a.counts.Reordered++
		}
		if reorderedDown {
			a.counts.ReorderedDown++
		}
		if delays {
			a.record(dRTT, v[colRTT])
		}
		if oneWay {
			a.record(dResponse, v[colResponse])
			a.record(dUp, v[colUp])
			a.record(dDown, v[colDown])
		}
		if ipdv {
			a.record(dIPDVRTT, abs(v[colRTT]-f.prevRTT))
		}
		if ipdv && oneWay {
			a.record(dIPDVUp, abs(v[colUp]-f.prevUp))
			a.record(dIPDVDown, abs(v[colDown]-f.prevDn))
		}
		if v[colSched] != 0 {
			a.record(dSendError, t1-v[colSched])
			if t4 != 0 {
				a.record(dRTTSched, t4-v[colSched])
			}
		}
		b.recordKernel(a, l)
	})
	if delays {
		f.prevSeq, f.prevRTT, f.prevUp, f.prevDn = l.seq, v[colRTT], v[colUp], v[colDown]
		b.keep(result.Probe{Flow: l.flow, Sent: nsSince(t1, b.origin), RTT: time.Duration(v[colRTT]),
			Up: time.Duration(v[colUp]), Down: time.Duration(v[colDown])})
	}
	f.remember(l.seq, t3)
}

// recordKernel records the kernel figures of received line l into a.
func (b *builder) recordKernel(a *acc, l *logLine) {
	v := &l.v
	for _, k := range [...]struct{ col, d int }{{colRTTK, dRTTK}, {colResponseK, dResponseK}, {colUpK, dUpK}, {colDownK, dDownK}} {
		if l.ok(k.col) {
			a.record(k.d, v[k.col])
		}
	}
	if l.ok(colT1K) {
		a.record(dSendStack, v[colT1K]-v[colT1])
	}
	if l.ok(colT4K) && v[colT4] != 0 {
		a.record(dRecvStack, v[colT4]-v[colT4K])
	}
}

// keep keeps p for a plot, or none once there are too many.
func (b *builder) keep(p result.Probe) {
	if b.over {
		return
	}
	if len(b.probes) >= b.opt.MaxProbes {
		b.over, b.probes = true, nil
		return
	}
	b.probes = append(b.probes, p)
}

// remember keeps the T3 of the first reply to seq, for its duplicates.
func (f *flowState) remember(seq uint64, t3 int64) {
	if f.t3 == nil {
		f.t3 = make([]struct {
			seq uint64
			t3  [2]int64
		}, dupRing)
	}
	e := &f.t3[seq%dupRing]
	e.seq, e.t3 = seq, [2]int64{t3, 0}
}

// duplicate reports whether a duplicate reply to seq with reflector send
// time t3 was a copy made on the way up (answered again by the reflector,
// with a T3 of its own) rather than a copy of a reply; as the client
// tells them. A reply too old to be remembered counts as up.
func (f *flowState) duplicate(seq uint64, t3 int64) (up bool) {
	if f.t3 == nil {
		return true
	}
	e := &f.t3[seq%dupRing]
	if e.seq != seq {
		return true
	}
	if t3 == e.t3[0] || t3 == e.t3[1] {
		return false
	}
	e.t3[1] = t3
	return true
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
