package chart

import (
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/volley-net/volley/internal/result"
)

// throughputFigure draws, interval by interval, the bits each way (the
// upper panel) and the share of probes lost each way (the lower one), on
// the time axis of the latency figure.
func throughputFigure(runs []Run) figure {
	top := 0.0
	for _, r := range runs {
		for _, iv := range r.Result.Intervals {
			top = max(top, iv.Throughput.BitsPerSecUp, iv.Throughput.BitsPerSecDown)
		}
	}
	u := rateUnit(top)
	rate := newPanel("Throughput per interval", "time since the end of warm-up (s)", "payload ("+u.name+")")
	loss := newPanel("Loss per interval", "time since the end of warm-up (s)", "lost (% of sent)")
	for _, pn := range []*panel{rate, loss} {
		setSpan(pn.plot, runs)
		pn.plot.Y.Min = 0
	}
	any, logs := false, 0
	for i, r := range runs {
		any = any || len(r.Result.Intervals) > 0
		peer := r.Result.Config.Peer
		if rebuilt(r.Result.Config) || (peer != nil && !peer.Directions) {
			// A probe log holds neither sizes nor the way a probe was
			// lost; a peer's answers may not say the way either.
			perInterval(loss, seriesName(runs, i, "lost (way not known)"), r.Result.Intervals, lookOf(i, len(runs), kindRTT), func(iv result.Interval) float64 {
				if iv.Counts.Sent == 0 {
					return 0
				}
				return 100 * float64(iv.Counts.Lost) / float64(iv.Counts.Sent)
			})
		}
		if rebuilt(r.Result.Config) {
			logs++
			continue
		}
		for _, k := range []string{kindUp, kindDown} {
			if k == kindDown && r.Result.Config.OneWay {
				continue // nothing comes back
			}
			lk := lookOf(i, len(runs), k)
			perInterval(rate, seriesName(runs, i, k), r.Result.Intervals, lk, func(iv result.Interval) float64 {
				if k == kindUp {
					return iv.Throughput.BitsPerSecUp / u.ns
				}
				return iv.Throughput.BitsPerSecDown / u.ns
			})
			if peer != nil && !peer.Directions {
				continue
			}
			perInterval(loss, seriesName(runs, i, "lost "+k), r.Result.Intervals, lk, func(iv result.Interval) float64 {
				if iv.Counts.Sent == 0 {
					return 0
				}
				if k == kindUp {
					return 100 * float64(iv.Counts.LostUp) / float64(iv.Counts.Sent)
				}
				return 100 * float64(iv.Counts.LostDown) / float64(iv.Counts.Sent)
			})
		}
	}
	atLeastOne(rate)
	atLeastOne(loss)
	if logs > 0 {
		rate.note("no sizes in a probe log")
	}
	if !any {
		rate.note("no intervals")
		loss.note("no intervals")
	}
	return figure{id: "fig-throughput", panels: []*panel{rate, loss}}
}

// perInterval draws value of each interval as a step over it, with a
// glyph at its middle that tells the series apart.
func perInterval(pn *panel, name string, ivs []result.Interval, lk look, value func(result.Interval) float64) {
	if len(ivs) == 0 {
		return
	}
	xys := make(plotter.XYs, 0, 2*len(ivs))
	mids := make(plotter.XYs, 0, len(ivs))
	for _, iv := range ivs {
		v := value(iv)
		xys = append(xys, plotter.XY{X: seconds(iv.Start), Y: v}, plotter.XY{X: seconds(iv.End), Y: v})
		mids = append(mids, plotter.XY{X: seconds(iv.Start+iv.End) / 2, Y: v})
	}
	l := &plotter.Line{XYs: finite(xys)}
	l.LineStyle = draw.LineStyle{Color: lk.color, Width: vg.Points(1), Dashes: lk.dashes}
	if len(mids) > maxGlyphs/4 {
		pn.add(name, l)
		return
	}
	s := &plotter.Scatter{XYs: finite(mids)}
	s.GlyphStyle = draw.GlyphStyle{Color: lk.color, Radius: vg.Points(2), Shape: lk.shape}
	pn.draw(l, s)
	pn.name(name, l, s)
}
