package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/ifstats"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/units"
	"github.com/volley-net/volley/internal/wire"
)

func newServerCmd(stdout io.Writer) *cobra.Command {
	var (
		listen         string
		quiet          bool
		reportInterval time.Duration
		idleTimeout    time.Duration
		maxSize        byteSize
		tcp            bool
		unixPath       string
		unixgramPath   string
		quickAck       bool
		nodelay        bool
		congestion     string
		buffer         byteSize
		tos, ttl       int
		busyPoll       string
		sf             schedFlags
		maxHold        time.Duration
		maxRate        ppsFlag
		iface          string
		reportEvery    uint64
		workers        int
		key, keyFile   string
		allow          []string
		maxSessions    int
		maxDuration    time.Duration
		maxTotalRate   ppsFlag
		timestamps     string
		logPath        string
		dbusBus        string
		dbusName       string
		format         string
		lim            limitFlags
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a reflector",
		Long: `Run a reflector: answer volley clients' probes on UDP (:7766 by default).

The first line on stdout is "listening on udp://ADDRESS" with the bound
address, so --listen 127.0.0.1:0 can be used by scripts. A line per interval
follows (unless --quiet): packets/s and Mbit/s in and out, open sessions, and
packets dropped by reason; while nothing happens, one line a minute. On
SIGINT, SIGTERM or SIGHUP the reflector prints its totals and exits 0.

The reflector never amplifies: until a client has echoed the cookie that
proves it receives at its address, the reflector answers only with a cookie
no larger than the client's message, and keeps no state for it. Replies to
probes are the size the probe asks for, within --max-size, and only inside a
session the cookie opened. With --key, only clients holding the key get
anything but a refusal no larger than their message. Clients outside --allow
and beyond --max-sessions are refused with the reason. A probe of a session
the reflector does not know (it restarted, or the session idled out) gets a
"session unknown" answer no larger than the probe, at most 100 a second in
all, so its client can reconnect at once. Malformed, unknown, unsigned,
replayed and out-of-session messages are dropped and counted by reason.

No peer can stall or starve another: memory (--max-memory), connections
and sessions are bounded in all and per source (an IPv4 address, an IPv6
/64, a Unix user), a stream connection must finish its handshake within
--handshake-timeout sending small messages only, and a peer that does not
read its replies loses them (slow-reader) or its connection after
--send-timeout. A closed or idled-out session's token is dead at once, a
copy of a probe never earns more than it brought, and a CloseAck is no
larger than its Close.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := optionalValueArgs(cmd, args, "busy-poll", func(a string) bool { return isList(a, "udp", "tcp", "unix", "all") }); err != nil {
				return err
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkListen(listen); err != nil {
				return err
			}
			if format != "text" && format != "dping" {
				return usagef("--format %q: want text or dping", format)
			}
			if err := checkReportInterval(reportInterval); err != nil {
				return err
			}
			if idleTimeout < minIdleTimeout {
				return usagef("--idle-timeout %s: want at least %s", units.FormatDuration(idleTimeout), units.FormatDuration(minIdleTimeout))
			}
			if maxSize < wire.HeaderLen || int(maxSize) > transport.StreamMaxMessage {
				return usagef("--max-size %s: want %d to %d bytes (%s)", maxSize, wire.HeaderLen, transport.StreamMaxMessage, byteSize(transport.StreamMaxMessage))
			}
			if maxHold <= 0 {
				return usagef("--max-hold %s: want a positive duration", maxHold)
			}
			if maxRate <= 0 {
				return usagef("--max-rate %s: want a positive number of probes/s", maxRate)
			}
			var nicLast ifstats.Counters
			if iface != "" {
				c, err := ifstats.Read(iface)
				if err != nil {
					return usagef("--interface %s: %v", iface, err)
				}
				nicLast = c
			}
			key, err := loadKey(key, keyFile)
			if err != nil {
				return err
			}
			var prefixes []netip.Prefix
			for _, a := range allow {
				p, err := netip.ParsePrefix(a)
				if err != nil {
					if addr, aerr := netip.ParseAddr(a); aerr == nil {
						p = netip.PrefixFrom(addr, addr.BitLen())
					} else {
						return usagef("--allow %q: want a network such as 192.0.2.0/24 or an address", a)
					}
				}
				prefixes = append(prefixes, p.Masked())
			}
			if maxDuration < minMaxDuration {
				return usagef("--max-duration %s: want at least %s", units.FormatDuration(maxDuration), units.FormatDuration(minMaxDuration))
			}
			if maxTotalRate < 0 {
				return usagef("--max-total-rate %s: want a rate of 0 (none) or more", maxTotalRate)
			}
			if maxSessions < 1 {
				return usagef("--max-sessions %d: want at least 1", maxSessions)
			}
			if workers < 1 || workers > maxWorkers {
				return usagef("--workers %d: want 1 to %d", workers, maxWorkers)
			}
			if err := checkSocketFlags(cmd, tos, ttl, buffer, congestion); err != nil {
				return err
			}
			mode, ok := tstamp.ParseMode(timestamps)
			if !ok {
				return usagef("--timestamps %q: want user, kernel, hardware or auto", timestamps)
			}
			if mode == tstamp.Hardware {
				if iface == "" {
					return usagef("--timestamps hardware: name the interface to stamp on with --interface")
				}
				if err := tstamp.PrepareHardware(iface); err != nil {
					return usagef("--timestamps hardware: %v; --timestamps kernel uses the kernel's stamps instead", err)
				}
			}
			if err := lim.check(); err != nil {
				return err
			}
			mem := lim.budget()
			streamLimits := lim.stream(idleTimeout, mem)
			so := sockopt.Options{TOS: tos, TTL: ttl, Buffer: int(buffer), Congestion: congestion, NoDelayOff: !nodelay, Interface: iface}
			udpOpts := so
			udpOpts.Congestion, udpOpts.NoDelayOff = "", false
			// Scheduling is checked (and --mlock done) before anything is
			// opened or printed; its notes go to stderr, so that stdout
			// still begins with the address.
			thread, err := sf.plan(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ss, err := openServer(cmd.Context(), serverSetup{listen: listen, workers: workers, udp: udpOpts, tcp: tcp,
				stream:   transport.ListenOptions{Socket: so, QuickAck: quickAck, Limits: streamLimits},
				unixPath: unixPath, gramPath: unixgramPath, dbusBus: dbusBus, dbusName: dbusName, logPath: logPath})
			if err != nil {
				return err // a port in use is an error, not a usage error
			}
			defer ss.close()
			pcs := ss.udp
			busy := map[string]bool{}
			if busyPoll != "" {
				for _, k := range strings.Split(busyPoll, ",") {
					switch k {
					case "all", "true": // true: as when the flag was a boolean
						busy["udp"], busy["tcp"], busy["unix"] = true, true, true
					case "false":
					case "udp", "tcp", "unix":
						busy[k] = true
					default:
						return usagef("--busy-poll=%s: want all, or a list of udp, tcp and unix", busyPoll)
					}
				}
			}
			if explicit := busyPoll != "all" && busyPoll != "true"; explicit && busy["tcp"] && !tcp {
				return usagef("--busy-poll=%s: no TCP socket to spin on (--tcp=false)", busyPoll)
			} else if explicit && busy["unix"] && unixPath == "" {
				return usagef("--busy-poll=%s: no --unix socket to spin on", busyPoll)
			}
			spinners := 0
			if busy["udp"] {
				for _, pc := range pcs {
					if err := transport.SetBusyPoll(pc); err != nil {
						return usagef("--busy-poll: %v", err)
					}
				}
				spinners += len(pcs)
			}
			if busy["tcp"] && ss.tcp != nil {
				if err := transport.SetBusyPoll(ss.tcp); err != nil {
					return usagef("--busy-poll: %v", err)
				}
				spinners++ // a connection at a time, as ping-pong
			}
			if busy["unix"] && ss.unix != nil {
				if err := transport.SetBusyPoll(ss.unix); err != nil {
					return usagef("--busy-poll: %v", err)
				}
				spinners++
			}
			udpWorkers := len(pcs)
			stamped, used := false, ""
			if mode != tstamp.User {
				if used, err = enableStamps(pcs, mode); err != nil {
					return err
				}
				stamped = used != "user"
			}
			// All set up: only now say where the server listens.
			fmt.Fprintf(stdout, "listening on udp://%s\n", pcs[0].LocalAddr())
			if mode != tstamp.User && (!quiet || mode != tstamp.Auto) {
				fmt.Fprintf(stdout, "timestamps: %s on UDP (TCP and Unix sockets: user-space times)\n", used)
			}
			plog := ss.log
			if logPath == "-" {
				if plog, err = probelog.NewWriter(stdout, reflector.LogHeader); err != nil {
					return fmt.Errorf("--log %s: %w", logPath, err)
				}
			}
			if ss.tcp != nil {
				pcs = append(pcs, ss.tcp)
				fmt.Fprintf(stdout, "listening on tcp://%s\n", ss.tcp.LocalAddr())
			}
			if ss.unix != nil {
				pcs = append(pcs, ss.unix)
				fmt.Fprintf(stdout, "listening on unix://%s\n", unixPath)
			}
			if ss.unixgram != nil {
				pcs = append(pcs, ss.unixgram)
				fmt.Fprintf(stdout, "listening on unixgram://%s\n", unixgramPath)
			}
			if ss.dbus != nil {
				pcs = append(pcs, ss.dbus)
				fmt.Fprintf(stdout, "listening on dbus %s as %s\n", dbusBus, dbusName)
			}
			if spinners > 0 {
				// One P per spinning thread and no more: an idle P makes
				// the runtime spin threads of its own, which steal the
				// spinners' cores (TCP ping-pong p90 went from 9µs to
				// 22-52µs with one). The reflecting loops that do not spin
				// run when the scheduler preempts a spinner.
				runtime.GOMAXPROCS(spinners)
			}
			// One cookie secret for all workers: a peer's Hello and probes
			// reach the same worker, but need not.
			secret := make([]byte, 32)
			if _, err := rand.Read(secret); err != nil {
				return err
			}
			cfg := reflector.Config{IdleTimeout: idleTimeout, ReportInterval: reportInterval, Secret: secret,
				MaxSize: int(maxSize), MaxHold: maxHold, MaxRate: float64(maxRate), ReportEvery: reportEvery,
				Key: key, Allow: prefixes, MaxSessions: maxSessions, MaxSessionsPerSource: lim.sessionsPerSource,
				SourceSessions: quota.NewCounter(0, lim.sessionsPerSource), // one count for every transport
				MaxDuration:    maxDuration, MaxTotalRate: float64(maxTotalRate), Log: plog, Memory: mem}
			if reportInterval == 0 {
				cfg.ReportInterval = -1
			}
			var out sync.Mutex // workers print from their own goroutines
			printf := func(format string, args ...any) {
				out.Lock()
				defer out.Unlock()
				fmt.Fprintf(stdout, format, args...)
			}
			agg := &statsSum{workers: len(pcs)}
			if !quiet {
				cfg.OnOneWay = func(o reflector.OneWayReport) {
					if format == "dping" {
						printf("%s\n", report.DpingMessages(o.Received, o.Lost, o.Min, o.Avg, o.Max, o.Span))
						return
					}
					printf("%s\n", report.OneWayLine(o.Addr.String(), o.Received, o.Lost, o.Min, o.Avg, o.Max))
				}
				lines := report.NewReflectorIntervals(stdout, iface, nicLast)
				agg.emit = func(s reflector.Stats) {
					var nic ifstats.Counters
					nicOK := false
					if iface != "" {
						if c, err := ifstats.Read(iface); err == nil {
							nic, nicOK = c, true
						}
					}
					out.Lock()
					defer out.Unlock()
					lines.Interval(reflectorCounts(s), nic, nicOK)
				}
			}
			totals := make([]reflector.Stats, len(pcs))
			errs := make([]error, len(pcs))
			var wg sync.WaitGroup
			stopReleasing := releaseMemory(cmd.Context(), mem)
			defer stopReleasing()
			for i, pc := range pcs {
				wcfg := cfg
				if i >= udpWorkers {
					// A stream carries any size up to its most; UDP's
					// reflectors cut --max-size to what a datagram holds.
					wcfg.MaxMessage = transport.MaxMessage(pc)
				} else {
					wcfg.Stamps = stamped
				}
				if agg.emit != nil {
					wcfg.OnInterval = func(s reflector.Stats) { agg.add(i, s) }
				}
				refl, err := reflector.New(wcfg)
				if err != nil {
					return err
				}
				wg.Go(func() {
					if thread != nil {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						if errs[i] = thread(i, fmt.Sprintf("worker %d (%s://%s)", i+1, pc.LocalAddr().Network(), pc.LocalAddr())); errs[i] != nil {
							return
						}
					}
					totals[i], errs[i] = refl.Serve(cmd.Context(), pc)
					if g, ok := pc.(transport.Failer); ok && g.Err() != nil {
						// A bus that went away ends its worker alone; the
						// others go on, and the exit status says so.
						printf("volley: %v: no longer answering there\n", g.Err())
						errs[i] = g.Err()
					}
				})
			}
			wg.Wait()
			var total reflector.Stats
			for _, t := range totals {
				total = total.Add(t)
			}
			out.Lock()
			report.WriteReflectorTotals(stdout, reflectorCounts(total))
			out.Unlock()
			if plog != nil && plog.Err() != nil {
				errs = append(errs, fmt.Errorf("--log %s: %w", logPath, plog.Err()))
			}
			err = errors.Join(errs...)
			return err
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&listen, "listen", fmt.Sprintf(":%d", transport.DefaultPort), "UDP address to listen on (HOST:PORT; port 0 picks a free one)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no interval lines; the address and totals are still printed")
	durationVarP(fl, &reportInterval, "report-interval", "i", time.Second, true, fmt.Sprintf("length of each interval line, at least %s; a bare number is seconds, as iperf's -i; 0 turns them off", units.FormatDuration(minReportInterval)))
	durationVarP(fl, &idleTimeout, "idle-timeout", "", 30*time.Second, false, fmt.Sprintf("forget a session that sent nothing for this long, at least %s", units.FormatDuration(minIdleTimeout)))
	maxSize = transport.StreamMaxMessage
	fl.Var(&maxSize, "max-size", "largest reply a client may ask for, in bytes (K and M suffixes: KiB, MiB); over UDP never more than 65000")
	fl.BoolVar(&tcp, "tcp", true, "also accept TCP connections on the same address and port (framed messages, any size up to 4M)")
	fl.StringVar(&unixPath, "unix", "", "also accept Unix stream connections at this path (a stale socket file is replaced; removed on exit)")
	fl.StringVar(&dbusBus, "dbus", "", "also answer through a D-Bus bus: session, system, or an address such as unix:path=/run/bus (needs a dbus-daemon)")
	fl.StringVar(&dbusName, "dbus-name", "net.volley.Reflector", "the well-known name to claim on --dbus")
	fl.StringVar(&unixgramPath, "unixgram", "", "also answer Unix datagrams at this path (a stale socket file is replaced; removed on exit)")
	sf.register(cmd, "reflecting threads (one per worker and listener)")
	fl.StringVar(&busyPoll, "busy-poll", "", "spin on the sockets instead of sleeping in the kernel: lower, steadier latency for a core each (each UDP worker, each TCP or Unix connection); alone, all of them, or =udp, =tcp, =unix or a list of them")
	fl.Lookup("busy-poll").NoOptDefVal = "all"
	fl.BoolVar(&quickAck, "quickack", true, "TCP: acknowledge each request at once (TCP_QUICKACK after every read, as iperf 2's bounceback); --quickack=false leaves delayed ACKs on")
	fl.BoolVar(&nodelay, "nodelay", true, "TCP: turn Nagle's algorithm off on replies (TCP_NODELAY)")
	fl.StringVar(&congestion, "congestion", "", "TCP congestion control algorithm for replies (TCP_CONGESTION)")
	fl.Var(&buffer, "buffer", fmt.Sprintf("socket send and receive buffers in bytes (K, M suffixes), %s to %s (default: 4M over UDP, the system's over TCP)", byteSize(minBuffer), byteSize(maxBuffer)))
	optIntVar(fl, &tos, "tos", -1, "IP type of service / IPv6 traffic class of replies, 0 to 255")
	optIntVar(fl, &ttl, "ttl", 0, "IP time to live / IPv6 hop limit of replies, 1 to 255")
	durationVarP(fl, &maxHold, "max-hold", "", reflector.DefaultMaxHold, false, "longest hold a client may ask for")
	fl.StringVar(&key, "key", "", "shared key: accept only messages signed with it (HMAC-SHA-256) and sign every answer (prefer --key-file)")
	fl.StringVar(&keyFile, "key-file", "", "read the shared key from this file")
	fl.StringArrayVar(&allow, "allow", nil, "accept clients only from this network (CIDR or address; repeatable)")
	durationVarP(fl, &maxDuration, "max-duration", "", reflector.DefaultMaxDuration, false, fmt.Sprintf("end sessions this long after they opened, telling the client why; at least %s", units.FormatDuration(minMaxDuration)))
	fl.Var(&maxTotalRate, "max-total-rate", "most probes/s of all sessions together, k and M suffixes (0: no limit); the rest are dropped and counted")
	fl.IntVar(&maxSessions, "max-sessions", reflector.DefaultMaxSessions, "most sessions kept at once; more are refused")
	lim.register(cmd)
	fl.IntVar(&workers, "workers", 1, "reflect with N threads, each its own socket on the port (SO_REUSEPORT); peers (and a client's -P flows) are spread by address, a flow stays on one")
	fl.StringVar(&format, "format", "text", "text, or dping: one-way reports as dpong's lines (MESSAGES recv N lost N LATENCY min A avg B max C THROUGHPUT X m/s, in µs)")
	fl.Uint64Var(&reportEvery, "report-every", 0, "report one-way sessions every N probes instead of every interval (dpong's reporting period)")
	fl.StringVar(&iface, "interface", "", "bind the UDP and TCP sockets to this network interface (SO_BINDTODEVICE) and add its RX/TX packet counters to each interval line")
	fl.StringVar(&timestamps, "timestamps", "auto", "where reply times come from: user, kernel (SO_TIMESTAMPING on the UDP sockets), hardware (the NIC's, on --interface; turns them on), auto (kernel where the socket has them)")
	fl.StringVar(&logPath, "log", "", "write a CSV line per reply sent to this file (- for stdout): peer, session, sequence, T2 and T3 in user space and from kernel stamps, response times")
	maxRate = reflector.DefaultMaxRate
	fl.Var(&maxRate, "max-rate", "most probes/s a session may send, k and M suffixes; the rest are dropped and counted")
	return cmd
}

// maxWorkers bounds --workers.
const maxWorkers = 64

// statsSum adds up the workers' k-th intervals and emits each sum once
// every worker has reported it.
type statsSum struct {
	mu      sync.Mutex
	workers int
	emit    func(reflector.Stats)
	ticks   map[int]int // worker: intervals reported
	pending map[int]*pendingStats
}

type pendingStats struct {
	s reflector.Stats
	n int
}

func (a *statsSum) add(worker int, s reflector.Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers == 1 {
		a.emit(s) // nothing to add up, nor to copy
		return
	}
	if a.ticks == nil {
		a.ticks, a.pending = map[int]int{}, map[int]*pendingStats{}
	}
	k := a.ticks[worker]
	a.ticks[worker]++
	p := a.pending[k]
	if p == nil {
		p = &pendingStats{}
		a.pending[k] = p
	}
	p.s = p.s.Add(s)
	p.n++
	if p.n == a.workers {
		delete(a.pending, k)
		a.emit(p.s)
	}
}

// enableStamps turns kernel (or hardware) stamps on for the UDP sockets,
// and returns the mode in use: under auto, "user" where a socket refuses.
func enableStamps(pcs []transport.PacketConn, mode tstamp.Mode) (string, error) {
	for _, pc := range pcs {
		sp, ok := pc.(transport.Stamper)
		err := errors.ErrUnsupported
		if ok {
			err = sp.EnableTimestamps(mode == tstamp.Hardware)
		}
		if err != nil {
			if mode == tstamp.Auto {
				return "user", nil
			}
			return "", usagef("--timestamps %s: the UDP socket refused stamps (%v); --timestamps user goes without", mode, err)
		}
	}
	if mode == tstamp.Hardware {
		return "hardware", nil
	}
	return "kernel", nil
}
