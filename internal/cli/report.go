package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/chart"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/saved"
)

const reportLong = `Read saved results back and write them again: --format json documents,
--format jsonl streams and --log probe logs (CSV), told apart by their content.

One FILE is written as the client would have written it, in --format. A probe
log is rebuilt: intervals of --report-interval by send time, the summary and
the distribution computed from its lines as the client computes them. Several
FILEs are compared: each percentile side by side, with its ratio to the first
FILE's, and the counts; --plot draws them over each other.

  volley report run.json                   the text report of a saved run
  volley report before.json after.json     before and after, side by side
  volley report run.csv --format csv       a probe log's intervals, for a spreadsheet`

type reportFlags struct {
	format         string
	plot           string
	percentiles    string
	reportInterval time.Duration
	quiet          bool
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Write saved results again (text, JSON, CSV, plots), or compare runs",
		Long:  reportLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("report needs a FILE: a --format json document, a --format jsonl stream or a --log probe log (see volley report --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, args, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.format, "format", "text", "output format: text (with several FILEs, the comparison), json (several: an array), jsonl (several: each run's lines in turn), csv (a row per interval and per summary), iperf or dping (one FILE)")
	fl.StringVar(&f.plot, "plot", "", "also draw the runs to this file: .svg, .png or .html, by its extension")
	fl.StringVar(&f.percentiles, "percentiles", "", "percentiles to report, comma-separated (default: a document's own; a probe log's: 50,90,99,99.9,99.99); from a document, taken from its saved figures or its distribution")
	durationVarP(fl, &f.reportInterval, "report-interval", "i", time.Second, true, "length of the intervals rebuilt from a probe log; 0 for none (a document keeps its own)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "text: print only the summary")
	return cmd
}

// options checks the flags and returns what saved.Read needs.
func (f reportFlags) options(cmd *cobra.Command, files int) (saved.Options, error) {
	var opt saved.Options
	switch f.format {
	case "text", "json", "jsonl", "csv":
	case "iperf", "dping":
		if files > 1 {
			return opt, usagef("--format %s writes one run: give one FILE, or compare with --format text", f.format)
		}
	default:
		return opt, usagef("--format %q: want text, json, jsonl, csv, iperf or dping", f.format)
	}
	if cmd.Flags().Changed("percentiles") {
		p, err := parsePercentiles(f.percentiles)
		if err != nil {
			return opt, err
		}
		opt.Percentiles = p
	}
	if err := checkReportInterval(f.reportInterval); err != nil {
		return opt, err
	}
	opt.Interval = f.reportInterval
	if opt.Interval == 0 {
		opt.Interval = -1
	}
	if err := checkPlot(f.plot); err != nil {
		return opt, err
	}
	return opt, nil
}

// errInterrupted: a signal ended volley report.
var errInterrupted = errors.New("report: interrupted")

// runReport reads every file, writes the report, then the plot. A
// stream cut short is written as far as it goes, and its error returned
// at the end. The command's context ending (a signal) ends it at once,
// with errInterrupted: reading and writing go on in a goroutine, which
// may be blocked (opening a FIFO no one writes, say) and is left behind,
// its writes to stdout and stderr cut off.
func runReport(cmd *cobra.Command, paths []string, f reportFlags, stdout, stderr io.Writer) error {
	opt, err := f.options(cmd, len(paths))
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	out, errOut := &gateWriter{w: stdout}, &gateWriter{w: stderr}
	done := make(chan error, 1)
	go func() { done <- f.report(ctx, paths, opt, out, errOut) }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return exitError{ExitInterrupted, errInterrupted}
		}
		return err
	case <-ctx.Done():
		out.close()
		errOut.close()
		return exitError{ExitInterrupted, errInterrupted}
	}
}

// report reads the files at paths and writes their report (see
// runReport).
func (f reportFlags) report(ctx context.Context, paths []string, opt saved.Options, stdout, stderr io.Writer) error {
	var files []*saved.File
	var partial error
	for _, p := range paths {
		file, err := saved.Read(ctx, p, opt)
		switch {
		case errors.Is(err, saved.ErrTruncated) && file != nil:
			partial = errors.Join(partial, err)
		case err != nil:
			return err
		}
		files = append(files, file)
	}
	labelFiles(files, paths)
	if err := f.write(stdout, stderr, files); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if f.plot != "" {
		if err := plot(f.plot, files); err != nil {
			return err
		}
	}
	if partial != nil {
		return exitError{ExitError, partial}
	}
	return nil
}

// gateWriter writes to w until it is closed; then it writes nothing
// more, and says so.
type gateWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errInterrupted
	}
	return g.w.Write(p)
}

