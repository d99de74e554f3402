package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/volley-net/volley/internal/chart"
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

// writePlot draws runs to path: into a file beside it, renamed over path
// once complete, so that a failed plot leaves no half a picture.
func writePlot(path string, runs []chart.Run) error {
	f, err := chart.FormatOf(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	err = chart.Write(tmp, f, runs)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return nil
}
