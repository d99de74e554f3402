package chart

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// maxLoadSteps is the most steps of a load series a run draws: past it,
// neighbours are averaged, so that a long run (or a hostile saved file)
// does not make a picture of millions of points.
const maxLoadSteps = 2000

// loadFigure draws a latency-under-load run's phases on one time axis:
// the bulk streams' goodput each way, the RTT, and each direction's
// delay, in three panels, each with the phases marked (the loaded phase
// shaded, a line between phases, the phases' names along the top). It is
// drawn when a run has a Load; ok is false when none has.
func loadFigure(runs []Run) (f figure, ok bool) {
	phases := phasesOf(runs)
	if phases == nil {
		return figure{}, false
	}
	end := loadSpan(runs)
	rate := loadRatePanel(runs, phases, end)
	rtt := loadDelayPanel(runs, "RTT under load", []string{kindRTT}, phases, end)
	oneWay := loadDelayPanel(runs, "One-way delay under load", []string{kindUp, kindDown}, phases, end)
	return figure{id: "fig-load", panels: []*panel{rate, rtt, oneWay}}, true
}

// phasesOf returns the phases the figure marks: the first run's with a
// Load (runs compared are expected to share them), nil when no run has a
// Load.
func phasesOf(runs []Run) []result.Phase {
	for _, r := range runs {
		if l := r.Result.Load; l != nil {
			if l.Phases == nil {
				return []result.Phase{}
			}
			return l.Phases
		}
	}
	return nil
}

// loadSpan is the time the load figure covers, in seconds: the runs' span
// (see span), or to the end of the last phase or load step when later.
func loadSpan(runs []Run) float64 {
	end := span(runs)
	for _, r := range runs {
		l := r.Result.Load
		if l == nil {
			continue
		}
		if n := len(l.Phases); n > 0 {
			end = max(end, seconds(l.Phases[n-1].Probes.End))
		}
		if n := len(l.Series); n > 0 {
			end = max(end, seconds(l.Series[n-1].At))
		}
	}
	if math.IsNaN(end) || math.IsInf(end, 0) {
		return 0
	}
	return end
}

// loadRatePanel draws each run's bulk goodput up and down: its series, a
// step each SeriesStep, or its phases' rates when it has no series.
func loadRatePanel(runs []Run, phases []result.Phase, end float64) *panel {
	top := 0.0
	for _, r := range runs {
		if l := r.Result.Load; l != nil {
			for _, p := range l.Series {
				top = max(top, p.BitsPerSecUp, p.BitsPerSecDown)
			}
			for _, ph := range l.Phases {
				top = max(top, ph.BitsPerSecUp, ph.BitsPerSecDown)
			}
		}
	}
	u := rateUnit(top)
	pn := newPanel("Bulk goodput", "time since the start of the measurement (s)", "goodput ("+u.name+")")
	m := markPhases(pn, phases)
	drawn := false
	for i, r := range runs {
		l := r.Result.Load
		if l == nil {
			continue
		}
		for _, k := range loadDirections(l) {
			xys := loadSteps(l, k, u)
			if len(xys) == 0 {
				continue
			}
			line := &plotter.Line{XYs: xys}
			lk := lookOf(i, len(runs), k)
			line.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(1), Dashes: lk.dashes}
			pn.add(seriesName(runs, i, k), line)
			drawn = true
		}
	}
	if !drawn {
		pn.note("no load measured")
	}
	m.fit(pn, end, false)
	return pn
}

// loadDirections are the ways l's bulk streams moved data: those its
// direction names, and any other its figures show data in.
func loadDirections(l *result.Load) []string {
	up := l.Direction == "up" || l.Direction == "both"
	down := l.Direction == "down" || l.Direction == "both"
	for _, p := range l.Series {
		up, down = up || p.BitsPerSecUp > 0, down || p.BitsPerSecDown > 0
	}
	for _, ph := range l.Phases {
		up, down = up || ph.BitsPerSecUp > 0, down || ph.BitsPerSecDown > 0
	}
	var out []string
	if up {
		out = append(out, kindUp)
	}
	if down {
		out = append(out, kindDown)
	}
	return out
}