func (g *gateWriter) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// labelFiles labels each file by its base name, or by its path as given
// where two base names are the same; a run drawn alone has no label.
func labelFiles(files []*saved.File, paths []string) {
	seen := map[string]int{}
	for _, p := range paths {
		seen[filepath.Base(p)]++
	}
	for i, file := range files {
		file.Label = filepath.Base(paths[i])
		if seen[file.Label] > 1 {
			file.Label = paths[i]
		}
		file.Label = saved.Clean(file.Label) // a name may hold what drives a terminal
	}
}

// write writes files in f's format: one as the client would have, several
// compared (text) or one after the other.
func (f reportFlags) write(w, stderr io.Writer, files []*saved.File) error {
	runs := make([]report.Labelled, len(files))
	for i, file := range files {
		runs[i] = report.Labelled{Label: file.Label, Result: file.Result}
	}
	notes := func() {
		for _, file := range files {
			for _, n := range file.Notes {
				fmt.Fprintf(stderr, "volley: note: %s: %s\n", file.Label, n)
			}
		}
	}
	switch f.format {
	case "text":
		return f.writeText(w, files, runs)
	case "json":
		notes()
		if len(files) == 1 {
			return report.WriteJSON(w, files[0].Result)
		}
		return writeJSONArray(w, files)
	case "jsonl":
		notes()
		for _, file := range files {
			if err := report.WriteJSONL(w, file.Result); err != nil {
				return err
			}
		}
		return nil
	case "csv":
		notes()
		return report.WriteCSV(w, runs)
	case "iperf":
		return writeIperf(w, files[0].Result)
	case "dping":
		return report.WriteDping(w, files[0].Result)
	}
	return nil
}

// writeText writes one run as the client's text report (-q: its summary)
// or several compared, then what the files' notes say.
func (f reportFlags) writeText(w io.Writer, files []*saved.File, runs []report.Labelled) error {
	var err error
	res := files[0].Result
	switch {
	case len(files) > 1:
		err = report.WriteComparison(w, runs)
	case files[0].Truncated:
		// A stream cut short: its intervals, nothing more is known.
		err = writeIntervals(w, res)
	case f.quiet:
		if err = report.WriteSummary(w, res); err == nil && res.Histogram != nil {
			err = report.WriteHistogram(w, res.Histogram)
		}
	default:
		err = report.WriteText(w, res)
	}
	for _, file := range files {
		for _, n := range file.Notes {
			if err == nil {
				if len(files) > 1 {
					n = file.Label + ": " + n
				}
				_, err = fmt.Fprintf(w, "note: %s\n", n)
			}
		}
	}
	return err
}

// writeIntervals writes the interval lines of res.
func writeIntervals(w io.Writer, res *result.Result) error {
	if err := report.WriteIntervalHeader(w, res.Config); err != nil {
		return err
	}
	for _, iv := range res.Intervals {
		if err := report.WriteInterval(w, res.Config, iv); err != nil {
			return err
		}
	}
	return nil
}

// writeIperf writes res as iperf 2's lines, as the client's --format
// iperf does.
func writeIperf(w io.Writer, res *result.Result) error {
	var mss uint32
	if res.Config.TCP != nil {
		mss = res.Config.TCP.MSS
	}
	if err := report.WriteIperfHeader(w, res.Config); err != nil {
		return err
	}
	for _, iv := range res.Intervals {
		if err := report.WriteIperfInterval(w, iv, mss); err != nil {
			return err
		}
	}
	return report.WriteIperfSummary(w, res)
}

// writeJSONArray writes several runs as one JSON array of their
// documents, each as WriteJSON writes it (intervals an array, never null).
func writeJSONArray(w io.Writer, files []*saved.File) error {
	docs := make([]*result.Result, len(files))
	for i, file := range files {
		r := *file.Result
		if r.Intervals == nil {
			r.Intervals = []result.Interval{}
		}
		docs[i] = &r
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(docs)
}

// plot draws files to path, in the format its extension names: one run
// alone (no label), several over each other, each labelled by its file,
// each with at most maxPlotIntervals intervals (as a run's own plot).
func plot(path string, files []*saved.File) error {
	runs := make([]chart.Run, len(files))
	for i, file := range files {
		runs[i] = file.Run
		if res := file.Run.Result; res != nil {
			thin := *res
			thin.Intervals = thinIntervals(res.Intervals)
			runs[i].Result = &thin
		}
	}
	if len(runs) == 1 {
		runs[0].Label = ""
	}
	return writePlot(path, runs)
}
