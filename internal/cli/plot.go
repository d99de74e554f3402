package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/volley-net/volley/internal/chart"
	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/saved"
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
	thin    *saved.Thinner
}

// hookPlot makes the run keep what its plot (--plot) draws. With
// intervals off (-i 0) it asks the client for 1 s intervals, which the
// formats do not print; asked says so.
func hookPlot(cfg *client.Config, h *client.Funcs) (p *plotRun, asked bool) {
	p = &plotRun{samples: client.NewSamples(plotProbes), thin: saved.NewThinner(maxPlotIntervals)}
	p.thin.Trim = true
	cfg.Samples = p.samples
	onInterval := h.OnInterval
	if cfg.ReportInterval < 0 {
		cfg.ReportInterval, onInterval, asked = client.DefaultReportInterval, nil, true
	}
	h.OnInterval = func(iv result.Interval) {
		if onInterval != nil {
			onInterval(iv)
		}
		p.thin.Add(iv)
	}
	return p, asked
}

// draw writes the plot of res to path.
func (p *plotRun) draw(path string, res *result.Result) error {
	probes, _ := p.samples.Probes()
	drawn := *res
	drawn.Intervals = p.thin.Intervals()
	return writePlot(path, []chart.Run{{Result: &drawn, Probes: probes}})
}

// thinIntervals returns ivs as a run's plot keeps them: at most
// maxPlotIntervals, neighbours merged past that.
func thinIntervals(ivs []result.Interval) []result.Interval {
	return saved.Thin(ivs, maxPlotIntervals, true)
}