// loadSteps are the points of l's goodput in direction kind, in unit u:
// a step over each SeriesStep of its series (neighbours averaged past
// maxLoadSteps), else over each phase.
func loadSteps(l *result.Load, kind string, u unit) plotter.XYs {
	type step struct {
		from, to time.Duration
		up, down float64
	}
	var steps []step
	if len(l.Series) > 0 {
		var prev time.Duration
		for i, p := range l.Series {
			from := prev
			if l.SeriesStep > 0 || i == 0 {
				from = max(p.At-l.SeriesStep, 0)
			}
			steps = append(steps, step{from, p.At, p.BitsPerSecUp, p.BitsPerSecDown})
			prev = p.At
		}
	} else {
		for _, ph := range l.Phases {
			steps = append(steps, step{ph.Probes.Start, ph.Probes.End, ph.BitsPerSecUp, ph.BitsPerSecDown})
		}
	}
	per := max((len(steps)+maxLoadSteps-1)/maxLoadSteps, 1)
	xys := make(plotter.XYs, 0, 2*len(steps)/per+2)
	for i := 0; i < len(steps); i += per {
		group := steps[i:min(i+per, len(steps))]
		sum := 0.0
		for _, s := range group {
			if kind == kindUp {
				sum += s.up
			} else {
				sum += s.down
			}
		}
		v := sum / float64(len(group)) / u.ns
		xys = append(xys, plotter.XY{X: seconds(group[0].from), Y: v}, plotter.XY{X: seconds(group[len(group)-1].to), Y: v})
	}
	return finite(xys)
}

// loadDelayPanel draws each loaded run's delays of the given kinds over
// time: each probe when the run kept them, else each phase's band from
// its minimum to its p99 and its median as a step.
func loadDelayPanel(runs []Run, title string, want []string, phases []result.Phase, end float64) *panel {
	u := durationUnit(loadDelayMax(runs, want))
	pn := newPanel(title, "time since the start of the measurement (s)", "delay ("+u.name+")")
	m := markPhases(pn, phases)
	drawn := false
	for i, r := range runs {
		if r.Result.Load == nil {
			continue
		}
		ks := loadKinds(r.Result, want)
		if r.Probes != nil {
			drawn = loadProbeSeries(pn, runs, i, ks, u) || drawn
			continue
		}
		phased := *r.Result
		phased.Intervals = phaseIntervals(r.Result.Load)
		ps := r.Result.Config.Percentiles
		top, topName := bandTop(ps)
		p, name := middle(ps)
		for _, k := range ks {
			lk := lookOf(i, len(runs), k)
			band(pn, seriesName(runs, i, k+" min–"+topName), &phased, k, lk, u, top)
			solid := draw.LineStyle{Color: lk.color, Width: vg.Points(1), Dashes: lk.dashes}
			drawn = stepLine(pn, seriesName(runs, i, k+" "+name), &phased, k, solid, u, func(l result.Latency) time.Duration {
				return middleValue(l, p)
			}) || drawn
		}
	}
	if !drawn {
		pn.note("no replies")
	}
	m.fit(pn, end, true)
	return pn
}

// loadKinds are the kinds of want that res has.
func loadKinds(res *result.Result, want []string) []string {
	var out []string
	for _, k := range kinds(res) {
		for _, w := range want {
			if k == w {
				out = append(out, k)
			}
		}
	}
	return out
}

// phaseIntervals are l's phases' probe figures, as intervals.
func phaseIntervals(l *result.Load) []result.Interval {
	out := make([]result.Interval, len(l.Phases))
	for i, ph := range l.Phases {
		out[i] = ph.Probes
	}
	return out
}

// loadProbeSeries draws run i's probes' delays of kinds ks; it says
// whether it drew any.
func loadProbeSeries(pn *panel, runs []Run, i int, ks []string, u unit) bool {
	r := runs[i]
	fix := offsetFix(r.Result)
	drawn := false
	for _, k := range ks {
		xys := make(plotter.XYs, 0, len(r.Probes))
		for _, p := range r.Probes {
			if !p.Lost {
				xys = append(xys, plotter.XY{X: seconds(p.Sent), Y: u.of(probeDelay(p, k, fix))})
			}
		}
		if len(xys) == 0 {
			continue
		}
		pn.add(seriesName(runs, i, k), points(finite(xys), lookOf(i, len(runs), k)))
		drawn = true
	}
	return drawn
}

