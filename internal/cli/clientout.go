package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
)

// clientReport writes a client run's report in the --format chosen: the
// opening and each interval as the run goes, the summary at its end.
type clientReport struct {
	format    string
	quiet     bool
	out       io.Writer
	target    transport.Target
	inProcess bool
	js        *report.JSONStream
	werr      error // the first error writing the report
	// noIntervals: the user turned intervals off (-i 0), and the client
	// was asked for some for the progress line only.
	noIntervals bool
}

func (w *clientReport) write(err error) {
	if w.werr == nil {
		w.werr = err
	}
}

// complete adds what the client adds to the result, at its start and its
// end.
func (w *clientReport) complete(res *result.Result) {
	res.Version = Version()
	res.Config.Target = w.target.String()
	res.Config.InProcess = w.inProcess
	if w.noIntervals {
		res.Config.ReportInterval = 0 // as asked
	}
}

// hook makes h hand w the opening and the intervals its format prints
// as they come.
func (w *clientReport) hook(cfg *client.Config, h *client.Funcs) {
	// Every format writes each interval as it ends (JSON's one document
	// too): the run keeps none, and its memory stays flat however long
	// it runs.
	cfg.StreamIntervals = true
	out, write := w.out, w.write
	switch w.format {
	case "json":
		w.js = report.NewJSONStream(out)
		js := w.js
		h.OnStart = func(res *result.Result) {
			opening := *res
			w.complete(&opening)
			write(js.Begin(&opening))
		}
		h.OnInterval = func(iv result.Interval) { write(js.Interval(iv)) }
	case "text":
		if !w.quiet {
			var conf result.Config // as run
			mix := client.WorkloadMix(cfg.Workload)
			h.OnStart = func(res *result.Result) {
				conf = res.Config
				write(report.WriteTextHeaderMix(out, res.Config, mix))
			}
			first := true
			h.OnInterval = func(iv result.Interval) {
				if first {
					write(report.WriteIntervalHeader(out, conf))
					first = false
				}
				write(report.WriteInterval(out, conf, iv))
			}
		}
	case "jsonl":
		h.OnInterval = func(iv result.Interval) { write(report.WriteJSONLInterval(out, iv)) }
	case "iperf":
		if !w.quiet {
			var mss uint32
			h.OnStart = func(res *result.Result) {
				if res.Config.TCP != nil {
					mss = res.Config.TCP.MSS
				}
				write(report.WriteIperfHeader(out, res.Config))
			}
			h.OnInterval = func(iv result.Interval) { write(report.WriteIperfInterval(out, iv, mss)) }
		}
	}
}

// openLog makes cfg.Log write the probe log to path (- for stdout), and
// returns what closes its file.
func openLog(cfg *client.Config, path string, stdout io.Writer) (closeLog func(), err error) {
	closeLog = func() {}
	if path == "" {
		return closeLog, nil
	}
	var lw io.Writer = stdout
	if path != "-" {
		lf, err := os.Create(path)
		if err != nil {
			return closeLog, usageError{fmt.Errorf("--log: %w", err)}
		}
		closeLog = func() { lf.Close() }
		lw = lf
	}
	if cfg.Log, err = client.NewLogWriter(lw); err != nil {
		return closeLog, fmt.Errorf("--log %s: %w", path, err)
	}
	return closeLog, nil
}

// reconnectNotes says on stderr when a session is lost and when a new one
// carries on.
func reconnectNotes(h *client.Funcs, stderr io.Writer, t transport.Target, limit time.Duration) {
	var mu sync.Mutex // flows lose their sessions each on its own thread
	h.OnReconnect = func(rc result.Reconnect) {
		mu.Lock()
		defer mu.Unlock()
		if rc.Resumed {
			fmt.Fprintf(stderr, "volley: reconnected to %s after %s: a new session carries on\n", t, report.Duration(rc.Gap))
			return
		}
		fmt.Fprintf(stderr, "volley: session with %s lost %ss into the run (%s), %s; reconnecting for up to %s\n",
			t, report.Seconds(rc.At), report.ReconnectReason(rc.Reason), report.InFlight(rc.InFlight), limit)
	}
}

// finish writes the summary of a run that ended and returns the command's
// error: a usage error for what the user can fix (no reflector, a bad
// configuration, a wrong key), exit 1 for a run that failed or measured
// nothing.
func (w *clientReport) finish(ctx context.Context, cfg *client.Config, logPath string, res *result.Result, runErr error) error {
	if res == nil {
		if errors.Is(runErr, client.ErrNoReflector) || errors.Is(runErr, client.ErrConfig) || errors.Is(runErr, client.ErrAuth) ||
			errors.Is(runErr, client.ErrForeignKey) {
			return usageError{runErr}
		}
		if ctx.Err() != nil {
			// A signal during the handshake: no session, no report.
			return exitError{ExitError, fmt.Errorf("interrupted before the reflector at %s answered: nothing was measured", w.target)}
		}
		return runErr
	}
	w.complete(res)
	w.summary(res)
	if cfg.Log != nil && cfg.Log.Err() != nil {
		w.write(fmt.Errorf("--log %s: %w", logPath, cfg.Log.Err()))
	}
	if runErr != nil {
		return exitError{ExitError, runErr}
	}
	if w.werr != nil {
		return fmt.Errorf("write report: %w", w.werr)
	}
	if res.Stopped == "interrupted" && res.Summary.Counts.Sent == 0 {
		// The report says what there is (nothing); the exit code that
		// nothing was measured.
		return exitError{ExitError, errors.New("interrupted before any probe was measured")}
	}
	return nil
}

// summary writes the report's end in w's format.
func (w *clientReport) summary(res *result.Result) {
	switch w.format {
	case "text":
		w.write(report.WriteSummary(w.out, res))
		if res.Histogram != nil {
			w.write(report.WriteHistogram(w.out, res.Histogram))
		}
	case "json":
		w.write(w.js.End(res))
	case "jsonl":
		w.write(report.WriteJSONLResult(w.out, res))
	case "iperf":
		w.write(report.WriteIperfSummary(w.out, res))
	case "dping":
		w.write(report.WriteDping(w.out, res))
	}
}
