package cli

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/units"
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
	noProgress     bool
	rate           rateFlag
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
	plot           string
	timestamps     string
	busyPoll       bool
	sched          schedFlags
	stamp          stampFlags // stamp:// only (see foreign.go)
	loadF          loadFlags  // --load, --phase (see load.go)
	// Socket options.
	nodelay, df    bool
	quickAck       bool
	v4, v6         bool
	congestion     string
	buffer         byteSize
	tos, dscp, ttl int
	ecn            string
	bind, iface    string
}

func newClientCmd(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "client [TARGET]",
		Short: "Measure against a reflector (with no TARGET, an in-process one on loopback)",
		Long:  clientLong,
		Args:  clientArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			return runClient(cmd.Context(), cmd, target, f, stdout, stderr)
		},
	}
	f.register(cmd)
	setGroupedUsage(cmd, clientFlagGroups)
	return cmd
}

const clientLong = `Measure against the reflector at TARGET, one of (port 7766 unless given):

  HOST, HOST:PORT, [IPv6]:PORT, udp://HOST[:PORT]   UDP
  tcp://HOST[:PORT]                                  TCP, framed messages
  unix:///PATH, unix://@NAME                         Unix stream socket
  unixgram:///PATH, unixgram://@NAME                 Unix datagram socket
  dbus://session, dbus://system, dbus:ADDRESS        D-Bus method calls; add
                                                     #NAME for a reflector not
                                                     named net.volley.Reflector

or a peer that is not a volley reflector:

  stamp://HOST[:PORT]                                a STAMP (RFC 8762) or
                                                     TWAMP-light reflector,
                                                     port 862 unless given
  echo://HOST[:PORT]                                 a UDP echo service (RFC
                                                     862), port 7 unless given
  connect://HOST:PORT                                a TCP service: each probe
                                                     a handshake, timed

Such a peer answers with what its protocol carries, and the report says what
it cannot tell: an echo service's replies carry no times and no count (round
trips only, loss not split by direction), a STAMP reflector's carry its
receive and send times (loss per direction only with --stamp-stateful), and a
connect:// probe is timed to the end of its handshake (refused and timed-out
handshakes are counted apart). Such a peer holds no volley session, so
--oneway, --hold, --reply-size, --reconnect and kernel or hardware
--timestamps are for volley reflectors; --key and --key-file are STAMP's
authenticated mode with stamp://.

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
error, a wrong or missing key, or no reflector answering, 130 a second signal.`

// clientArgs takes one TARGET or none, and catches --reconnect's value
// given without the "=".
func clientArgs(cmd *cobra.Command, args []string) error {
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
}

