package chart

import (
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
		pn.note("no replies")
	}
	setSpan(pn.plot, runs)
	pn.plot.Y.Min = 0
	return figure{id: "fig-latency", panels: []*panel{pn}}
}

// kinds are the delays a run has: no RTT nor down in a one-way run.
func kinds(res *result.Result) []string {
	if res.Config.OneWay {
		return []string{kindUp}
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

// intervalSeries draws run i's intervals: a band from the smallest to
// the highest percentile of its main delay (RTT, or up for a one-way
// run), and each kind's median (or mean) as steps; it says whether it
// drew any.
func intervalSeries(pn *panel, runs []Run, i int, u unit) bool {
	r := runs[i]
	ps := r.Result.Config.Percentiles
	drawn := false
	for j, k := range kinds(r.Result) {
		lk := lookOf(i, len(runs), k)
		if j == 0 {
			hi, hiName := upper(ps)
			band(pn, seriesName(runs, i, k+" min–"+hiName), r.Result, k, lk, u, hi)
		}
		_, name := middle(ps)
		drawn = steps(pn, seriesName(runs, i, k+" "+name), r.Result, k, lk, u) || drawn
	}
	return drawn
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

// steps draws each interval's median (or mean) of kind as a step over the
// interval; it says whether there was any.
func steps(pn *panel, name string, res *result.Result, kind string, lk look, u unit) bool {
	p, _ := middle(res.Config.Percentiles)
	segs := segments(res, kind)
	for _, seg := range segs {
		var xys plotter.XYs
		for _, iv := range seg {
			v := u.of(middleValue(latencyOf(res, iv, kind), p))
			xys = append(xys, plotter.XY{X: seconds(iv.Start), Y: v}, plotter.XY{X: seconds(iv.End), Y: v})
		}
		l := &plotter.Line{XYs: finite(xys)}
		l.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(1), Dashes: lk.dashes}
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
