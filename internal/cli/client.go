package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

type clientFlags struct {
	duration       time.Duration
	count          int64
	warmup         string
	size           int
	window         int
	timeout        time.Duration
	reportInterval time.Duration
	percentiles    string
	format         string
	histogram      bool
	quiet          bool
}

func newClientCmd(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "client [TARGET]",
		Short: "Measure against a reflector (with no TARGET, an in-process one on loopback)",
		Long: `Measure against the reflector at TARGET: HOST, HOST:PORT, [IPv6]:PORT or
udp://HOST[:PORT] (port 7766 unless given). With no TARGET, volley starts a
reflector inside the client on 127.0.0.1 and measures against it.

The run is closed-loop ping-pong: --window probes are in flight, and each reply
sends the next probe. A probe unanswered after --timeout is lost; a reply that
comes after that is counted late, and the probe stays lost.

Warm-up probes (--warmup 1s, or --warmup 100 for a count) go first and are
left out of every figure; --duration and --count count after them.

Loss is split into the way up and the way down using the reflector's count of
probes received, carried in every reply and exact at the end of the session.

Exit status: 0 done (also when stopped by SIGINT), 1 error (partial results are
still printed), 2 usage error or no reflector answering.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("client takes one TARGET, got %d: %s", len(args), strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			return runClient(cmd.Context(), cmd, target, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.DurationVarP(&f.duration, "duration", "t", 0, "how long to measure, after warm-up (default 5s unless --count is given)")
	fl.Int64VarP(&f.count, "count", "n", 0, "how many probes to measure, after warm-up (whichever of --duration and --count comes first ends the run)")
	fl.StringVar(&f.warmup, "warmup", "", "warm-up before measuring, left out of the results: a duration (2s) or a probe count (100)")
	fl.IntVarP(&f.size, "size", "l", client.DefaultSize, fmt.Sprintf("request size in bytes, the %d-byte header included", wire.HeaderLen))
	fl.IntVar(&f.window, "window", 1, "probes in flight")
	fl.DurationVar(&f.timeout, "timeout", client.DefaultTimeout, "how long a probe waits for its reply before it counts as lost")
	fl.DurationVarP(&f.reportInterval, "report-interval", "i", client.DefaultReportInterval, "length of each interval report; 0 turns them off")
	fl.StringVar(&f.percentiles, "percentiles", "50,90,99,99.9,99.99", "percentiles to report, comma-separated")
	fl.StringVar(&f.format, "format", "text", "output format: text, json or jsonl")
	fl.BoolVar(&f.histogram, "histogram", false, "print a histogram of RTT (log-spaced bins, with underflow and overflow)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the final report")
	return cmd
}

// config checks the flags and turns them into a client configuration.
func (f clientFlags) config(cmd *cobra.Command) (client.Config, error) {
	var cfg client.Config
	changed := cmd.Flags().Changed
	if f.duration < 0 || (changed("duration") && f.duration == 0) {
		return cfg, usagef("--duration %s: want a positive duration such as 10s", f.duration)
	}
	if changed("count") && f.count <= 0 {
		return cfg, usagef("--count %d: want at least 1", f.count)
	}
	if f.size < wire.HeaderLen {
		return cfg, usagef("--size %d is smaller than the header: the minimum is %d bytes", f.size, wire.HeaderLen)
	}
	if f.size > client.MaxSize {
		return cfg, usagef("--size %d is larger than a UDP datagram can carry: the maximum is %d bytes", f.size, client.MaxSize)
	}
	if f.window < 1 || f.window > client.MaxWindow {
		return cfg, usagef("--window %d: want 1 to %d", f.window, client.MaxWindow)
	}
	if f.timeout <= 0 {
		return cfg, usagef("--timeout %s: want a positive duration", f.timeout)
	}
	if f.reportInterval < 0 {
		return cfg, usagef("--report-interval %s: want a positive duration, or 0 for none", f.reportInterval)
	}
	switch f.format {
	case "text", "json", "jsonl":
	default:
		return cfg, usagef("--format %q: want text, json or jsonl", f.format)
	}
	pcts, err := parsePercentiles(f.percentiles)
	if err != nil {
		return cfg, err
	}
	cfg = client.Config{
		Duration:       f.duration,
		Count:          uint64(f.count),
		Size:           f.size,
		Window:         f.window,
		Timeout:        f.timeout,
		ReportInterval: f.reportInterval,
		Percentiles:    pcts,
	}
	if f.reportInterval == 0 {
		cfg.ReportInterval = -1
	}
	if f.histogram {
		cfg.Histogram = 10
	}
	if f.warmup != "" {
		if n, err := strconv.ParseUint(f.warmup, 10, 64); err == nil {
			cfg.WarmupCount = n
		} else if d, err := time.ParseDuration(f.warmup); err == nil && d >= 0 {
			cfg.WarmupDuration = d
		} else {
			return cfg, usagef("--warmup %q: want a duration (2s) or a probe count (100)", f.warmup)
		}
	}
	return cfg, nil
}

func parsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, field := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || p < 0 || p > 100 {
			return nil, usagef("--percentiles %q: bad value %q (want numbers from 0 to 100, comma-separated)", s, field)
		}
		out = append(out, p)
	}
	return out, nil
}

func runClient(ctx context.Context, cmd *cobra.Command, target string, f clientFlags, stdout, stderr io.Writer) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	inProcess := target == ""
	var wg sync.WaitGroup
	if inProcess {
		// The zero-set-up run: a reflector on loopback inside this process.
		pc, err := transport.ListenUDP("127.0.0.1:0")
		if err != nil {
			return err
		}
		refl, err := reflector.New(reflector.Config{ReportInterval: -1})
		if err != nil {
			pc.Close()
			return err
		}
		rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		wg.Go(func() { refl.Serve(rctx, pc) })
		defer func() {
			stop()
			wg.Wait()
			pc.Close()
		}()
		target = "udp://" + pc.LocalAddr().String()
		if !f.quiet {
			fmt.Fprintf(stderr, "volley: no target given: measuring against an in-process reflector at %s\n", target)
		}
	}
	t, err := transport.ParseTarget(target)
	if err != nil {
		return usageError{err}
	}
	conn, err := transport.Dial(ctx, t)
	if err != nil {
		return usageError{err}
	}
	defer conn.Close()

	var werr error // the first error writing the report
	write := func(err error) {
		if werr == nil {
			werr = err
		}
	}
	switch f.format {
	case "text":
		if !f.quiet {
			cfg.OnStart = func(c result.Config) { write(report.WriteTextHeader(stdout, c)) }
			first := true
			cfg.OnInterval = func(iv result.Interval) {
				if first {
					write(report.WriteIntervalHeader(stdout))
					first = false
				}
				write(report.WriteInterval(stdout, iv))
			}
		}
	case "jsonl":
		cfg.OnInterval = func(iv result.Interval) { write(report.WriteJSONLInterval(stdout, iv)) }
	}
	res, runErr := client.Run(ctx, cfg, conn)
	if res == nil {
		if errors.Is(runErr, client.ErrNoReflector) || errors.Is(runErr, client.ErrConfig) {
			return usageError{runErr}
		}
		if ctx.Err() != nil {
			return nil // interrupted before anything was measured
		}
		return runErr
	}
	res.Version = Version()
	res.Config.Target = t.String()
	res.Config.InProcess = inProcess
	switch f.format {
	case "text":
		write(report.WriteSummary(stdout, res))
		if res.Histogram != nil {
			write(report.WriteHistogram(stdout, res.Histogram))
		}
	case "json":
		write(report.WriteJSON(stdout, res))
	case "jsonl":
		write(report.WriteJSONLResult(stdout, res))
	}
	if runErr != nil {
		return exitError{ExitError, runErr}
	}
	if werr != nil {
		return fmt.Errorf("write report: %w", werr)
	}
	return nil
}
