package chart

import (
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/volley-net/volley/internal/result"
)

// The percentile axis: from p0 to p99.999, then one more decade where
// the maximum is marked (p100 has no place on a scale of 1/(1-p)).
const (
	pctLast = 99.999  // the last percentile a curve reaches
	pctMax  = 99.9999 // where the maximum is marked
)

// pctScale places percentile p at log10(1/(1-p/100)), as HdrHistogram's
// percentile plots do: each further nine of the tail gets the same room.
type pctScale struct{}

// Normalize returns the place of x between min and max, 0 to 1.
func (pctScale) Normalize(min, max, x float64) float64 {
	lo, hi := tail(min), tail(max)
	if hi <= lo {
		return 0
	}
	return (tail(x) - lo) / (hi - lo)
}

// tail is log10(1/(1-p/100)), p kept inside the axis.
func tail(p float64) float64 {
	p = min(max(p, 0), pctMax)
	return -math.Log10(1 - p/100)
}

// pctTicks marks the percentile axis at 0%, 90%, 99%, ... and the
// maximum.
type pctTicks struct{}

// Ticks returns the marks between min and max.
func (pctTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for _, t := range []struct {
		p     float64
		label string
	}{{0, "0%"}, {90, "90%"}, {99, "99%"}, {99.9, "99.9%"}, {99.99, "99.99%"}, {99.999, "99.999%"}, {pctMax, "max"}} {
		if t.p >= min && t.p <= max {
			ts = append(ts, plot.Tick{Value: t.p, Label: t.label})
		}
	}
	return ts
}

// curve is one distribution of a run: its percentiles to pctLast and its
// maximum.
type curve struct {
	kind   string
	points []result.Percentile
	max    time.Duration
	hasMax bool
}

// curves returns run r's distributions, from its Distribution or, in a
// saved result without one, from its summary's percentiles; one-way
// delays corrected by the run's clock offset estimate.
func curves(res *result.Result) []curve {
	var out []curve
	for _, k := range kinds(res) {
		var c curve
		if d := res.Distribution; d != nil {
			ps := map[string][]result.Percentile{kindRTT: d.RTT, kindUp: d.Up, kindDown: d.Down}[k]
			c = fromPercentiles(k, ps)
		} else {
			l := res.Summary.RTT
			switch k {
			case kindUp:
				l = res.Summary.Up
			case kindDown:
				l = res.Summary.Down
			}
			if l.Count == 0 {
				continue
			}
			c = fromPercentiles(k, append([]result.Percentile{{P: 0, Value: l.Min}}, l.Percentiles...))
			c.max, c.hasMax = l.Max, true
		}
		if len(c.points) == 0 {
			continue
		}
		fix := map[string]time.Duration{kindUp: -offsetFix(res), kindDown: offsetFix(res)}[k]
		for i := range c.points {
			c.points[i].Value += fix
		}
		c.max += fix
		out = append(out, c)
	}
	return out
}

// fromPercentiles splits ps into the points of a curve (to pctLast) and
// its maximum (p100).
func fromPercentiles(kind string, ps []result.Percentile) curve {
	c := curve{kind: kind}
	for _, p := range ps {
		switch {
		case p.P >= 100:
			c.max, c.hasMax = p.Value, true
		case p.P <= pctLast:
			c.points = append(c.points, p)
		}
	}
	return c
}

// percentileFigure draws each run's delays against their percentiles,
// the tail spread out on a log scale; the delays too are on a log scale
// when the largest is far above the typical one, as in the latency over
// time (on a linear scale, a tail of milliseconds would flatten a body
// of microseconds along the bottom).
func percentileFigure(runs []Run) figure {
	all := make([][]curve, len(runs))
	var top time.Duration
	for i, r := range runs {
		all[i] = curves(r.Result)
		for _, c := range all[i] {
			top = max(top, c.max)
			for _, p := range c.points {
				top = max(top, p.Value)
			}
		}
	}
	u := durationUnit(top)
	pn := newPanel("Latency by percentile", "percentile", "delay ("+u.name+")")
	pn.plot.X.Scale, pn.plot.X.Tick.Marker = pctScale{}, pctTicks{}
	pn.plot.X.Min, pn.plot.X.Max = 0, pctMax
	pn.plot.Y.Min = 0
	pn.draw(plotter.NewGrid())
	drawn := false
	for i, cs := range all {
		for _, c := range cs {
			drawCurve(pn, runs, i, c, u)
			drawn = true
		}
	}
	if !drawn {
		pn.note("no replies")
	}
	if drawn && farTail(runs, top) {
		logDelays(pn, u)
	}
	atLeastOne(pn)
	return figure{id: "fig-percentiles", panels: []*panel{pn}}
}

