package chart

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/volley-net/volley/internal/result"
)

func TestPercentileLogAxis(t *testing.T) {
	// One probe in 500 is a hundred times as long: the tail is far above
	// the median, and the delay axis a log one.
	run := makeRun(t, synth{probes: 2000, intervals: 2, base: 50 * time.Microsecond, spikeEvery: 500})
	pn := figures([]Run{run})[1].panels[0]
	if y := pn.plot.Y.Label.Text; y != "delay (ms, log scale)" {
		t.Errorf("percentile y axis = %q, want %q", y, "delay (ms, log scale)")
	}
	// The points are the delays' logarithms: p50 and p99.9 where the
	// distribution has them, the maximum still a mark of its own.
	want := map[float64]time.Duration{}
	for _, p := range run.Result.Distribution.RTT {
		want[p.P] = p.Value
	}
	line := firstLine(t, pn)
	for _, xy := range line.XYs {
		if xy.X != 50 && xy.X != 99.9 {
			continue
		}
		if w := math.Log10(float64(want[xy.X]) / 1e6); math.Abs(xy.Y-w) > 1e-9 {
			t.Errorf("RTT curve at p%v = %v, want log10 of %v ms, %v", xy.X, xy.Y, float64(want[xy.X])/1e6, w)
		}
	}
	if m, w := maxMark(t, pn), math.Log10(float64(want[100])/1e6); m.X != pctMax || math.Abs(m.Y-w) > 1e-9 {
		t.Errorf("RTT max mark at (%v, %v), want (%v, %v)", m.X, m.Y, pctMax, w)
	}
	// Body and tail both read: the median sits well above the axis's
	// bottom, at least a decade below the maximum.
	if lo, med := pn.plot.Y.Min, math.Log10(float64(want[50])/1e6); med < lo || med > pn.plot.Y.Max-1 {
		t.Errorf("median at %v on an axis %v..%v, want above its bottom, a decade below its top", med, lo, pn.plot.Y.Max)
	}
	each(pn, func(xy *plotter.XY) {
		if xy.Y < pn.plot.Y.Min || xy.Y > pn.plot.Y.Max {
			t.Errorf("point %v outside the axis %v..%v", *xy, pn.plot.Y.Min, pn.plot.Y.Max)
		}
	})
	// The same run without its spikes keeps a linear axis from zero.
	calm := makeRun(t, synth{probes: 2000, intervals: 2, base: 50 * time.Microsecond})
	if p := figures([]Run{calm})[1].panels[0].plot; p.Y.Label.Text != "delay (µs)" || p.Y.Min != 0 {
		t.Errorf("calm run: percentile y axis %q from %v, want %q from 0", p.Y.Label.Text, p.Y.Min, "delay (µs)")
	}
}