// loadDelayMax is the largest delay of kinds want the loaded runs draw.
func loadDelayMax(runs []Run, want []string) time.Duration {
	var m time.Duration
	for _, r := range runs {
		l := r.Result.Load
		if l == nil {
			continue
		}
		ks := loadKinds(r.Result, want)
		fix := offsetFix(r.Result)
		for _, k := range ks {
			for _, p := range r.Probes {
				if !p.Lost {
					m = max(m, probeDelay(p, k, fix))
				}
			}
			for _, ph := range l.Phases {
				m = max(m, latencyOf(r.Result, ph.Probes, k).Max)
			}
		}
	}
	return m
}

// phaseMarks are what marks the phases on a panel: the loaded phases'
// shading, a line at each phase's start (but the first's), and the
// phases' names; drawn before the data, they are sized to it once it is
// drawn (fit).
type phaseMarks struct {
	bands  []*plotter.Polygon
	lines  []*plotter.Line
	names  *plotter.Labels
	before int // the panel's items before the data
}

// phaseShade is the fill of a loaded phase: grey, unlike any series.
var phaseShade = translucent(color.RGBA{0x80, 0x80, 0x80, 0xff}, 0.15)

// markPhases adds the marks of phases to pn, under what is drawn next.
func markPhases(pn *panel, phases []result.Phase) *phaseMarks {
	m := &phaseMarks{}
	var xys plotter.XYs
	var names []string
	for i, ph := range phases {
		from, to := seconds(ph.Probes.Start), seconds(ph.Probes.End)
		if ph.Loaded {
			pg := &plotter.Polygon{XYs: []plotter.XYs{{{X: from}, {X: to}, {X: to}, {X: from}}}, Color: phaseShade}
			m.bands = append(m.bands, pg)
			pn.draw(pg)
		}
		if i > 0 {
			l := &plotter.Line{XYs: plotter.XYs{{X: from}, {X: from}}}
			l.LineStyle = draw.LineStyle{Color: color.Gray{0x80}, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
			m.lines = append(m.lines, l)
			pn.draw(l)
		}
		xys = append(xys, plotter.XY{X: (from + to) / 2})
		names = append(names, ph.Name)
	}
	if len(names) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: finite(xys), Labels: names})
		if err == nil { // fails only on points left out as not finite
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font = face(8)
				lb.TextStyle[i].Color = color.Gray{0x40}
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YTop
			}
			lb.Offset = vg.Point{Y: -vg.Points(2)}
			m.names = lb
			pn.draw(lb)
		}
	}
	m.before = len(pn.items)
	return m
}

// fit puts pn's axes over the data drawn since the marks, the time axis
// from 0 to end, the value axis from 0 (or the lowest value, when
// negatives may be drawn) to a little above the highest, with room for
// the phases' names; and sizes the marks to it.
func (m *phaseMarks) fit(pn *panel, end float64, negatives bool) {
	lo, hi := 0.0, 0.0
	for _, it := range pn.items[m.before:] {
		if dr, ok := it.(plot.DataRanger); ok {
			_, _, ymin, ymax := dr.DataRange()
			if !math.IsNaN(ymin) && !math.IsInf(ymin, 0) && negatives {
				lo = min(lo, ymin)
			}
			if !math.IsNaN(ymax) && !math.IsInf(ymax, 0) {
				hi = max(hi, ymax)
			}
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	top := hi + (hi-lo)*0.15
	for _, pg := range m.bands {
		r := pg.XYs[0]
		r[0].Y, r[1].Y, r[2].Y, r[3].Y = lo, lo, top, top
	}
	for _, l := range m.lines {
		l.XYs[0].Y, l.XYs[1].Y = lo, top
	}
	if m.names != nil {
		for i := range m.names.XYs {
			m.names.XYs[i].Y = top
		}
	}
	pn.plot.Y.Min, pn.plot.Y.Max = lo, top
	if end > 0 {
		pn.plot.X.Min, pn.plot.X.Max = 0, end
	}
}

// loadPhrase says what a run's load was: "4 bulk streams uploading, phases
// of 5.00s" (the title block and the HTML report).
func loadPhrase(l *result.Load) string {
	what := map[string]string{"down": "downloading", "up": "uploading", "both": "each way"}[l.Direction]
	return fmt.Sprintf("%d bulk streams %s, phases of %s", l.Streams, what, report.Duration(l.Phase))
}
