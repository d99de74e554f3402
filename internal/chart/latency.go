package chart

import (
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// maxGlyphs is the most points a series draws as glyphs: beyond it, a
// line, which keeps an SVG of many probes small (a glyph is an element of
// its own, a line's point a few bytes of one path).
const maxGlyphs = 2000

// latencyFigure draws each run's delays over the run's time: each probe
// when the run kept them, else each interval's percentiles, and the
// losses of each direction as marks along the time axis.
func latencyFigure(runs []Run) figure {
	u := durationUnit(latencyMax(runs))
	pn := newPanel("Latency over time", "time since the end of warm-up (s)", "delay ("+u.name+")")
	drawn := false
	for i, r := range runs {
		if r.Probes != nil {
			drawn = probeSeries(pn, runs, i, u) || drawn
		} else {
			drawn = intervalSeries(pn, runs, i, u) || drawn
		}
	}
	for i := range runs {
		lossMarks(pn, runs, i)
	}
	if !drawn {
		pn.note(noDelays(runs))
	}
	setSpan(pn.plot, runs)
	pn.plot.Y.Min = 0
	if drawn && farTail(runs, latencyMax(runs)) {
		logDelays(pn, u)
	}
	atLeastOne(pn)
	return figure{id: "fig-latency", panels: []*panel{pn}}
}

// noDelays says why no run has delays to draw over time: it had no
// replies, or it was one-way without its probes (a one-way run's delays
// come in one piece at its end, not per interval).
func noDelays(runs []Run) string {
	for _, r := range runs {
		if !r.Result.Config.OneWay || r.Probes != nil {
			return "no replies"
		}
	}
	return "a one-way run has no delays per interval"
}

// tailRatio is how many times the runs' typical delay their largest one
// must be for a delay axis to be a log one.
const tailRatio = 20

// farTail says whether top, the largest delay a panel draws, is so far
// above the runs' typical delay that the panel wants a log delay axis:
// on a linear one, the typical delays would lie flat along its bottom.
func farTail(runs []Run, top time.Duration) bool {
	return top > tailRatio*typical(runs)
}

// typical is the smallest of the runs' typical delays: the median (or
// mean) of their main delay over the whole run.
func typical(runs []Run) time.Duration {
	var t time.Duration
	for _, r := range runs {
		k := kinds(r.Result)[0]
		l := latencyOf(r.Result, r.Result.Summary, k)
		if l.Count == 0 {
			continue
		}
		p, _ := middle(r.Result.Config.Percentiles)
		if v := middleValue(l, p); v > 0 && (t == 0 || v < t) {
			t = v
		}
	}
	return t
}

// logDelays puts the delay axis on a log scale, for runs whose tail is
// far above their typical delay (on a linear one, the typical delays
// would lie flat along the bottom). What is not above zero (the loss
// marks, a one-way delay that a clock offset made negative) is drawn at
// the axis's bottom. The points become their logarithms on a linear axis
// whose ticks are labelled with the delays: gonum's log scale centres the
// axis label by the data's linear midpoint, which pushes the plot down.
func logDelays(pn *panel, u unit) {
	lo := math.Inf(1)
	each(pn, func(xy *plotter.XY) {
		if xy.Y > 0 {
			lo = min(lo, xy.Y)
		}
	})
	if math.IsInf(lo, 1) {
		return
	}
	floor := math.Log10(lo / 1.5)
	each(pn, func(xy *plotter.XY) {
		if xy.Y > 0 {
			xy.Y = max(math.Log10(xy.Y), floor)
		} else {
			xy.Y = floor
		}
	})
	pn.plot.Y.Min, pn.plot.Y.Max, pn.plot.Y.Tick.Marker = floor, math.Inf(-1), log10Ticks{}
	for _, it := range pn.items {
		if dr, ok := it.(plot.DataRanger); ok {
			_, _, _, ymax := dr.DataRange()
			pn.plot.Y.Max = max(pn.plot.Y.Max, ymax)
		}
	}
	pn.plot.Y.Label.Text = "delay (" + u.name + ", log scale)"
}

// log10Ticks marks an axis of logarithms as logTicks marks a log axis,
// labelled with the values themselves; over more than three decades,
// only the powers of ten are labelled, so that the labels of a delay
// axis (upright, with little room) do not crowd each other.
type log10Ticks struct{}

// Ticks returns the marks between min and max.
func (log10Ticks) Ticks(min, max float64) []plot.Tick {
	ts := logTicks{}.Ticks(math.Pow(10, min), math.Pow(10, max))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
		if max-min > 3 && math.Abs(ts[i].Value-math.Round(ts[i].Value)) > 1e-9 {
			ts[i].Label = ""
		}
	}
	return ts
}

