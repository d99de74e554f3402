package client

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
)

// The reflector's clock offset (see result.ClockOffset). When the
// reflector's Cookie carried its clock's identity and it is the client's,
// both ends read one clock: the offset is 0, and the up and down delays
// are measured. Otherwise it is estimated from the smallest raw delays:
// with θ the offset, up = T2−T1 = u+θ and down = T4−T3 = d−θ for the true
// delays u, d ≥ 0, so −min(down) ≤ θ ≤ min(up) always, and θ is the middle
// of that interval when the smallest delays are equal each way (the
// assumption, which path asymmetry breaks by half its size).
//
// Clocks drift, so the run is cut into windows, each keeping its smallest
// up and down delays (in constant memory: past maxOffsetWindows, windows
// merge in pairs). A robust line through each window's offset (Theil–Sen:
// the median of the slopes between all pairs) gives the drift and its
// confidence interval, once there are enough windows over a long enough
// span; the offset is then taken at the middle of the run with the drift
// taken out.

const (
	// firstOffsetWindow is the windows' width until they merge.
	firstOffsetWindow = int64(500 * time.Millisecond)
	maxOffsetWindows  = 128
	// The least a drift is reported from.
	minDriftWindows = 10
	minDriftSpan    = int64(5 * time.Second)
	// driftZ is the normal quantile of the drift's confidence interval
	// (95%).
	driftZ = 1.96
	// estimateAssumes is what an estimate assumes, as reported.
	estimateAssumes = "the smallest up and down delays of the run were equal (symmetric minimum delays)"
)

// offsetWindow is one window of the run: when it starts, how long it is,
// and the smallest raw up and down delays of the replies that came in it.
type offsetWindow struct {
	start, width int64
	up, down     int64
}

func (w offsetWindow) mid() int64 { return w.start + w.width/2 }

// offsetEst gathers the windows of a run. The zero value is ready.
type offsetEst struct {
	first int64 // the window grid's origin: when the first reply came
	width int64 // current window width (0: no reply yet)
	cur   offsetWindow
	wins  []offsetWindow // the windows before cur, oldest first
}

// add takes a reply received at t4 (the client's clock) with raw up and
// down delays. It allocates only once a run, for the first window.
func (o *offsetEst) add(t4, up, down int64) {
	switch {
	case o.width == 0:
		o.first, o.width = t4, firstOffsetWindow
		o.cur = offsetWindow{start: t4, width: o.width, up: up, down: down}
	case t4 >= o.cur.start+o.cur.width:
		o.push()
		start := o.first + (t4-o.first)/o.width*o.width
		o.cur = offsetWindow{start: max(start, o.cur.start+o.cur.width), width: o.width, up: up, down: down}
		o.cur.width = start + o.width - o.cur.start
	default:
		o.cur.up, o.cur.down = min(o.cur.up, up), min(o.cur.down, down)
	}
}

// push closes the current window, merging windows when full.
func (o *offsetEst) push() {
	if o.wins == nil {
		o.wins = make([]offsetWindow, 0, maxOffsetWindows)
	}
	o.wins = append(o.wins, o.cur)
	for len(o.wins) >= maxOffsetWindows {
		o.coarsen()
	}
}

// coarsen doubles the window width and merges the windows that fall in
// one wider window.
func (o *offsetEst) coarsen() {
	o.width *= 2
	out := o.wins[:0]
	for _, w := range o.wins {
		if n := len(out); n > 0 && (w.start-o.first)/o.width == (out[n-1].start-o.first)/o.width {
			l := &out[n-1]
			l.up, l.down = min(l.up, w.up), min(l.down, w.down)
			l.width = w.start + w.width - l.start
			continue
		}
		out = append(out, w)
	}
	o.wins = out
}

// windows returns all the windows, the current one last.
func (o *offsetEst) windows() []offsetWindow {
	if o.width == 0 {
		return nil
	}
	return append(slices.Clip(o.wins), o.cur)
}