func TestLogTickLabels(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64 // in the axis's units, not their logarithms
		want   []string
	}{
		{0.01, 0.6, []string{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5"}},
		{0.01, 200, []string{"0.01", "0.1", "1", "10", "100"}},
	} {
		var got []string
		for _, tk := range (log10Ticks{}).Ticks(math.Log10(c.lo), math.Log10(c.hi)) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("log10Ticks from %v to %v labelled %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// rttLines are a panel's RTT lines (drawn in the RTT colour, one run):
// the dashed one, and the first solid one.
func rttLines(t *testing.T, pn *panel) (dashed, solid *plotter.Line) {
	t.Helper()
	for _, it := range pn.items {
		l, ok := it.(*plotter.Line)
		if !ok || l.Color != palette[kindIndex(kindRTT)] {
			continue
		}
		switch {
		case len(l.Dashes) > 0 && dashed == nil:
			dashed = l
		case len(l.Dashes) == 0 && solid == nil:
			solid = l
		}
	}
	if dashed == nil || solid == nil {
		t.Fatalf("RTT lines: dashed %v, solid %v; want one of each", dashed, solid)
	}
	return dashed, solid
}

func TestIntervalBands(t *testing.T) {
	for _, c := range []struct {
		ps     []float64
		oneWay bool
		want   []string
	}{
		{testPercentiles, false, []string{"RTT min–p99", "RTT p99.9", "RTT p50", "up p50", "down p50"}},
		{[]float64{50, 90, 99}, false, []string{"RTT min–p99", "RTT p50", "up p50", "down p50"}},
		{[]float64{50, 90, 99.9}, false, []string{"RTT min–p99.9", "RTT p50", "up p50", "down p50"}},
		{[]float64{50}, false, []string{"RTT min–max", "RTT p50", "up p50", "down p50"}},
		{[]float64{90, 99, 99.99}, false, []string{"RTT min–p99", "RTT p99.99", "RTT mean", "up mean", "down mean"}},
		{testPercentiles, true, []string{"up min–p99", "up p99.9", "up p50"}},
	} {
		run := makeRun(t, synth{probes: 1000, intervals: 4, oneWay: c.oneWay, base: 80 * time.Microsecond, percentiles: c.ps})
		pn := figures([]Run{run})[0].panels[0]
		if !slices.Equal(pn.series, c.want) {
			t.Errorf("percentiles %v (one-way %v): latency series = %q, want %q", c.ps, c.oneWay, pn.series, c.want)
		}
	}
	// The band runs from each interval's minimum to its p99; p99.9 is a
	// thin dashed line above it, p50 a solid one.
	run := makeRun(t, synth{probes: 1000, intervals: 4, base: 80 * time.Microsecond})
	pn := figures([]Run{run})[0].panels[0]
	if strings.Contains(pn.plot.Y.Label.Text, "log") {
		t.Fatalf("latency y axis %q, want a linear one for this run", pn.plot.Y.Label.Text)
	}
	var bands []*plotter.Polygon
	for _, it := range pn.items {
		if pg, ok := it.(*plotter.Polygon); ok {
			bands = append(bands, pg)
		}
	}
	if len(bands) != 1 {
		t.Fatalf("%d bands, want 1 (every interval has replies)", len(bands))
	}
	ring := bands[0].XYs[0]
	ivs := run.Result.Intervals
	for j, iv := range ivs {
		top, bottom := ring[2*j], ring[len(ring)-1-2*j]
		if want := us(valueAt(iv.RTT, 99)); top.X != seconds(iv.Start) || top.Y != want {
			t.Errorf("interval %d: band top at %v, want p99 %v µs at %v s", j, top, want, seconds(iv.Start))
		}
		if want := us(iv.RTT.Min); bottom.X != seconds(iv.Start) || bottom.Y != want {
			t.Errorf("interval %d: band bottom at %v, want the min %v µs at %v s", j, bottom, want, seconds(iv.Start))
		}
	}
	tail, mid := rttLines(t, pn)
	for j, iv := range ivs {
		if got, want := tail.XYs[2*j].Y, us(valueAt(iv.RTT, 99.9)); got != want {
			t.Errorf("interval %d: p99.9 line at %v µs, want %v", j, got, want)
		}
		if got, want := mid.XYs[2*j].Y, us(valueAt(iv.RTT, 50)); got != want {
			t.Errorf("interval %d: p50 line at %v µs, want %v", j, got, want)
		}
	}
	if len(tail.Dashes) == 0 || tail.Width >= mid.Width || len(mid.Dashes) != 0 {
		t.Errorf("p99.9 line %v wide, dashes %v; p50 line %v, dashes %v: want the p99.9 one thinner and dashed, the p50 one solid",
			tail.Width, tail.Dashes, mid.Width, mid.Dashes)
	}
}

// valueAt is l's value at percentile p.
func valueAt(l result.Latency, p float64) time.Duration {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Value
		}
	}
	panic("no such percentile")
}

// us is d in microseconds, a value of an axis in µs.
func us(d time.Duration) float64 { return float64(d) / 1e3 }