// each calls f on every point the panel draws.
func each(pn *panel, f func(*plotter.XY)) {
	for _, it := range pn.items {
		var sets []plotter.XYs
		switch it := it.(type) {
		case *plotter.Scatter:
			sets = []plotter.XYs{it.XYs}
		case *plotter.Line:
			sets = []plotter.XYs{it.XYs}
		case *plotter.Polygon:
			sets = it.XYs
		}
		for _, xys := range sets {
			for i := range xys {
				f(&xys[i])
			}
		}
	}
}

// atLeastOne gives an axis of nothing but zeros a range from 0 to 1,
// rather than gonum's -1 to 1.
func atLeastOne(pn *panel) {
	if y := &pn.plot.Y; y.Min == 0 && y.Max <= 0 {
		y.Max = 1
	}
}

// kinds are the delays a run has: no RTT nor down in a one-way run, RTT
// alone against a peer whose answers carry no times (echo://, connect://).
func kinds(res *result.Result) []string {
	switch {
	case res.Config.OneWay:
		return []string{kindUp}
	case res.Config.Peer != nil && !res.Config.Peer.OneWay:
		return []string{kindRTT}
	}
	return []string{kindRTT, kindUp, kindDown}
}

// latencyMax is the largest delay the runs will draw.
func latencyMax(runs []Run) time.Duration {
	var m time.Duration
	for _, r := range runs {
		for _, k := range kinds(r.Result) {
			m = max(m, latencyOf(r.Result, r.Result.Summary, k).Max)
		}
		fix := offsetFix(r.Result)
		for _, p := range r.Probes {
			m = max(m, p.RTT, p.Up-fix, p.Down+fix)
		}
	}
	return m
}

// latencyOf returns interval iv's delays of kind, the one-way ones
// corrected by the run's estimated clock offset.
func latencyOf(res *result.Result, iv result.Interval, kind string) result.Latency {
	switch kind {
	case kindUp:
		return shift(iv.Up, -offsetFix(res))
	case kindDown:
		return shift(iv.Down, offsetFix(res))
	}
	return iv.RTT
}

// shift returns l with d added to every value.
func shift(l result.Latency, d time.Duration) result.Latency {
	if d == 0 || l.Count == 0 {
		return l
	}
	l.Min, l.Mean, l.Max = l.Min+d, l.Mean+d, l.Max+d
	ps := make([]result.Percentile, len(l.Percentiles))
	for i, p := range l.Percentiles {
		ps[i] = result.Percentile{P: p.P, Value: p.Value + d}
	}
	l.Percentiles = ps
	return l
}

// probeDelay returns probe p's delay of kind, corrected by fix.
func probeDelay(p result.Probe, kind string, fix time.Duration) time.Duration {
	switch kind {
	case kindUp:
		return p.Up - fix
	case kindDown:
		return p.Down + fix
	}
	return p.RTT
}

// probeSeries draws run i's probes, a series for each kind of delay they
// carry; it says whether it drew any.
func probeSeries(pn *panel, runs []Run, i int, u unit) bool {
	r := runs[i]
	fix := offsetFix(r.Result)
	drawn := false
	for _, k := range kinds(r.Result) {
		xys := make(plotter.XYs, 0, len(r.Probes))
		any := false
		for _, p := range r.Probes {
			if p.Lost {
				continue
			}
			d := probeDelay(p, k, fix)
			any = any || d != 0
			xys = append(xys, plotter.XY{X: seconds(p.Sent), Y: u.of(d)})
		}
		if !any {
			continue
		}
		pn.add(seriesName(runs, i, k), points(finite(xys), lookOf(i, len(runs), k)))
		drawn = true
	}
	return drawn
}