// drift fits the offset's rate of change over ws: the slope (ns per ns)
// and its confidence interval's half width; ok is false when ws are too
// few or span too little time to tell.
func drift(ws []offsetWindow) (slope, errSlope float64, ok bool) {
	n := len(ws)
	if n < minDriftWindows || ws[n-1].mid()-ws[0].mid() < minDriftSpan {
		return 0, 0, false
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range ws {
		for j := i + 1; j < n; j++ {
			dx := float64(ws[j].mid() - ws[i].mid())
			if dx <= 0 {
				continue
			}
			dy := float64((ws[j].up-ws[j].down)-(ws[i].up-ws[i].down)) / 2
			slopes = append(slopes, dy/dx)
		}
	}
	if len(slopes) == 0 {
		return 0, 0, false
	}
	slices.Sort(slopes)
	m := len(slopes)
	if m%2 == 1 {
		slope = slopes[m/2]
	} else {
		slope = (slopes[m/2-1] + slopes[m/2]) / 2
	}
	// Sen's interval: the ranks (m ∓ C)/2 among the sorted slopes, C from
	// the variance of Kendall's S.
	nf := float64(n)
	c := driftZ * math.Sqrt(nf*(nf-1)*(2*nf+5)/18)
	lo := max(int(math.Floor((float64(m)-c)/2))-1, 0)
	hi := min(int(math.Ceil((float64(m)+c)/2)), m-1)
	return slope, max(slope-slopes[lo], slopes[hi]-slope), true
}

// clockOffset reports the offset of a run whose replies went to o, with
// up and down its summary's raw one-way delays; sameClock says the
// reflector reads the client's clock. nil for an estimate without replies
// (a one-way run's).
func clockOffset(o *offsetEst, sameClock bool, up, down result.Latency) *result.ClockOffset {
	ws := o.windows()
	var span int64
	if len(ws) > 0 {
		span = ws[len(ws)-1].mid() - ws[0].mid()
	}
	if sameClock {
		return &result.ClockOffset{Method: "same-clock", Bound: clock.IdentityPrecision,
			Drift: &result.Drift{Span: time.Duration(span), Windows: len(ws)}}
	}
	if len(ws) == 0 {
		return nil
	}
	c := &result.ClockOffset{Method: "estimate", Assumes: estimateAssumes}
	slope, errSlope, ok := drift(ws)
	if ok {
		c.Drift = &result.Drift{PPM: slope * 1e6, ErrorPPM: errSlope * 1e6, Span: time.Duration(span), Windows: len(ws)}
	}
	// The smallest delays each way, the drift taken out, at the middle
	// of the run.
	ref := (ws[0].mid() + ws[len(ws)-1].mid()) / 2
	minUp, minDown := math.Inf(1), math.Inf(1)
	for _, w := range ws {
		moved := slope * float64(w.mid()-ref)
		minUp = min(minUp, float64(w.up)-moved)
		minDown = min(minDown, float64(w.down)+moved)
	}
	theta := math.Round((minUp - minDown) / 2)
	c.Offset = time.Duration(theta)
	if minUp+minDown < 0 {
		c.Warnings = append(c.Warnings, "no delay can be negative, yet the smallest up and down delays add up to less than zero: a clock stepped during the run, the offset has no bound, and no one-way delay is estimated")
		return c
	}
	// The drift's own error moves the ends of the run by up to half the
	// span's worth; and the drift within a window may have lowered its
	// smallest delays each way by up to half the window's worth.
	widest := int64(0)
	for _, w := range ws {
		widest = max(widest, w.width)
	}
	within := (math.Abs(slope) + errSlope) * float64(widest) / 2
	c.Bound = time.Duration(math.Ceil((minUp+minDown)/2 + errSlope*float64(span)/2 + within))
	eu, ed := shift(up, -int64(theta)), shift(down, int64(theta))
	c.EstimatedUp, c.EstimatedDown = &eu, &ed
	if moved := math.Abs(slope) * float64(span); ok && moved > float64(c.Bound) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the offset moved %s over the run (drift %+.1f ppm), more than its bound: the offset is the one at the middle of the run, and the estimated delays are off by up to %s at its ends",
			us(moved), c.Drift.PPM, us(moved/2)))
	}
	return c
}

// shift returns l with every value moved by d; the spread stays.
func shift(l result.Latency, d int64) result.Latency {
	if l.Count == 0 {
		return l
	}
	s := l
	s.Min += time.Duration(d)
	s.Mean += time.Duration(d)
	s.Max += time.Duration(d)
	s.Percentiles = make([]result.Percentile, len(l.Percentiles))
	for i, p := range l.Percentiles {
		s.Percentiles[i] = result.Percentile{P: p.P, Value: p.Value + time.Duration(d)}
	}
	return s
}

// us rounds ns to the microsecond, for a warning.
func us(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }
