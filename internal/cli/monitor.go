package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/exporter"
	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/units"
)

// monitorLong is the monitor's --help.
const monitorLong = `Measure targets for ever and export the figures to Prometheus.

Each target (a URL as volley client takes it: udp://, tcp://, unix://,
dbus://) is measured continuously on its own schedule, open loop at --rate
probes/s, through one session that is reopened whenever it is lost (probes
sent meanwhile count lost). Targets come from the arguments and from a YAML
file (--targets), which is read again on SIGHUP and whenever it changes; a
bad file is reported and the last good set kept. A target whose host is a
DNS name is resolved again every --resolve-every, each address a target of
its own (NAME/ADDRESS); a failed lookup keeps the last addresses.

/metrics on --metrics-listen has, per target, RTT, one-way delay, response
time and IPDV histograms, counters of probes sent, received, lost (up and
down), duplicated, reordered and late, and the monitor's own health. The
first line on stdout is "metrics on http://ADDRESS/metrics". With --once,
each target is measured once for --duration (default 5s) and reported in
--format; with --format jsonl, a JSON line per target per interval goes to
stdout as the monitor runs. See docs/monitor.md.`

// monitorFlags are the flags volley monitor and volley agent share: the
// targets' schedule and the exporter.
type monitorFlags struct {
	targets       string
	rate          ppsFlag
	size          byteSize
	replySize     byteSize
	interval      time.Duration
	timeout       time.Duration
	duration      time.Duration
	every         time.Duration
	poisson       bool
	maxProbeRate  ppsFlag
	resolveEvery  time.Duration
	metricsListen string
	probeAllow    []string
	// volley monitor only: volley agent has the server's.
	key, keyFile string
	once         bool
	format       string
	quiet        bool
}

// register defines the flags; agent leaves out those the server's flags
// already have (--key, --key-file, --quiet, --format).
func (f *monitorFlags) register(cmd *cobra.Command, agent bool) {
	fl := cmd.Flags()
	fl.SortFlags = false
	if !agent {
		fl.StringVar(&f.targets, "targets", "", "YAML file of targets with labels and schedules; read again on SIGHUP and when it changes")
	}
	f.rate = monitor.DefaultRate
	fl.Var(&f.rate, "rate", "probes/s to each target, open loop (k suffix: thousands)")
	fl.Var(&f.size, "size", "probe size in bytes, header included (K suffix: KiB; default the client's)")
	fl.Var(&f.replySize, "reply-size", "reply size in bytes (default: the probe's)")
	durationVarP(fl, &f.interval, "interval", "", monitor.DefaultInterval, false, "how often each target's figures are published")
	durationVarP(fl, &f.timeout, "timeout", "", monitor.DefaultTimeout, false, "how long a probe waits for its reply before it is lost")
	durationVarP(fl, &f.duration, "duration", "", 0, false, "measure in rounds of this long, one every --every (0: continuously); with --once, how long (default 5s)")
	durationVarP(fl, &f.every, "every", "", 0, false, "with --duration: start a round this often (default: back to back)")
	fl.BoolVar(&f.poisson, "poisson", false, "draw the gaps between probes from an exponential distribution (Poisson arrivals)")
	f.maxProbeRate = monitor.DefaultMaxRate
	fl.Var(&f.maxProbeRate, "max-probe-rate", "most probes/s of all targets together; over it every target's rate is scaled down")
	durationVarP(fl, &f.resolveEvery, "resolve-every", "", monitor.DefaultResolveEvery, false, "resolve targets named by DNS again this often")
	fl.StringVar(&f.metricsListen, "metrics-listen", ":9766", `address of the HTTP server for /metrics (and /probe); "none": no server`)
	fl.StringSliceVar(&f.probeAllow, "probe-allow", nil, "turn /probe?target=URL on for targets in these networks (CIDRs; local: unix:// and dbus://)")
	if agent {
		return
	}
	fl.StringVar(&f.key, "key", "", "shared key of the reflectors (HMAC-SHA-256; prefer --key-file)")
	fl.StringVar(&f.keyFile, "key-file", "", "read the shared key from this file")
	fl.BoolVar(&f.once, "once", false, "measure each target once, for --duration (default 5s), report and exit")
	fl.StringVar(&f.format, "format", "text", "text, or jsonl (a JSON line per target per interval); with --once also json")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no line per event on stderr (targets lost and back, reloads)")
}

func newMonitorCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &monitorFlags{}
	cmd := &cobra.Command{
		Use:   "monitor [URL...]",
		Short: "Measure targets for ever; export to Prometheus",
		Long:  monitorLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMonitor(cmd, f, args, stdout, stderr)
		},
	}
	f.register(cmd, false)
	return cmd
}

// check checks the flags that stand alone.
func (f *monitorFlags) check() error {
	switch {
	case f.rate <= 0:
		return usagef("--rate %s: want a positive number of probes/s", f.rate)
	case f.maxProbeRate <= 0:
		return usagef("--max-probe-rate %s: want a positive number of probes/s", f.maxProbeRate)
	case f.interval < minReportInterval:
		return usagef("--interval %s: want at least %s", units.FormatDuration(f.interval), units.FormatDuration(minReportInterval))
	case f.resolveEvery < time.Second:
		return usagef("--resolve-every %s: want at least 1s", units.FormatDuration(f.resolveEvery))
	case f.every != 0 && f.duration == 0:
		return usagef("--every %s: it spaces rounds; give their length with --duration", units.FormatDuration(f.every))
	case f.every != 0 && f.every < f.duration:
		return usagef("--every %s: want at least --duration (%s)", units.FormatDuration(f.every), units.FormatDuration(f.duration))
	}
	switch f.format {
	case "text", "jsonl":
	case "json":
		if !f.once {
			return usagef("--format json: one document per run needs --once; jsonl writes a line per interval as the monitor runs")
		}
	default:
		return usagef("--format %q: want text, json (with --once) or jsonl", f.format)
	}
	return nil
}

// schedule is the targets' schedule the flags give (a file's defaults and
// entries may change it).
func (f *monitorFlags) schedule(key []byte) monitor.Schedule {
	return monitor.Schedule{Rate: float64(f.rate), Poisson: f.poisson, Size: int(f.size), ReplySize: int(f.replySize),
		Timeout: f.timeout, Interval: f.interval, Duration: f.duration, Every: f.every, Key: key}
}

// monitorRun is what volley monitor and volley agent run: the monitor,
// the watcher that keeps its set, and the metrics server.
type monitorRun struct {
	f       *monitorFlags
	stdout  io.Writer
	logf    func(format string, args ...any)
	sink    *exporter.Sink
	health  *exporter.Health
	jsonl   *jsonlSink
	mon     *monitor.Monitor
	watcher *monitor.Watcher
	srv     *exporter.Server // the metrics server, nil with none
	ln      net.Listener     // its listener
	hup     chan os.Signal   // SIGHUP: read the files again
}

// runMonitor runs volley monitor.
func runMonitor(cmd *cobra.Command, f *monitorFlags, args []string, stdout, stderr io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	if len(args) == 0 && f.targets == "" {
		return usagef("no targets: give URLs, or a file with --targets")
	}
	key, err := loadKey(f.key, f.keyFile)
	if err != nil {
		return err
	}
	base := f.schedule(key)
	var fixed []monitor.Target
	for _, a := range args {
		fixed = append(fixed, monitor.Target{Name: a, URL: a, Source: "flag", Schedule: base})
	}
	if f.once {
		return runOnce(cmd.Context(), f, fixed, base, stdout, stderr)
	}
	r, err := newMonitorRun(f, stdout, stderr)
	if err != nil {
		return err
	}
	return r.run(cmd.Context(), monitor.WatchConfig{Targets: fixed, File: f.targets,
		FileOptions: monitor.FileOptions{Base: base}}, nil)
}

// newMonitorRun makes the sinks, the monitor and the metrics listener the
// flags ask for; nothing runs yet.
func newMonitorRun(f *monitorFlags, stdout, stderr io.Writer) (*monitorRun, error) {
	r := &monitorRun{f: f, stdout: stdout, logf: func(string, ...any) {}}
	if !f.quiet {
		l := log.New(stderr, "volley: ", 0)
		r.logf = func(format string, args ...any) { l.Printf(format, args...) }
	}
	var ss sinks
	var health monitor.Health // nil: nobody hears it
	if f.metricsListen != "none" && f.metricsListen != "" {
		if _, _, err := net.SplitHostPort(f.metricsListen); err != nil {
			return nil, usagef("--metrics-listen %s: want HOST:PORT or :PORT, or none", f.metricsListen)
		}
		r.sink, r.health = exporter.NewSink(), exporter.NewHealth()
		ss, health = append(ss, r.sink), r.health
	}
	if f.format == "jsonl" {
		r.jsonl = newJSONLSink(stdout)
		ss = append(ss, r.jsonl)
	}
	if len(ss) == 0 {
		return nil, usagef("--metrics-listen none and --format text: the figures would go nowhere (want a metrics address, --format jsonl or --once)")
	}
	r.mon = monitor.New(monitor.Config{Sink: ss, Health: health, MaxRate: float64(f.maxProbeRate), Log: r.logf})
	if r.sink != nil {
		// Opened now: a port in use ends the command before anything runs.
		if err := r.server(); err != nil {
			return nil, err
		}
	}
	// From now on a SIGHUP reads the files again (main leaves it to us).
	r.hup = make(chan os.Signal, 1)
	signal.Notify(r.hup, syscall.SIGHUP)
	return r, nil
}

// close lets go of what newMonitorRun took, for a run that did not run.
func (r *monitorRun) close() {
	signal.Stop(r.hup)
	if r.ln != nil {
		r.ln.Close()
	}
}

// run watches the targets, serves the metrics and measures until ctx is
// done. wc is the watcher's configuration less what run adds. The first
// set's error ends the run as a usage error (a bad file, a bad target),
// unless wait says to wait for a later one.
func (r *monitorRun) run(ctx context.Context, wc monitor.WatchConfig, wait func(error) bool) error {
	defer signal.Stop(r.hup)
	// The first load's lines wait: when it fails, its error is the one
	// line said ("keeping the last good set" would be wrong).
	var held []string
	var loaded atomic.Bool
	var mu sync.Mutex
	wc.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !loaded.Load() {
			held = append(held, fmt.Sprintf(format, args...))
			return
		}
		r.logf(format, args...)
	}
	wc.Reload, wc.ResolveEvery, wc.Set = r.hup, r.f.resolveEvery, r.mon.Set
	if r.health != nil {
		wc.Health = r.health
	}
	r.watcher = monitor.NewWatcher(wc)
	err := r.watcher.Load(ctx)
	if err != nil && (wait == nil || !wait(err)) {
		if r.ln != nil {
			r.ln.Close()
		}
		return usageError{err} // a bad file or target at the start is the user's to fix now
	}
	if r.ln != nil {
		fmt.Fprintf(r.stdout, "metrics on http://%s/metrics\n", r.ln.Addr())
	}
	mu.Lock()
	loaded.Store(true)
	for _, l := range held {
		r.logf("%s", l)
	}
	mu.Unlock()
	if err != nil && !slices.Contains(held, err.Error()) {
		r.logf("%v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	go func() { errs <- r.watcher.Run(ctx) }()
	go func() { errs <- r.mon.Run(ctx) }()
	n := 2
	if r.srv != nil {
		go func() { errs <- r.srv.Serve(ctx, r.ln) }()
		n++
	}
	err = nil // a first set refused while waiting was said
	for range n {
		if e := <-errs; e != nil && !errors.Is(e, context.Canceled) {
			err = errors.Join(err, e)
		}
		cancel() // one part ending ends them all
	}
	if r.jsonl != nil {
		err = errors.Join(err, r.jsonl.close())
	}
	return err
}

// server makes the metrics server and opens its listener.
func (r *monitorRun) server() error {
	reg, err := exporter.NewRegistry(r.sink, r.health)
	if err != nil {
		return err
	}
	r.srv = &exporter.Server{Gatherer: reg}
	if len(r.f.probeAllow) > 0 {
		allow, local, err := exporter.ParseAllow(strings.Join(r.f.probeAllow, ","))
		if err != nil {
			return usagef("--probe-allow: %v", err)
		}
		r.srv.Prober = &exporter.Prober{Allow: allow, Local: local, Probe: monitor.Probe, Log: r.logf}
	}
	if r.ln, err = net.Listen("tcp", r.f.metricsListen); err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", r.f.metricsListen, err)
	}
	return nil
}

// onceResult is one target's measurement under --once.
type onceResult struct {
	Target string            `json:"target"`
	Labels map[string]string `json:"labels,omitempty"`
	Result *result.Result    `json:"result,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// onceAtOnce is how many targets --once measures at the same time; the
// others wait their turn.
const onceAtOnce = 64

// runOnce measures every target once, at the same time, and reports each
// in --format: text and json once all are done, jsonl's intervals as they
// come. It fails when a target did not answer.
func runOnce(ctx context.Context, f *monitorFlags, fixed []monitor.Target, base monitor.Schedule, stdout, stderr io.Writer) error {
	var ts []monitor.Target
	w := monitor.NewWatcher(monitor.WatchConfig{Targets: fixed, File: f.targets, FileOptions: monitor.FileOptions{Base: base},
		Set: func(set []monitor.Target) error { ts = set; return nil }})
	if err := w.Load(ctx); err != nil {
		return usageError{err}
	}
	if len(ts) == 0 {
		return usagef("no targets to measure (a DNS name that did not resolve?)")
	}
	var lines *jsonlSink
	if f.format == "jsonl" {
		lines = newJSONLSink(stdout)
	}
	out := make([]onceResult, len(ts))
	var wg sync.WaitGroup
	slots := make(chan struct{}, onceAtOnce)
	for i := range ts {
		t := &ts[i]
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			var rec monitor.Recorder
			if lines != nil {
				rec = lines.Start(t)
			}
			res, err := monitor.Once(ctx, *t, rec)
			o := onceResult{Target: t.Name, Labels: t.Labels, Result: res}
			if res != nil {
				res.Version, res.Config.Target = Version(), t.URL
			}
			if err != nil {
				o.Error = err.Error()
			}
			out[i] = o
		})
	}
	wg.Wait()
	var werr error
	if lines != nil {
		werr = lines.close()
	}
	werr = errors.Join(werr, writeOnce(stdout, f.format, out))
	var silent []string
	for _, o := range out {
		if o.Result == nil || o.Result.Summary.Counts.Received == 0 {
			silent = append(silent, o.Target)
		}
		if o.Error != "" && !f.quiet {
			fmt.Fprintf(stderr, "volley: %s\n", oneLine(o.Error))
		}
	}
	if werr != nil {
		return werr
	}
	if len(silent) > 0 {
		return exitError{code: ExitError, err: fmt.Errorf("%d of %d targets did not answer: %s", len(silent), len(out), strings.Join(silent, ", "))}
	}
	return nil
}

// writeOnce writes the --once reports in format.
func writeOnce(w io.Writer, format string, out []onceResult) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "jsonl":
		for _, o := range out {
			var err error
			if o.Result != nil {
				err = report.WriteJSONLTargetResult(w, o.Target, o.Labels, o.Result)
			} else {
				err = report.WriteJSONLTargetError(w, o.Target, o.Labels, o.Error)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for i, o := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s\n", o.Target)
		if o.Result == nil {
			fmt.Fprintf(w, "no result: %s\n", oneLine(o.Error))
			continue
		}
		if err := report.WriteText(w, o.Result); err != nil {
			return err
		}
	}
	return nil
}