// register defines the client's flags. It is one list, a line a flag, in
// the order --help shows them within their groups (see clientFlagGroups).
func (f *clientFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.SortFlags = false
	durationVarP(fl, &f.duration, "duration", "t", 0, true, "how long to measure, after warm-up; a bare number is seconds, as iperf's -t (default 5s unless --count is given; D-Bus: 1000 messages, as dping)")
	fl.Int64VarP(&f.count, "count", "n", 0, "how many probes to measure, after warm-up (whichever of --duration and --count comes first ends the run)")
	fl.StringVar(&f.warmup, "warmup", "", "warm-up before measuring, left out of the results: a duration (2s) or a probe count (100)")
	f.size = client.DefaultSize
	fl.VarP(&f.size, "size", "l", fmt.Sprintf("request size in bytes (K and M suffixes: KiB, MiB), the %d-byte header included; at most 65000 over UDP, 4M over streams", client.MinSize))
	fl.Var(&f.replySize, "reply-size", "reply size in bytes, header included (default: the request's size)")
	durationVarP(fl, &f.hold, "hold", "", 0, false, "ask the reflector to wait this long before each reply (left out of its response time)")
	fl.StringVar(&f.workload, "workload", "", "a YAML or JSON file of entries drawn per probe with --seed, each a weight and a size, and optionally a name, reply_size, hold and gap (see examples/workload.yaml); results per entry")
	fl.IntVar(&f.window, "window", 1, "probes in flight")
	fl.IntVarP(&f.parallel, "parallel", "P", 1, "run N flows at once, each its own socket, session and thread; per-flow and total results")
	fl.Var(&f.rate, "rate", fmt.Sprintf("open loop: send this many probes/s (k, M: thousands, millions; more than 0, at most %s) on schedule, whether or not replies came back; max: as fast as the client can send", units.FormatRate(client.MaxRate)))
	durationVarP(fl, &f.sendInterval, "send-interval", "", 0, false, "open loop: send a probe every interval (instead of --rate)")
	fl.BoolVar(&f.poisson, "poisson", false, "with --rate or --send-interval: exponential gaps with that mean")
	fl.Uint64Var(&f.seed, "seed", 0, "seed for --poisson (default: a random one, recorded in the result)")
	fl.BoolVar(&f.oneway, "oneway", false, "one-way: the reflector does not reply but measures delay and loss, and returns its results at the end (open loop; --rate 1000 unless given)")
	f.loadF.register(fl)
	fl.IntVar(&f.burst, "burst", 0, "closed loop: send N probes back to back every --period (iperf 2 bounceback)")
	durationVarP(fl, &f.period, "period", "", time.Second, false, "with --burst: how often a burst starts; 0 for no pause")
	durationVarP(fl, &f.threshold, "threshold", "", 0, false, "stop at the first RTT above this, and say which probe and when (without --warmup, the first 10 probes, a cold path's, are not judged; they still count)")
	durationVarP(fl, &f.timeout, "timeout", "", client.DefaultTimeout, false, fmt.Sprintf("how long a probe waits for its reply before it counts as lost, %s to %s", units.FormatDuration(client.MinTimeout), units.FormatDuration(client.MaxTimeout)))
	durationVarP(fl, &f.reconnect, "reconnect", "", 0, false, fmt.Sprintf("when the reflector restarts, goes silent or goes away, open a new session and carry on, trying for up to this long, at least %s (--reconnect alone: 30s; a value needs the =, as in --reconnect=2m)", units.FormatDuration(client.MinReconnect)))
	fl.Lookup("reconnect").NoOptDefVal = "30s"
	durationVarP(fl, &f.reportInterval, "report-interval", "i", client.DefaultReportInterval, true, fmt.Sprintf("length of each interval report, at least %s; a bare number is seconds, as iperf's -i; 0 turns them off", units.FormatDuration(minReportInterval)))
	fl.StringVar(&f.percentiles, "percentiles", "50,90,99,99.9,99.99", "percentiles to report, comma-separated")
	fl.StringVar(&f.key, "key", "", "shared key: sign every message with HMAC-SHA-256 and accept only signed replies (visible to other users in the process list: prefer --key-file)")
	fl.StringVar(&f.keyFile, "key-file", "", "read the shared key from this file")
	f.stamp.register(fl)
	fl.BoolVar(&f.nodelay, "nodelay", true, "TCP: turn Nagle's algorithm off (TCP_NODELAY), as iperf 2 does; --nodelay=false leaves it on")
	fl.BoolVar(&f.quickAck, "quickack", true, "TCP: the reflector acknowledges each request at once, as iperf 2's bounceback (a reply sent at once carries the ACK; held and one-way probes get TCP_QUICKACK as they are read); --quickack=false asks it to leave delayed ACKs on")
	fl.StringVar(&f.congestion, "congestion", "", "TCP congestion control algorithm (TCP_CONGESTION), such as cubic or bbr")
	fl.Var(&f.buffer, "buffer", fmt.Sprintf("socket send and receive buffers in bytes (K, M suffixes), %s to %s; the kernel's grant is reported (default: 4M over UDP, the system's over TCP)", units.FormatBytes(minBuffer), units.FormatBytes(maxBuffer)))
	optIntVar(fl, &f.tos, "tos", -1, "IP type of service / IPv6 traffic class byte, 0 to 255")
	optIntVar(fl, &f.dscp, "dscp", -1, "DSCP code point, 0 to 63 (the TOS byte's upper six bits)")
	optIntVar(fl, &f.ttl, "ttl", 0, "IP time to live / IPv6 hop limit, 1 to 255")
	addECNFlag(fl, &f.ecn)
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
	fl.StringVar(&f.plot, "plot", "", "draw the run to this file, by its extension: .svg, .png or .html (one self-contained page with the figures, summary, configuration and intervals)")
	fl.BoolVar(&f.histogram, "histogram", false, "print a histogram of RTT (log-spaced bins, with underflow and overflow)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the final report")
	fl.BoolVar(&f.noProgress, "no-progress", false, "draw no live progress line on stderr (drawn only when stderr is a terminal, and never with -q)")
}

