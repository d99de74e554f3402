// Package chart draws a run's figures as SVG or PNG with gonum/plot, and
// writes the self-contained HTML report around them: latency over time
// (each probe, or each interval's percentiles when the probes were not
// kept), up and down delays and loss marks per direction on the same time
// axis; the distribution as a percentile plot with a log tail and as a
// histogram; throughput and loss per interval; for a latency-under-load
// run, first, its phases on one time axis (the bulk streams' goodput, the
// RTT, each direction's delay) and, in the HTML report, a table of them;
// and a title block that says what the figures show (date, addresses,
// transport, sizes, load, version). Several runs are drawn over each
// other, for comparison.
package chart

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// Run is one run to draw.
type Run struct {
	// Label names the run in legends: "" for a run drawn alone, else
	// a file name or what the caller chose.
	Label  string
	Result *result.Result
	// Probes are the run's measured probes in the order they left (see
	// result.Probe); nil when they were not kept, and the latency over
	// time is then drawn from the intervals' percentiles.
	Probes []result.Probe
}

// Format is the kind of file written.
type Format int

// The formats, chosen by a file's extension.
const (
	SVG  Format = iota // .svg: the figures, one under the other
	PNG                // .png: the same, as a picture
	HTML               // .html: one self-contained page: figures, summary, configuration, intervals
)

// FormatOf returns the format of path, by its extension.
func FormatOf(path string) (Format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg":
		return SVG, nil
	case ".png":
		return PNG, nil
	case ".html", ".htm":
		return HTML, nil
	default:
		return 0, fmt.Errorf("plot file %q: the extension %q is not one volley writes (.svg, .png or .html)", path, ext)
	}
}

// ErrNoRuns is returned when there is nothing to draw.
var ErrNoRuns = errors.New("chart: no runs to draw")

// Write draws runs to w in format f.
func Write(w io.Writer, f Format, runs []Run) error {
	if err := check(runs); err != nil {
		return err
	}
	figs := figures(runs)
	all := panelsOf(figs)
	switch f {
	case SVG:
		return writeSVG(w, newPicture(wrapTitle(titleLines(runs)), all, all))
	case PNG:
		return writePNG(w, newPicture(wrapTitle(titleLines(runs)), all, all))
	case HTML:
		return writeHTML(w, runs, figs)
	}
	return fmt.Errorf("chart: unknown format %d", f)
}

// check rejects what cannot be drawn: no runs, or a run without a result.
func check(runs []Run) error {
	if len(runs) == 0 {
		return ErrNoRuns
	}
	for i, r := range runs {
		if r.Result == nil {
			return fmt.Errorf("chart: run %d (%q) has no result", i+1, r.Label)
		}
	}
	return nil
}

// WriteFile draws runs to path in the format its extension names. It
// writes a temporary file in the same directory and renames it over
// path, so that path never holds half a picture.
func WriteFile(path string, runs []Run) (err error) {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	if err := check(runs); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := Write(bw, f, runs); err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("plot file %q: %w", path, err)
	}
	return nil
}