// points draws xys as small glyphs, or as a thin line when there are too
// many for glyphs.
func points(xys plotter.XYs, lk look) plot.Plotter {
	if len(xys) > maxGlyphs {
		l := &plotter.Line{XYs: xys}
		l.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(0.6), Dashes: lk.dashes}
		return l
	}
	s := &plotter.Scatter{XYs: xys}
	s.GlyphStyle = draw.GlyphStyle{Color: lk.color, Radius: vg.Points(1.2), Shape: lk.shape}
	return s
}

// intervalSeries draws run i's intervals: a band from the minimum to the
// p99 (or the highest percentile below it) of its main delay (RTT, or up
// for a one-way run), the highest percentile above the band as a thin
// dash-dot line, and each kind's median (or mean) as steps; it says whether
// it drew any.
func intervalSeries(pn *panel, runs []Run, i int, u unit) bool {
	r := runs[i]
	ps := r.Result.Config.Percentiles
	drawn := false
	for j, k := range kinds(r.Result) {
		lk := lookOf(i, len(runs), k)
		if j == 0 {
			top, topName := bandTop(ps)
			band(pn, seriesName(runs, i, k+" min–"+topName), r.Result, k, lk, u, top)
			if hi, hiName := upper(ps); hi > top {
				dashed := draw.LineStyle{Color: lk.color, Width: vg.Points(0.6), Dashes: tailDashes}
				stepLine(pn, seriesName(runs, i, k+" "+hiName), r.Result, k, dashed, u, func(l result.Latency) time.Duration {
					return upperValue(l, hi)
				})
			}
		}
		p, name := middle(ps)
		solid := draw.LineStyle{Color: lk.color, Width: vg.Points(1), Dashes: lk.dashes}
		drawn = stepLine(pn, seriesName(runs, i, k+" "+name), r.Result, k, solid, u, func(l result.Latency) time.Duration {
			return middleValue(l, p)
		}) || drawn
	}
	return drawn
}

// tailDashes draw the line of the highest percentile over the band of
// intervals: dash-dot, unlike the dashes that tell a run's up and down
// delays apart when several runs are drawn.
var tailDashes = []vg.Length{vg.Points(4), vg.Points(1.5), vg.Points(1), vg.Points(1.5)}

// bandTop returns the percentile the band of intervals reaches, and its
// name: p99 when the run has it (ps are its percentiles), else the
// highest below 100 and above the median; -1 and "max" when there is
// none. Above p99, a percentile of an interval is a handful of probes,
// close to its maximum: a band to it would cover everything.
func bandTop(ps []float64) (float64, string) {
	if slices.Contains(ps, 99) {
		return 99, report.Percent(99)
	}
	return upper(ps)
}

// middle returns the percentile a line of intervals follows: p50 when
// the run has it (ps are its percentiles), else -1, the mean.
func middle(ps []float64) (float64, string) {
	for _, p := range ps {
		if p == 50 {
			return 50, "p50"
		}
	}
	return -1, "mean"
}

// middleValue is l's value at the percentile middle chose (-1: the mean).
func middleValue(l result.Latency, p float64) time.Duration {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Value
		}
	}
	return l.Mean
}

// upper returns the highest of the run's percentiles ps below 100 and
// above the median, and its name; -1 and "max" when there is none.
func upper(ps []float64) (float64, string) {
	hi := -1.0
	for _, p := range ps {
		if p > 50 && p < 100 && p > hi {
			hi = p
		}
	}
	if hi < 0 {
		return -1, "max"
	}
	return hi, report.Percent(hi)
}

// upperValue is l's value at percentile p (-1: its max).
func upperValue(l result.Latency, p float64) time.Duration {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Value
		}
	}
	return l.Max
}