// config turns the flags into a client configuration. The rules of the
// run are the client's (client.Config.Check, whose errors name the
// flag); the flags' own rules are checked here: values a Config does not
// hold (socket options, the count as typed, the flows), the words of
// --timestamps and --format, and what a foreign peer cannot do. For a
// stamp:// target the key goes to f.stamp, not to the Config.
func (f *clientFlags) config(cmd *cobra.Command, t transport.Target) (client.Config, error) {
	changed := cmd.Flags().Changed
	mode, err := f.checkFlags(cmd, t)
	if err != nil {
		return client.Config{}, err
	}
	if err := f.checkForeign(cmd, t); err != nil {
		return client.Config{}, err
	}
	if err := f.checkLoad(cmd, t); err != nil {
		return client.Config{}, err
	}
	maxMsg := client.MaxSize
	if t.Stream() || t.Scheme == "dbus" {
		maxMsg = transport.StreamMaxMessage
	}
	count := f.count
	if t.Scheme == "dbus" && !changed("count") && !changed("duration") {
		count = 1000 // dping's default
	}
	percentiles := f.percentiles
	if f.format == "iperf" && !changed("percentiles") {
		percentiles = "5,95,99.7" // the points iperf 2 prints with its histogram
	}
	pcts, err := parsePercentiles(percentiles)
	if err != nil {
		return client.Config{}, err
	}
	cfg := client.Config{
		Stamps:         mode,
		Duration:       f.duration,
		Count:          uint64(count),
		Size:           int(f.size),
		MaxMessage:     maxMsg,
		Window:         f.window,
		Timeout:        f.timeout,
		ReportInterval: f.reportInterval,
		Percentiles:    pcts,
		Rate:           f.rate.pps,
		Unpaced:        f.rate.max,
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
	if f.burst > 0 {
		cfg.Period = f.period
	}
	if err := f.readInputs(&cfg); err != nil {
		return cfg, err
	}
	f.loadConfig(cmd, &cfg)
	if err := f.foreignConfig(&cfg, t, cmd.Flags().Changed("size")); err != nil {
		return cfg, err
	}
	if err := cfg.Check(client.Command{Target: t, Given: changed}); err != nil {
		return cfg, usageError{err}
	}
	if t.Foreign() {
		cfg.ReplySize = 0 // the request's size, as --reply-size said (checkForeign): what a foreign peer answers with
	}
	f.outputs(&cfg, changed("seed"))
	return cfg, nil
}

// checkFlags checks the flags whose values a client.Config does not hold,
// and returns --timestamps' mode.
func (f clientFlags) checkFlags(cmd *cobra.Command, t transport.Target) (tstamp.Mode, error) {
	changed := cmd.Flags().Changed
	// The socket flags' ranges are checked here, before the in-process
	// reflector starts; dialOptions checks what the target allows.
	if err := checkSocketFlags(cmd, f.tos, f.ttl, f.buffer, f.congestion); err != nil {
		return 0, err
	}
	mode, ok := tstamp.ParseMode(f.timestamps)
	switch {
	case changed("dscp") && (f.dscp < 0 || f.dscp > 63):
		return 0, usagef("--dscp %d: want 0 to 63", f.dscp)
	case f.dscp >= 0 && f.tos >= 0:
		return 0, usagef("give --tos or --dscp, not both")
	case changed("count") && f.count <= 0: // a Config's count is unsigned, and 0 is no bound
		return 0, usagef("--count %d: want at least 1", f.count)
	case !ok:
		return 0, usagef("--timestamps %q: want user, kernel, hardware or auto", f.timestamps)
	case f.parallel < 1 || f.parallel > maxParallel:
		return 0, usagef("--parallel %d: want 1 to %d", f.parallel, maxParallel)
	case f.busyPoll && !t.Datagram() && !t.Stream():
		return 0, usagef("--busy-poll is for udp://, tcp://, unix://, stamp:// and echo:// targets (busy polling spins on a socket)")
	}
	if err := checkReportInterval(f.reportInterval); err != nil {
		return 0, err
	}
	if err := checkPlot(f.plot); err != nil {
		return 0, err
	}
	switch f.format {
	case "text", "json", "jsonl", "iperf", "dping":
	default:
		return 0, usagef("--format %q: want text, json, jsonl, iperf or dping", f.format)
	}
	return mode, nil
}

// readInputs reads what the flags name into cfg: the key (--key or
// --key-file), the workload, and the warm-up (a count or a duration).
func (f clientFlags) readInputs(cfg *client.Config) error {
	key, err := loadKey(f.key, f.keyFile)
	if err != nil {
		return err
	}
	cfg.Key = key
	if f.workload != "" {
		es, err := workload.Load(f.workload, workload.Limits{MinSize: client.MinSize, MaxSize: cfg.MaxMessage})
		if err != nil {
			return usagef("--workload %s: %v", f.workload, err)
		}
		cfg.Workload, cfg.Size = es, 0
	}
	if f.warmup != "" {
		if n, err := strconv.ParseUint(f.warmup, 10, 64); err == nil {
			cfg.WarmupCount = n
		} else if d, err := time.ParseDuration(f.warmup); err == nil {
			cfg.WarmupDuration = d // the client refuses a negative one
		} else {
			return usagef("--warmup %q: want a duration (2s) or a probe count (100)", f.warmup)
		}
	}
	return nil
}

// outputs sets what the flags ask of the run's figures: the seed drawn
// when none was given, the intervals, the histogram, and the probes the
// threshold leaves alone.
func (f clientFlags) outputs(cfg *client.Config, seedGiven bool) {
	if (f.poisson || f.workload != "") && !seedGiven {
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
	if cfg.Threshold > 0 && cfg.WarmupCount == 0 && cfg.WarmupDuration == 0 {
		cfg.ThresholdSkip = client.ThresholdColdProbes
	}
}

// maxParallel bounds -P: each flow is an OS thread and a socket.
const maxParallel = 256

// parsePercentiles reads --percentiles (see client.ParsePercentiles).
func parsePercentiles(s string) ([]float64, error) {
	p, err := client.ParsePercentiles(s)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

// dialOptions checks the socket flags and turns them into dial options,
// with the flags given, as given.
func (f clientFlags) dialOptions(cmd *cobra.Command, t transport.Target) (transport.DialOptions, []string, error) {
	o := transport.DialOptions{Bind: f.bind, Socket: sockopt.Options{TOS: f.tos, TTL: f.ttl, DF: f.df, Buffer: int(f.buffer),
		Congestion: f.congestion, Interface: f.iface, NoDelayOff: !f.nodelay}}
	var asked []string
	for _, name := range []string{"nodelay", "quickack", "congestion", "buffer", "tos", "dscp", "ecn", "ttl", "df", "bind", "interface", "ipv4", "ipv6"} {
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
	case f.df && !t.Datagram():
		return o, nil, usagef("--df is for UDP (TCP sets it itself)")
	case (f.congestion != "" || !f.nodelay || !f.quickAck) && t.Scheme != "tcp":
		return o, nil, usagef("--congestion, --nodelay and --quickack are for tcp:// targets")
	}
	if f.dscp >= 0 {
		o.Socket.TOS = f.dscp << 2
	}
	if err := applyECN(&o.Socket, f.ecn, f.tos >= 0, t.Scheme); err != nil {
		return o, nil, err
	}
	return o, asked, nil
}
