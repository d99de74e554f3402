package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/units"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

type clientFlags struct {
	duration       time.Duration
	count          int64
	warmup         string
	size           byteSize
	window         int
	timeout        time.Duration
	reportInterval time.Duration
	percentiles    string
	format         string
	histogram      bool
	quiet          bool
	rate           float64
	rateF          rateFlag
	sendInterval   time.Duration
	poisson        bool
	seed           uint64
	burst          int
	period         time.Duration
	threshold      time.Duration
	replySize      byteSize
	hold           time.Duration
	oneway         bool
	parallel       int
	workload       string
	key, keyFile   string
	reconnect      time.Duration
	log            string
	timestamps     string
	busyPoll       bool
	sched          schedFlags
	// Socket options.
	nodelay, df    bool
	quickAck       bool
	v4, v6         bool
	congestion     string
	buffer         byteSize
	tos, dscp, ttl int
	bind, iface    string
}

func newClientCmd(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "client [TARGET]",
		Short: "Measure against a reflector (with no TARGET, an in-process one on loopback)",
		Long: `Measure against the reflector at TARGET, one of (port 7766 unless given):

  HOST, HOST:PORT, [IPv6]:PORT, udp://HOST[:PORT]   UDP
  tcp://HOST[:PORT]                                  TCP, framed messages
  unix:///PATH, unix://@NAME                         Unix stream socket
  unixgram:///PATH, unixgram://@NAME                 Unix datagram socket
  dbus://session, dbus://system, dbus:ADDRESS        D-Bus method calls; add
                                                     #NAME for a reflector not
                                                     named net.volley.Reflector

With no TARGET, volley starts a reflector inside the client on 127.0.0.1 and
measures against it.

By default the run is closed-loop ping-pong: --window probes are in flight, and
each reply sends the next probe. --burst N sends N such probes back to back at
the start of every --period (iperf 2's bounceback).

With --rate or --send-interval the run is open-loop: probes leave on schedule
whether or not replies came back, and latency is reported twice, from the
actual and from the scheduled send time, so a stall of the sender or the
reflector shows up instead of being hidden (no coordinated omission). After a
stall the missed slots are sent back to back, but those more than ten gaps
(and at least 5ms) behind are skipped and counted, never sent in a flood.

With --oneway the reflector sends nothing back: it measures each probe's
one-way delay, loss, duplicates and reordering, prints them per interval (per
N probes with its --report-every N), and returns its totals when the session
closes, so the client prints the usual report, with the up direction filled.

A probe unanswered after --timeout is lost; a reply that comes after that is
counted late, and the probe stays lost.

A reflector that restarts answers the old session's probes with "session
unknown", and the run ends at once with its partial results, as it does when
the reflector's port becomes unreachable or no reply comes for
max(3 x --timeout, 3s). With --reconnect the client instead declares the
probes in flight lost, sends a Hello every --timeout (at most 100ms) until a
reflector answers, and carries on in a new session (an open-loop sender keeps
its schedule through the gap, and those probes are lost); the report lists
each gap. Loss per direction stays exact for the last session and is
estimated for the lost ones.

Warm-up probes (--warmup 1s, or --warmup 100 for a count) go first and are
left out of every figure; --duration and --count count after them.

Loss is split into the way up and the way down using the reflector's count of
probes received, carried in every reply and exact at the end of the session.

Every write to the reflector has a deadline: one that does not finish within
max(3 x --timeout, 3s), or within max(--timeout, 1s) of the end of the run or
of a signal (a stream reflector that stopped reading), ends the run with an
error and the partial results.

A signal (SIGINT, SIGTERM, SIGHUP) ends the run with its report, after at most
max(--timeout, 1s) for the probes in flight and the reflector's final count;
once volley says it is still finishing (after half a second), a second signal
quits at once, without the report (exit 130).

Exit status: 0 done (also when stopped by a signal), 1 error (partial results
are still printed) or stopped by a signal before anything was measured, 2 usage
error, a wrong or missing key, or no reflector answering, 130 a second signal.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := optionalValueArgs(cmd, args, "reconnect", func(a string) bool {
				_, err := units.ParseDuration(a, true)
				return err == nil
			}); err != nil {
				return err
			}
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
	durationVarP(fl, &f.duration, "duration", "t", 0, true, "how long to measure, after warm-up; a bare number is seconds, as iperf's -t (default 5s unless --count is given; D-Bus: 1000 messages, as dping)")
	fl.Int64VarP(&f.count, "count", "n", 0, "how many probes to measure, after warm-up (whichever of --duration and --count comes first ends the run)")
	fl.StringVar(&f.warmup, "warmup", "", "warm-up before measuring, left out of the results: a duration (2s) or a probe count (100)")
	f.size = client.DefaultSize
	fl.VarP(&f.size, "size", "l", fmt.Sprintf("request size in bytes (K and M suffixes: KiB, MiB), the %d-byte header included; at most 65000 over UDP, 4M over streams", wire.HeaderLen))
	fl.Var(&f.replySize, "reply-size", "reply size in bytes, header included (default: the request's size)")
	durationVarP(fl, &f.hold, "hold", "", 0, false, "ask the reflector to wait this long before each reply (left out of its response time)")
	fl.StringVar(&f.workload, "workload", "", "a YAML or JSON file of entries drawn per probe with --seed, each a weight and a size, and optionally a name, reply_size, hold and gap (see examples/workload.yaml); results per entry")
	fl.IntVar(&f.window, "window", 1, "probes in flight")
	fl.IntVarP(&f.parallel, "parallel", "P", 1, "run N flows at once, each its own socket, session and thread; per-flow and total results")
	fl.Var(&f.rateF, "rate", fmt.Sprintf("open loop: send this many probes/s (k, M: thousands, millions; more than 0, at most %s) on schedule, whether or not replies came back; max: as fast as the client can send", units.FormatRate(client.MaxRate)))
	durationVarP(fl, &f.sendInterval, "send-interval", "", 0, false, "open loop: send a probe every interval (instead of --rate)")
	fl.BoolVar(&f.poisson, "poisson", false, "with --rate or --send-interval: exponential gaps with that mean")
	fl.Uint64Var(&f.seed, "seed", 0, "seed for --poisson (default: a random one, recorded in the result)")
	fl.BoolVar(&f.oneway, "oneway", false, "one-way: the reflector does not reply but measures delay and loss, and returns its results at the end (open loop; --rate 1000 unless given)")
	fl.IntVar(&f.burst, "burst", 0, "closed loop: send N probes back to back every --period (iperf 2 bounceback)")
	durationVarP(fl, &f.period, "period", "", time.Second, false, "with --burst: how often a burst starts; 0 for no pause")
	durationVarP(fl, &f.threshold, "threshold", "", 0, false, "stop at the first RTT above this, and say which probe and when (without --warmup, the first 10 probes, a cold path's, are not judged; they still count)")
	durationVarP(fl, &f.timeout, "timeout", "", client.DefaultTimeout, false, fmt.Sprintf("how long a probe waits for its reply before it counts as lost, %s to %s", units.FormatDuration(minTimeout), units.FormatDuration(maxTimeout)))
	durationVarP(fl, &f.reconnect, "reconnect", "", 0, false, fmt.Sprintf("when the reflector restarts, goes silent or goes away, open a new session and carry on, trying for up to this long, at least %s (--reconnect alone: 30s; a value needs the =, as in --reconnect=2m)", units.FormatDuration(minReconnect)))
	fl.Lookup("reconnect").NoOptDefVal = "30s"
	durationVarP(fl, &f.reportInterval, "report-interval", "i", client.DefaultReportInterval, true, fmt.Sprintf("length of each interval report, at least %s; a bare number is seconds, as iperf's -i; 0 turns them off", units.FormatDuration(minReportInterval)))
	fl.StringVar(&f.percentiles, "percentiles", "50,90,99,99.9,99.99", "percentiles to report, comma-separated")
	fl.StringVar(&f.key, "key", "", "shared key: sign every message with HMAC-SHA-256 and accept only signed replies (visible to other users in the process list: prefer --key-file)")
	fl.StringVar(&f.keyFile, "key-file", "", "read the shared key from this file")
	fl.BoolVar(&f.nodelay, "nodelay", true, "TCP: turn Nagle's algorithm off (TCP_NODELAY), as iperf 2 does; --nodelay=false leaves it on")
	fl.BoolVar(&f.quickAck, "quickack", true, "TCP: the reflector acknowledges each request at once (TCP_QUICKACK after every read, as iperf 2's bounceback); --quickack=false asks it to leave delayed ACKs on")
	fl.StringVar(&f.congestion, "congestion", "", "TCP congestion control algorithm (TCP_CONGESTION), such as cubic or bbr")
	fl.Var(&f.buffer, "buffer", fmt.Sprintf("socket send and receive buffers in bytes (K, M suffixes), %s to %s; the kernel's grant is reported (default: 4M over UDP, the system's over TCP)", units.FormatBytes(minBuffer), units.FormatBytes(maxBuffer)))
	optIntVar(fl, &f.tos, "tos", -1, "IP type of service / IPv6 traffic class byte, 0 to 255")
	optIntVar(fl, &f.dscp, "dscp", -1, "DSCP code point, 0 to 63 (the TOS byte's upper six bits)")
	optIntVar(fl, &f.ttl, "ttl", 0, "IP time to live / IPv6 hop limit, 1 to 255")
	fl.BoolVar(&f.df, "df", false, "UDP: set don't fragment (path MTU discovery); a probe larger than the path's MTU then fails to send")
	fl.StringVar(&f.bind, "bind", "", "send from this local address (ADDR or ADDR:PORT)")
	fl.StringVar(&f.iface, "interface", "", "send through this network interface only (SO_BINDTODEVICE; needs CAP_NET_RAW)")
	fl.BoolVarP(&f.v4, "ipv4", "4", false, "use IPv4 only")
	fl.BoolVarP(&f.v6, "ipv6", "6", false, "use IPv6 only")
	fl.StringVar(&f.format, "format", "text", "output format: text, json, jsonl, iperf (iperf 2 bounceback's lines and histogram), or dping (dping's MESSAGES and LATENCY lines, in µs)")
	f.sched.register(cmd, "measuring threads (each flow's receiver, and its sender in open loop)")
	fl.BoolVar(&f.busyPoll, "busy-poll", false, "spin on the socket for replies instead of sleeping in the kernel (UDP, TCP, Unix stream): lower, steadier latency for a core per flow; use it on the reflector too")
	fl.StringVar(&f.timestamps, "timestamps", "auto", "where probe times come from: user (volley's clock readings), kernel (SO_TIMESTAMPING, UDP), hardware (the NIC's; turns them on on the interface), auto (kernel where the socket has them, else user)")
	fl.StringVar(&f.log, "log", "", "write a CSV line per probe to this file (- for stdout, and the report then goes to stderr): sequence, status, T1..T4 and the delays, streamed and complete also after SIGINT")
	fl.BoolVar(&f.histogram, "histogram", false, "print a histogram of RTT (log-spaced bins, with underflow and overflow)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the final report")
	setGroupedUsage(cmd, clientFlagGroups)
	return cmd
}

// config checks the flags and turns them into a client configuration.
func (f clientFlags) config(cmd *cobra.Command, t transport.Target) (client.Config, error) {
	var cfg client.Config
	changed := cmd.Flags().Changed
	f.rate = f.rateF.pps
	if f.rateF.max {
		if f.poisson {
			return cfg, usagef("--rate max has no schedule to draw Poisson gaps for")
		}
		f.rate = client.MaxRate // sizes the probe history; nothing is paced
	}
	// The socket flags' ranges are checked here, before the in-process
	// reflector starts; dialOptions checks what the target allows.
	if err := checkSocketFlags(cmd, f.tos, f.ttl, f.buffer, f.congestion); err != nil {
		return cfg, err
	}
	switch {
	case changed("dscp") && (f.dscp < 0 || f.dscp > 63):
		return cfg, usagef("--dscp %d: want 0 to 63", f.dscp)
	case f.dscp >= 0 && f.tos >= 0:
		return cfg, usagef("give --tos or --dscp, not both")
	}
	if f.duration < 0 || (changed("duration") && f.duration == 0) {
		return cfg, usagef("--duration %s: want a positive duration such as 10s (a bare number is seconds)", units.FormatDuration(f.duration))
	}
	if changed("count") && f.count <= 0 {
		return cfg, usagef("--count %d: want at least 1", f.count)
	}
	mode, ok := tstamp.ParseMode(f.timestamps)
	if !ok {
		return cfg, usagef("--timestamps %q: want user, kernel, hardware or auto", f.timestamps)
	}
	if mode == tstamp.Kernel || mode == tstamp.Hardware {
		// Said here, before any socket, so that no hint sends the user
		// from one refused mode to another.
		switch {
		case t.Scheme != "udp":
			return cfg, usagef("--timestamps %s: %s has no stamps per message (only udp:// targets take kernel and hardware stamps); over %s, --timestamps user or auto (the default) times with volley's clock", mode, t.Scheme, t.Scheme)
		case f.oneway:
			return cfg, usagef("--timestamps %s does not mix with --oneway: the reflector times one-way probes against the client's clock reading; --timestamps user or auto (the default)", mode)
		}
	}
	if f.size < wire.HeaderLen {
		return cfg, usagef("--size %s is smaller than the header: the minimum is %d bytes", f.size, wire.HeaderLen)
	}
	maxMsg := client.MaxSize
	if t.Stream() || t.Scheme == "dbus" {
		maxMsg = transport.StreamMaxMessage
	}
	if t.Scheme == "dbus" && !changed("count") && !changed("duration") {
		f.count = 1000 // dping's default
	}
	if int(f.size) > maxMsg {
		return cfg, usagef("--size %s is too large: the maximum over %s is %d bytes (%s)", f.size, strings.ToUpper(t.Scheme), maxMsg, byteSize(maxMsg))
	}
	if changed("reply-size") && (f.replySize < wire.HeaderLen || int(f.replySize) > maxMsg) {
		return cfg, usagef("--reply-size %s: want %d to %d bytes (%s) over %s, header included", f.replySize, wire.HeaderLen, maxMsg, byteSize(maxMsg), strings.ToUpper(t.Scheme))
	}
	if f.hold < 0 || (changed("hold") && (f.hold < time.Microsecond || f.hold > maxHold)) {
		return cfg, usagef("--hold %s: want 1µs to %s (the reflector grants at most its --max-hold, 1s unless set)", units.FormatDuration(f.hold), units.FormatDuration(maxHold))
	}
	if f.window < 1 || f.window > client.MaxWindow {
		return cfg, usagef("--window %d: want 1 to %d", f.window, client.MaxWindow)
	}
	if f.parallel < 1 || f.parallel > maxParallel {
		return cfg, usagef("--parallel %d: want 1 to %d", f.parallel, maxParallel)
	}
	if changed("reconnect") && f.reconnect < minReconnect {
		return cfg, usagef("--reconnect=%s: want at least %s (a Hello goes every --timeout, at most 100ms)", units.FormatDuration(f.reconnect), units.FormatDuration(minReconnect))
	}
	if f.busyPoll && t.Scheme != "udp" && !t.Stream() {
		return cfg, usagef("--busy-poll is for udp://, tcp:// and unix:// targets (busy polling spins on a socket)")
	}
	if f.reconnect > 0 && t.Stream() {
		return cfg, usagef("--reconnect is for udp:// and unixgram:// targets: a %s connection that broke is not reopened", t.Scheme)
	}
	if f.reconnect > 0 && f.oneway {
		return cfg, usagef("--reconnect does not mix with --oneway: a one-way run's results live in the reflector's session, and a restart loses them")
	}
	if f.timeout < minTimeout || f.timeout > maxTimeout {
		return cfg, usagef("--timeout %s: want %s to %s", units.FormatDuration(f.timeout), units.FormatDuration(minTimeout), units.FormatDuration(maxTimeout))
	}
	if err := checkReportInterval(f.reportInterval); err != nil {
		return cfg, err
	}
	switch f.format {
	case "text", "json", "jsonl", "iperf", "dping":
	default:
		return cfg, usagef("--format %q: want text, json, jsonl, iperf or dping", f.format)
	}
	if f.format == "iperf" && !changed("percentiles") {
		f.percentiles = "5,95,99.7" // the points iperf 2 prints with its histogram
	}
	pcts, err := parsePercentiles(f.percentiles)
	if err != nil {
		return cfg, err
	}
	switch {
	case changed("rate") && !f.rateF.max && (f.rate <= 0 || f.rate > client.MaxRate):
		return cfg, usagef("--rate %s: want more than 0 and at most %s probes/s, or max", &f.rateF, units.FormatRate(client.MaxRate))
	case f.sendInterval < 0 || (changed("send-interval") && f.sendInterval < time.Microsecond):
		return cfg, usagef("--send-interval %s: want at least 1µs", f.sendInterval)
	case f.rate > 0 && f.sendInterval > 0:
		return cfg, usagef("--rate and --send-interval both given: want one of them")
	case f.poisson && f.rate == 0 && f.sendInterval == 0:
		return cfg, usagef("--poisson needs --rate or --send-interval")
	case changed("seed") && !f.poisson && f.workload == "":
		return cfg, usagef("--seed is for --poisson and --workload")
	case f.workload != "" && (changed("size") || changed("reply-size") || changed("hold") || f.oneway):
		return cfg, usagef("--workload sets sizes and holds itself: it does not mix with --size, --reply-size, --hold or --oneway")
	case f.burst < 0 || (changed("burst") && f.burst == 0):
		return cfg, usagef("--burst %d: want at least 1", f.burst)
	case f.burst > 0 && (f.rate > 0 || f.sendInterval > 0):
		return cfg, usagef("--burst is closed-loop: it does not mix with --rate or --send-interval")
	case changed("period") && f.burst == 0:
		return cfg, usagef("--period needs --burst")
	case f.period < 0:
		return cfg, usagef("--period %s: want a duration, or 0 for no pause", f.period)
	case f.threshold < 0 || (changed("threshold") && f.threshold == 0):
		return cfg, usagef("--threshold %s: want a positive duration", f.threshold)
	case f.oneway && (f.burst > 0 || changed("reply-size") || changed("hold") || changed("threshold") || changed("window")):
		return cfg, usagef("--oneway gets no replies: it does not mix with --burst, --reply-size, --hold, --threshold or --window")
	}
	cfg = client.Config{
		Stamps:         mode,
		Duration:       f.duration,
		Count:          uint64(f.count),
		Size:           int(f.size),
		MaxMessage:     maxMsg,
		Window:         f.window,
		Timeout:        f.timeout,
		ReportInterval: f.reportInterval,
		Percentiles:    pcts,
		Rate:           f.rate,
		Unpaced:        f.rateF.max,
		SendInterval:   f.sendInterval,
		Poisson:        f.poisson,
		Seed:           f.seed,
		Burst:          f.burst,
		Threshold:      f.threshold,
		ReplySize:      int(f.replySize),
		Hold:           f.hold,
		OneWay:         f.oneway,
		Reconnect:      f.reconnect,
		NoQuickAck:     !f.quickAck,
	}
	if f.oneway && f.rate == 0 && f.sendInterval == 0 {
		cfg.Rate = 1000
	}
	if f.burst > 0 {
		cfg.Period = f.period
	}
	key, err := loadKey(f.key, f.keyFile)
	if err != nil {
		return cfg, err
	}
	cfg.Key = key
	if key != nil && !changed("size") && f.workload == "" {
		cfg.Size = wire.HeaderLen + wire.TagLen
	}
	if key != nil && changed("size") && f.size < wire.HeaderLen+wire.TagLen {
		return cfg, usagef("--size %s is smaller than the header and authentication tag: the minimum is %d bytes", f.size, wire.HeaderLen+wire.TagLen)
	}
	if f.workload != "" {
		es, err := workload.Load(f.workload, workload.Limits{MinSize: wire.HeaderLen, MaxSize: maxMsg})
		if err != nil {
			return cfg, usagef("--workload %s: %v", f.workload, err)
		}
		cfg.Workload, cfg.Size = es, 0
	}
	if (f.poisson || f.workload != "") && !changed("seed") {
		cfg.Seed = rand.Uint64()
	}
	if f.reportInterval == 0 {
		cfg.ReportInterval = -1
	}
	if f.histogram {
		cfg.Histogram = 10
	}
	if f.format == "iperf" {
		cfg.HistogramWidth = 100 * time.Microsecond // iperf 2's bins
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

// maxParallel bounds -P: each flow is an OS thread and a socket.
const maxParallel = 256

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
	t := transport.Target{Scheme: "udp"} // the in-process reflector's
	if target != "" {
		var err error
		if t, err = transport.ParseTarget(target); err != nil {
			return usageError{err}
		}
	}
	cfg, err := f.config(cmd, t)
	if err != nil {
		return err
	}
	// Scheduling is checked before any socket is opened, so that a bad
	// --cpu is a usage error and not hidden behind a failed dial.
	thread, err := f.sched.plan(cmd, stderr)
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
		// It takes kernel stamps as the client does, so that a first run
		// shows what they measure.
		sp, ok := pc.(transport.Stamper)
		stamped := ok && cfg.Stamps != tstamp.User && sp.EnableTimestamps(false) == nil
		refl, err := reflector.New(reflector.Config{ReportInterval: -1, Stamps: stamped})
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
		if t, err = transport.ParseTarget(target); err != nil {
			return err
		}
	}
	conns := make([]transport.Conn, 0, f.parallel)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dopts, asked, err := f.dialOptions(cmd, t)
	if err != nil {
		return err
	}
	for range f.parallel {
		conn, err := transport.DialWith(ctx, t, dopts)
		if err != nil {
			return usageError{err}
		}
		conns = append(conns, conn)
		if cfg.Stamps == tstamp.Hardware {
			if err := prepareHardware(conn, f.iface); err != nil {
				return usageError{err}
			}
		}
		if f.busyPoll {
			if err := transport.SetBusyPoll(conn); err != nil {
				return usageError{fmt.Errorf("--busy-poll: %w", err)}
			}
		}
	}
	if f.busyPoll {
		// One P per spinning thread, and one per open-loop sender: an
		// idle P makes the runtime spin threads of its own, which steal
		// the spinners' cores (p90 went from 11µs to 55µs with one idle P).
		procs := f.parallel
		if cfg.Rate > 0 || cfg.SendInterval > 0 {
			procs *= 2
		}
		runtime.GOMAXPROCS(procs)
	}
	if g, err := transport.Granted(conns[0]); err == nil {
		g.Bind, g.Asked = dopts.Bind, asked
		cfg.Socket = &g
	}

	// The report goes to stdout, unless the probe log takes it (--log -):
	// then to stderr, so that the CSV pipes alone.
	out := stdout
	if f.log == "-" {
		out = stderr
	}
	if cfg.Threshold > 0 && cfg.WarmupCount == 0 && cfg.WarmupDuration == 0 {
		cfg.ThresholdSkip = client.ThresholdColdProbes
	}
	var werr error // the first error writing the report
	write := func(err error) {
		if werr == nil {
			werr = err
		}
	}
	// What the client adds to the result, at its start and its end.
	complete := func(res *result.Result) {
		res.Version = Version()
		res.Config.Target = t.String()
		res.Config.InProcess = inProcess
	}
	// Every format writes each interval as it ends (JSON's one document
	// too): the run keeps none, and its memory stays flat however long
	// it runs.
	cfg.StreamIntervals = true
	var js *report.JSONStream
	var h handler
	switch f.format {
	case "json":
		js = report.NewJSONStream(out)
		h.start = func(res *result.Result) {
			opening := *res
			complete(&opening)
			write(js.Begin(&opening))
		}
		h.interval = func(iv result.Interval) { write(js.Interval(iv)) }
	case "text":
		if !f.quiet {
			var conf result.Config // as run
			mix := client.WorkloadMix(cfg.Workload)
			h.start = func(res *result.Result) {
				conf = res.Config
				write(report.WriteTextHeaderMix(out, res.Config, mix))
			}
			first := true
			h.interval = func(iv result.Interval) {
				if first {
					write(report.WriteIntervalHeader(out, conf))
					first = false
				}
				write(report.WriteInterval(out, conf, iv))
			}
		}
	case "jsonl":
		h.interval = func(iv result.Interval) { write(report.WriteJSONLInterval(out, iv)) }
	case "iperf":
		if !f.quiet {
			var mss uint32
			h.start = func(res *result.Result) {
				if res.Config.TCP != nil {
					mss = res.Config.TCP.MSS
				}
				write(report.WriteIperfHeader(out, res.Config))
			}
			h.interval = func(iv result.Interval) { write(report.WriteIperfInterval(out, iv, mss)) }
		}
	}
	if thread != nil {
		cfg.Thread = func(flow int, role string) error { return thread(flow, fmt.Sprintf("flow %d %s", flow, role)) }
	}
	if f.log != "" {
		var lw io.Writer = stdout
		if f.log != "-" {
			lf, err := os.Create(f.log)
			if err != nil {
				return usageError{fmt.Errorf("--log: %w", err)}
			}
			defer lf.Close()
			lw = lf
		}
		if cfg.Log, err = client.NewLogWriter(lw); err != nil {
			return fmt.Errorf("--log %s: %w", f.log, err)
		}
	}
	var mu sync.Mutex // flows lose their sessions each on its own thread
	h.reconnect = func(rc result.Reconnect) {
		mu.Lock()
		defer mu.Unlock()
		if rc.Resumed {
			fmt.Fprintf(stderr, "volley: reconnected to %s after %s: a new session carries on\n", t, report.Duration(rc.Gap))
			return
		}
		fmt.Fprintf(stderr, "volley: session with %s lost %ss into the run (%s), %s; reconnecting for up to %s\n",
			t, report.Seconds(rc.At), report.ReconnectReason(rc.Reason), report.InFlight(rc.InFlight), f.reconnect)
	}
	cfg.Handler = h
	res, runErr := client.RunFlows(ctx, cfg, conns)
	if res == nil {
		if errors.Is(runErr, client.ErrNoReflector) || errors.Is(runErr, client.ErrConfig) || errors.Is(runErr, client.ErrAuth) {
			return usageError{runErr}
		}
		if ctx.Err() != nil {
			// A signal during the handshake: no session, no report.
			return exitError{ExitError, fmt.Errorf("interrupted before the reflector at %s answered: nothing was measured", t)}
		}
		return runErr
	}
	complete(res)
	switch f.format {
	case "text":
		write(report.WriteSummary(out, res))
		if res.Histogram != nil {
			write(report.WriteHistogram(out, res.Histogram))
		}
	case "json":
		write(js.End(res))
	case "jsonl":
		write(report.WriteJSONLResult(out, res))
	case "iperf":
		write(report.WriteIperfSummary(out, res))
	case "dping":
		write(report.WriteDping(out, res))
	}
	if cfg.Log != nil && cfg.Log.Err() != nil {
		write(fmt.Errorf("--log %s: %w", f.log, cfg.Log.Err()))
	}
	if runErr != nil {
		return exitError{ExitError, runErr}
	}
	if werr != nil {
		return fmt.Errorf("write report: %w", werr)
	}
	if res.Stopped == "interrupted" && res.Summary.Counts.Sent == 0 {
		// The report says what there is (nothing); the exit code that
		// nothing was measured.
		return exitError{ExitError, errors.New("interrupted before any probe was measured")}
	}
	return nil
}

// dialOptions checks the socket flags and turns them into dial options,
// with the flags given, as given.
func (f clientFlags) dialOptions(cmd *cobra.Command, t transport.Target) (transport.DialOptions, []string, error) {
	o := transport.DialOptions{Bind: f.bind, Socket: sockopt.Options{TOS: f.tos, TTL: f.ttl, DF: f.df, Buffer: int(f.buffer),
		Congestion: f.congestion, Interface: f.iface, NoDelayOff: !f.nodelay}}
	var asked []string
	for _, name := range []string{"nodelay", "quickack", "congestion", "buffer", "tos", "dscp", "ttl", "df", "bind", "interface", "ipv4", "ipv6"} {
		if fl := cmd.Flags().Lookup(name); fl.Changed {
			asked = append(asked, "--"+name+"="+fl.Value.String())
		}
	}
	switch {
	case f.v4 && f.v6:
		return o, nil, usagef("-4 and -6 do not mix")
	case f.v4:
		o.Family = "4"
	case f.v6:
		o.Family = "6"
	}
	switch {
	case f.df && t.Scheme != "udp":
		return o, nil, usagef("--df is for UDP (TCP sets it itself)")
	case (f.congestion != "" || !f.nodelay || !f.quickAck) && t.Scheme != "tcp":
		return o, nil, usagef("--congestion, --nodelay and --quickack are for tcp:// targets")
	}
	if f.dscp >= 0 {
		o.Socket.TOS = f.dscp << 2
	}
	return o, asked, nil
}

// prepareHardware turns on hardware stamping on the interface conn sends
// through (iface, or the one holding its local address), or says why it
// cannot.
func prepareHardware(conn transport.Conn, iface string) error {
	if iface == "" {
		ap, err := netip.ParseAddrPort(conn.LocalAddr().String())
		if err != nil {
			return fmt.Errorf("--timestamps hardware: %s has no network interface", conn.LocalAddr())
		}
		if iface, err = tstamp.InterfaceOf(ap.Addr()); err != nil {
			return fmt.Errorf("--timestamps hardware: %w", err)
		}
	}
	if err := tstamp.PrepareHardware(iface); err != nil {
		return fmt.Errorf("--timestamps hardware: %w; --timestamps kernel uses the kernel's stamps instead ('volley timestamps %s' shows what the interface can do)", err, iface)
	}
	return nil
}

// handler is a client.Handler made of the functions runClient sets (nil:
// not heard).
type handler struct {
	start     func(*result.Result)
	interval  func(result.Interval)
	reconnect func(result.Reconnect)
}

func (h handler) Start(res *result.Result) {
	if h.start != nil {
		h.start(res)
	}
}

func (h handler) Interval(iv result.Interval) {
	if h.interval != nil {
		h.interval(iv)
	}
}

func (h handler) Reconnect(rc result.Reconnect) {
	if h.reconnect != nil {
		h.reconnect(rc)
	}
}

func (handler) End(*result.Result) {}