// segments returns the runs of consecutive intervals that measured kind.
func segments(res *result.Result, kind string) [][]result.Interval {
	var out [][]result.Interval
	var cur []result.Interval
	for _, iv := range res.Intervals {
		if latencyOf(res, iv, kind).Count == 0 {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, iv)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// band fills, over each interval, the range from its minimum to its
// percentile hi (-1: its maximum) of kind.
func band(pn *panel, name string, res *result.Result, kind string, lk look, u unit, hi float64) {
	for _, seg := range segments(res, kind) {
		var top, bottom plotter.XYs
		for _, iv := range seg {
			l := latencyOf(res, iv, kind)
			t, b := u.of(upperValue(l, hi)), u.of(l.Min)
			top = append(top, plotter.XY{X: seconds(iv.Start), Y: t}, plotter.XY{X: seconds(iv.End), Y: t})
			bottom = append(bottom, plotter.XY{X: seconds(iv.Start), Y: b}, plotter.XY{X: seconds(iv.End), Y: b})
		}
		ring := finite(top)
		for j := len(bottom) - 1; j >= 0; j-- {
			ring = append(ring, bottom[j])
		}
		pg := &plotter.Polygon{XYs: []plotter.XYs{finite(ring)}, Color: translucent(lk.color, 0.25)}
		pn.add(name, pg)
		name = ""
	}
}

// stepLine draws value of each interval's delays of kind as a step over
// the interval, in style; it says whether there was any.
func stepLine(pn *panel, name string, res *result.Result, kind string, style draw.LineStyle, u unit, value func(result.Latency) time.Duration) bool {
	segs := segments(res, kind)
	for _, seg := range segs {
		var xys plotter.XYs
		for _, iv := range seg {
			v := u.of(value(latencyOf(res, iv, kind)))
			xys = append(xys, plotter.XY{X: seconds(iv.Start), Y: v}, plotter.XY{X: seconds(iv.End), Y: v})
		}
		l := &plotter.Line{XYs: finite(xys), LineStyle: style}
		pn.add(name, l)
		name = ""
	}
	return len(segs) > 0
}

// lossMarks marks run i's losses along the bottom of the time axis: each
// interval that lost probes on the way up (a triangle up) or down (a
// triangle down), and each lost probe (a cross) when the run kept them.
func lossMarks(pn *panel, runs []Run, i int) {
	r := runs[i]
	var up, down, probes plotter.XYs
	for _, iv := range r.Result.Intervals {
		mid := seconds(iv.Start+iv.End) / 2
		if iv.Counts.LostUp > 0 {
			up = append(up, plotter.XY{X: mid})
		}
		if iv.Counts.LostDown > 0 {
			down = append(down, plotter.XY{X: mid})
		}
	}
	for _, p := range r.Probes {
		if p.Lost {
			probes = append(probes, plotter.XY{X: seconds(p.Sent)})
		}
	}
	c := palette[3]
	if len(runs) > 1 {
		c = palette[i%len(palette)]
	}
	marks := []struct {
		name  string
		xys   plotter.XYs
		shape draw.GlyphDrawer
	}{{"lost up", up, draw.TriangleGlyph{}}, {"lost down", down, downTriangle{}}, {"lost probes", probes, draw.CrossGlyph{}}}
	for _, m := range marks {
		if len(m.xys) == 0 {
			continue
		}
		s := &plotter.Scatter{XYs: finite(m.xys)}
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: m.shape}
		pn.add(seriesName(runs, i, m.name), s)
	}
}

// span is the time the runs cover, in seconds: to the end of the last
// interval or the last probe sent.
func span(runs []Run) float64 {
	var end time.Duration
	for _, r := range runs {
		if n := len(r.Result.Intervals); n > 0 {
			end = max(end, r.Result.Intervals[n-1].End)
		}
		if n := len(r.Probes); n > 0 {
			end = max(end, r.Probes[n-1].Sent)
		}
	}
	return seconds(end)
}

// setSpan puts the time axis of p over the runs' time, so that the
// panels over time line up.
func setSpan(p *plot.Plot, runs []Run) {
	if s := span(runs); s > 0 {
		p.X.Min, p.X.Max = 0, s
	}
}
