package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/volley-net/volley/internal/chart"
	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
)

// plotProbes is how many probes a run keeps for its plot (--plot): beyond
// it the latency over time is drawn from the intervals' percentiles, so
// that neither the client's memory nor the picture grows with the run.
const plotProbes = 10000

// checkPlot checks --plot before anything is measured: a file volley can
// write, in a directory that exists.
func checkPlot(path string) error {
	if path == "" {
		return nil
	}
	if _, err := chart.FormatOf(path); err != nil {
		return usagef("--plot: %v", err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return usagef("--plot %s: the directory %s does not exist", path, filepath.Dir(path))
	}
	return nil
}

// writePlot draws runs to path (chart.WriteFile: complete, or not at all).
func writePlot(path string, runs []chart.Run) error {
	if err := chart.WriteFile(path, runs); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// maxPlotIntervals is how many intervals a run keeps for its plot: past
// it, neighbours are merged in pairs and later ones are taken two at a
// time (then four...), so that the memory stays flat however long the run.
const maxPlotIntervals = 2048

// plotRun is what a run keeps for its plot: the probes (up to plotProbes)
// and the intervals, whatever the format prints of them.
type plotRun struct {
	samples *client.Samples
	ivs     []result.Interval
	stride  int              // how many of the run's intervals each kept one holds
	partial *result.Interval // the kept interval being filled, when stride > 1
	filled  int              // how many intervals partial holds
}

// hookPlot makes the run keep what its plot (--plot) draws. With
// intervals off (-i 0) it asks the client for 1 s intervals, which the
// formats do not print; asked says so.
func hookPlot(cfg *client.Config, h *client.Funcs) (p *plotRun, asked bool) {
	p = &plotRun{samples: client.NewSamples(plotProbes), stride: 1}
	cfg.Samples = p.samples
	onInterval := h.OnInterval
	if cfg.ReportInterval < 0 {
		cfg.ReportInterval, onInterval, asked = client.DefaultReportInterval, nil, true
	}
	h.OnInterval = func(iv result.Interval) {
		if onInterval != nil {
			onInterval(iv)
		}
		p.add(iv)
	}
	return p, asked
}

// add keeps iv, merged with its neighbours as the stride asks.
func (p *plotRun) add(iv result.Interval) {
	if p.partial == nil {
		iv.Kernel, iv.TCP, iv.RTTFromSchedule, iv.SendError = nil, nil, nil, nil // not drawn
		p.partial, p.filled = &iv, 0
	} else {
		mergeInterval(p.partial, iv)
	}
	if p.filled++; p.filled < p.stride {
		return
	}
	p.ivs, p.partial = append(p.ivs, *p.partial), nil
	if len(p.ivs) < maxPlotIntervals {
		return
	}
	for i := range len(p.ivs) / 2 {
		p.ivs[i] = p.ivs[2*i]
		mergeInterval(&p.ivs[i], p.ivs[2*i+1])
	}
	p.ivs, p.stride = p.ivs[:len(p.ivs)/2], 2*p.stride
}

// intervals returns the intervals kept.
func (p *plotRun) intervals() []result.Interval {
	if p.partial != nil {
		return append(p.ivs, *p.partial)
	}
	return p.ivs
}

// draw writes the plot of res to path.
func (p *plotRun) draw(path string, res *result.Result) error {
	probes, _ := p.samples.Probes()
	drawn := *res
	drawn.Intervals = p.intervals()
	return writePlot(path, []chart.Run{{Result: &drawn, Probes: probes}})
}

// thinIntervals returns ivs as a run's plot keeps them: at most
// maxPlotIntervals, neighbours merged past that.
func thinIntervals(ivs []result.Interval) []result.Interval {
	p := &plotRun{stride: 1}
	for _, iv := range ivs {
		p.add(iv)
	}
	return p.intervals()
}

// mergeInterval adds b, the interval after a, into a, for a plot: counts,
// bytes, minima and maxima exact; rates over the span of both; means and
// percentiles each the count-weighted mean of the two (a picture's
// approximation: the figures printed are not merged).
func mergeInterval(a *result.Interval, b result.Interval) {
	a.End = b.End
	a.Counts.Add(b.Counts)
	if a.Counts.Sent > 0 {
		a.Counts.LossPercent = 100 * float64(a.Counts.Lost) / float64(a.Counts.Sent)
	}
	for _, l := range []struct{ a, b *result.Latency }{{&a.RTT, &b.RTT}, {&a.Response, &b.Response}, {&a.Up, &b.Up}, {&a.Down, &b.Down}} {
		mergeLatency(l.a, *l.b)
	}
	t, s := &a.Throughput, (a.End - a.Start).Seconds()
	t.BytesUp += b.Throughput.BytesUp
	t.BytesDown += b.Throughput.BytesDown
	if s > 0 {
		t.BitsPerSecUp, t.BitsPerSecDown = float64(8*t.BytesUp)/s, float64(8*t.BytesDown)/s
		t.ProbesPerSecUp, t.ProbesPerSecDown = float64(a.Counts.Sent)/s, float64(a.Counts.Received)/s
		t.RequestsPerSec = float64(a.Counts.Received) / s
	}
}

// mergeLatency adds b into a (see mergeInterval).
func mergeLatency(a *result.Latency, b result.Latency) {
	switch {
	case b.Count == 0:
		return
	case a.Count == 0:
		*a = b
		a.Percentiles = slices.Clone(b.Percentiles)
		return
	}
	n := a.Count + b.Count
	wa, wb := float64(a.Count)/float64(n), float64(b.Count)/float64(n)
	mean := func(x, y time.Duration) time.Duration { return time.Duration(wa*float64(x) + wb*float64(y)) }
	a.Min, a.Max, a.Mean, a.Stdev = min(a.Min, b.Min), max(a.Max, b.Max), mean(a.Mean, b.Mean), mean(a.Stdev, b.Stdev)
	for i := range min(len(a.Percentiles), len(b.Percentiles)) {
		a.Percentiles[i].Value = mean(a.Percentiles[i].Value, b.Percentiles[i].Value)
	}
	a.Count = n
}