// drawCurve draws curve c of run i, and its maximum as a mark of its own
// at the axis's end.
func drawCurve(pn *panel, runs []Run, i int, c curve, u unit) {
	lk := lookOf(i, len(runs), c.kind)
	xys := make(plotter.XYs, 0, len(c.points))
	for _, p := range c.points {
		xys = append(xys, plotter.XY{X: p.P, Y: u.of(p.Value)})
	}
	l := &plotter.Line{XYs: finite(xys)}
	l.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(1.2), Dashes: lk.dashes}
	pn.add(seriesName(runs, i, c.kind), l)
	if !c.hasMax {
		return
	}
	s := &plotter.Scatter{XYs: finite(plotter.XYs{{X: pctMax, Y: u.of(c.max)}})}
	s.GlyphStyle = draw.GlyphStyle{Color: lk.color, Radius: vg.Points(2.5), Shape: lk.shape}
	pn.add("", s)
}

// histogramFigure draws each run's RTT histogram: the share of replies
// in each log-spaced bin, on a log axis.
func histogramFigure(runs []Run) figure {
	var top time.Duration
	for _, r := range runs {
		if h := rttHistogram(r.Result); h != nil {
			top = max(top, h.Bins[len(h.Bins)-1].High)
		}
	}
	u := durationUnit(top)
	pn := newPanel("RTT histogram", "RTT ("+u.name+")", "share of replies (%)")
	drawn := false
	var outside []string
	for i, r := range runs {
		h := rttHistogram(r.Result)
		if h == nil {
			continue
		}
		lk := lookOf(i, len(runs), kindRTT)
		bins := make([]plotter.HistogramBin, 0, len(h.Bins))
		for _, b := range h.Bins {
			bins = append(bins, plotter.HistogramBin{Min: u.of(b.Low), Max: u.of(b.High), Weight: b.Share * 100})
		}
		hist := &plotter.Histogram{Bins: bins, FillColor: translucent(lk.color, 0.35)}
		hist.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(0.8)}
		if len(runs) > 1 {
			hist.FillColor = translucent(lk.color, 0.15)
		}
		pn.add(seriesName(runs, i, kindRTT), hist)
		drawn = true
		if s := outsideShare(h); s != "" {
			outside = append(outside, seriesName(runs, i, s))
		}
	}
	if !drawn {
		pn.note(noRTT(runs))
		pn.plot.X.Min, pn.plot.Y.Min, pn.plot.Y.Max = 0, 0, 1
		return figure{id: "fig-histogram", panels: []*panel{pn}}
	}
	pn.plot.X.Scale, pn.plot.X.Tick.Marker = plot.LogScale{}, logTicks{}
	pn.plot.X.Label.Text = "RTT (" + u.name + ", log scale)"
	pn.plot.Y.Min = 0
	for _, s := range outside {
		pn.note(s)
	}
	return figure{id: "fig-histogram", panels: []*panel{pn}}
}

// rttHistogram is the run's RTT histogram, nil when it has no bin to
// draw (a one-way run, a saved result without one, a run without
// replies); without the empty bins at either end.
func rttHistogram(res *result.Result) *result.Histogram {
	if res.Distribution == nil || res.Distribution.RTTHistogram == nil {
		return nil
	}
	h := *res.Distribution.RTTHistogram
	for len(h.Bins) > 0 && h.Bins[0].Count == 0 {
		h.Bins = h.Bins[1:]
	}
	for len(h.Bins) > 0 && h.Bins[len(h.Bins)-1].Count == 0 {
		h.Bins = h.Bins[:len(h.Bins)-1]
	}
	if len(h.Bins) == 0 || h.Total == 0 || h.Bins[0].Low <= 0 {
		return nil
	}
	return &h
}

// outsideShare says what share of the replies fell outside the bins
// drawn, or "" when none did.
func outsideShare(h *result.Histogram) string {
	if h.Underflow.Count+h.Overflow.Count == 0 {
		return ""
	}
	pct := func(b result.Bin) string { return strconv.FormatFloat(b.Share*100, 'g', 3, 64) + "%" }
	return pct(h.Underflow) + " below, " + pct(h.Overflow) + " above the bins"
}

// logTicks marks a log axis at 1, 2 and 5 of each decade, labelled, and
// at the other digits, unlabelled.
type logTicks struct{}

// Ticks returns the marks between min and max (both above 0).
func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	var ts []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(min))); dec <= max; dec *= 10 {
		for d := 1.0; d < 10; d++ {
			v := d * dec
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 6, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// noRTT says why no run has an RTT to draw: all were one-way, or none had
// a reply.
func noRTT(runs []Run) string {
	for _, r := range runs {
		if !r.Result.Config.OneWay {
			return "no replies"
		}
	}
	return "no RTT in a one-way run"
}
