package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/ifstats"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/server"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/units"
)

// serverLong is the server's --help.
const serverLong = `Run a reflector: answer volley clients' probes on UDP (:7766 by default).

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
larger than its Close.

With --allow-load the reflector also serves the bulk streams of clients'
--load runs (latency under load) on its TCP and Unix stream listeners, to
clients that opened a session on the stream's connection (and hold the
--key): downloads paced to --max-load-rate over all streams together,
uploads read and dropped. At most 64 streams at once and 16 from one
source, each for at most 5 minutes and the time it asked, and cut after
--send-timeout without progress. Without --allow-load a load request is
refused with the reason, and over UDP, Unix datagrams and D-Bus it is
dropped. Refusals and stalled streams count as drops (load-off,
load-streams, load-stalled); with --allow-load a "load:" line follows an
interval's when its streams did anything, and a "--- load totals" line
the totals.

With --stamp [ADDR:]PORT the server also answers STAMP (RFC 8762)
Session-Senders (routers, switches, other tools) on a UDP port of its own,
beside its volley listeners, within the same --allow, rate and session
limits: a reply is never larger than its request. A line "listening on
stamp://ADDRESS" follows the UDP one, and a "stamp:" line each interval
with packets, and at the end its totals.`

func newServerCmd(stdout io.Writer) *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a reflector",
		Long:  serverLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := optionalValueArgs(cmd, args, "busy-poll", func(a string) bool { return isList(a, "udp", "tcp", "unix", "all") }); err != nil {
				return err
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServer(cmd.Context(), cmd, f, stdout, nil)
		},
	}
	f.register(cmd)
	return cmd
}

// serverFlags are the server's flags, as given.
type serverFlags struct {
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
	sched          schedFlags
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
	load           loadServerFlags
	stamp          stampServerFlags
	// shared: the reflector is not alone in its process (volley agent),
	// so it leaves the Go runtime's memory settings alone.
	shared bool
}

// register defines the server's flags on cmd, in the order --help lists
// them.
func (f *serverFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.listen, "listen", fmt.Sprintf(":%d", transport.DefaultPort), "UDP address to listen on (HOST:PORT; port 0 picks a free one)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no interval lines; the address and totals are still printed")
	durationVarP(fl, &f.reportInterval, "report-interval", "i", time.Second, true, fmt.Sprintf("length of each interval line, at least %s; a bare number is seconds, as iperf's -i; 0 turns them off", units.FormatDuration(minReportInterval)))
	durationVarP(fl, &f.idleTimeout, "idle-timeout", "", 30*time.Second, false, fmt.Sprintf("forget a session that sent nothing for this long, at least %s", units.FormatDuration(minIdleTimeout)))
	f.maxSize = transport.StreamMaxMessage
	fl.Var(&f.maxSize, "max-size", "largest reply a client may ask for, in bytes (K and M suffixes: KiB, MiB); over UDP never more than 65000")
	fl.BoolVar(&f.tcp, "tcp", true, "also accept TCP connections on the same address and port (framed messages, any size up to 4M)")
	fl.StringVar(&f.unixPath, "unix", "", "also accept Unix stream connections at this path (a stale socket file is replaced; removed on exit)")
	fl.StringVar(&f.dbusBus, "dbus", "", "also answer through a D-Bus bus: session, system, or an address such as unix:path=/run/bus (needs a dbus-daemon)")
	fl.StringVar(&f.dbusName, "dbus-name", "net.volley.Reflector", "the well-known name to claim on --dbus")
	fl.StringVar(&f.unixgramPath, "unixgram", "", "also answer Unix datagrams at this path (a stale socket file is replaced; removed on exit)")
	f.stamp.register(cmd)
	f.sched.register(cmd, "reflecting threads (one per worker and listener)")
	fl.StringVar(&f.busyPoll, "busy-poll", "", "spin on the sockets instead of sleeping in the kernel: lower, steadier latency for a core each (each UDP worker, and a TCP or Unix connection while its session is the listener's only one); alone, all of them, or =udp, =tcp, =unix or a list of them")
	fl.Lookup("busy-poll").NoOptDefVal = "all"
	fl.BoolVar(&f.quickAck, "quickack", true, "TCP: acknowledge each request at once, as iperf 2's bounceback (a reply sent at once carries the ACK; held probes and other messages get TCP_QUICKACK as they are read); --quickack=false leaves delayed ACKs on")
	fl.BoolVar(&f.nodelay, "nodelay", true, "TCP: turn Nagle's algorithm off on replies (TCP_NODELAY)")
	fl.StringVar(&f.congestion, "congestion", "", "TCP congestion control algorithm for replies (TCP_CONGESTION)")
	fl.Var(&f.buffer, "buffer", fmt.Sprintf("socket send and receive buffers in bytes (K, M suffixes), %s to %s (default: 4M over UDP, the system's over TCP)", byteSize(minBuffer), byteSize(maxBuffer)))
	optIntVar(fl, &f.tos, "tos", -1, "IP type of service / IPv6 traffic class of replies, 0 to 255")
	optIntVar(fl, &f.ttl, "ttl", 0, "IP time to live / IPv6 hop limit of replies, 1 to 255")
	durationVarP(fl, &f.maxHold, "max-hold", "", reflector.DefaultMaxHold, false, "longest hold a client may ask for")
	fl.StringVar(&f.key, "key", "", "shared key: accept only messages signed with it (HMAC-SHA-256) and sign every answer (prefer --key-file)")
	fl.StringVar(&f.keyFile, "key-file", "", "read the shared key from this file")
	fl.StringArrayVar(&f.allow, "allow", nil, "accept clients only from this network (CIDR or address; repeatable)")
	durationVarP(fl, &f.maxDuration, "max-duration", "", reflector.DefaultMaxDuration, false, fmt.Sprintf("end sessions this long after they opened, telling the client why; at least %s", units.FormatDuration(minMaxDuration)))
	fl.Var(&f.maxTotalRate, "max-total-rate", "most probes/s of all sessions together, k and M suffixes (0: no limit); the rest are dropped and counted")
	fl.IntVar(&f.maxSessions, "max-sessions", reflector.DefaultMaxSessions, "most sessions kept at once; more are refused")
	f.lim.register(cmd)
	f.load.register(cmd)
	fl.IntVar(&f.workers, "workers", 1, "reflect with N threads, each its own socket on the port (SO_REUSEPORT); peers (and a client's -P flows) are spread by address, a flow stays on one")
	fl.StringVar(&f.format, "format", "text", "text, or dping: one-way reports as dpong's lines (MESSAGES recv N lost N LATENCY min A avg B max C THROUGHPUT X m/s, in µs)")
	fl.Uint64Var(&f.reportEvery, "report-every", 0, "report one-way sessions every N probes instead of every interval (dpong's reporting period)")
	fl.StringVar(&f.iface, "interface", "", "bind the UDP and TCP sockets to this network interface (SO_BINDTODEVICE) and add its RX/TX packet counters to each interval line")
	fl.StringVar(&f.timestamps, "timestamps", "auto", "where reply times come from: user, kernel (SO_TIMESTAMPING on the UDP sockets), hardware (the NIC's, on --interface; turns them on), auto (kernel where the socket has them)")
	fl.StringVar(&f.logPath, "log", "", "write a CSV line per reply sent to this file (- for stdout): peer, session, sequence, T2 and T3 in user space and from kernel stamps, response times")
	f.maxRate = reflector.DefaultMaxRate
	fl.Var(&f.maxRate, "max-rate", "most probes/s a session may send, k and M suffixes; the rest are dropped and counted")
}

// maxWorkers bounds --workers.
const maxWorkers = 64

// serverConfig is what the server's flags make: what to open, and how to
// reflect.
type serverConfig struct {
	setup     server.Setup
	reflector reflector.Config // without Log and OnOneWay, set once open
	stamps    tstamp.Mode
	stamp     server.STAMPConfig
	nic       ifstats.Counters // --interface's counters before the start
}

// runServer runs the server the flags ask for until ctx is done. Its
// stdout begins with the addresses it listens on, once all is open, and
// then ready (when not nil) is called; its error joins the workers' and
// the log's.
func runServer(ctx context.Context, cmd *cobra.Command, f *serverFlags, stdout io.Writer, ready func()) error {
	c, err := f.config(cmd)
	if err != nil {
		return err
	}
	// Scheduling is checked (and --mlock done) before anything is
	// opened or printed; its notes go to stderr, so that stdout still
	// begins with the address.
	thread, err := f.sched.plan(cmd, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	ss, err := server.Open(ctx, c.setup)
	if err != nil {
		return serverUsage(err) // a port in use is an error, not a usage error
	}
	defer ss.Close()
	busy, err := f.busyPollSockets()
	if err != nil {
		return err
	}
	if err := ss.SetBusyPoll(busy); err != nil {
		return serverUsage(err)
	}
	used, err := ss.EnableStamps(c.stamps)
	if err != nil {
		return serverUsage(err)
	}
	// All set up: only now say where the server listens.
	plog, err := f.announce(stdout, ss, c.stamps, used)
	if err != nil {
		return err
	}
	c.reflector.Log = plog
	if ready != nil {
		ready()
	}
	out := newServerOut(stdout, f.iface, c.nic)
	out.load.srv = c.reflector.Load
	if !f.quiet {
		c.reflector.OnOneWay = out.oneWay(f.format)
	}
	total, err := ss.Serve(ctx, server.Config{Reflector: c.reflector, Intervals: !f.quiet, Interface: f.iface, Thread: thread, STAMP: c.stamp}, out)
	out.totals(total)
	if ss.STAMP != nil {
		out.stampTotals(ss.STAMPCounters())
	}
	if plog != nil && plog.Err() != nil {
		err = errors.Join(err, fmt.Errorf("--log %s: %w", f.logPath, plog.Err()))
	}
	return err
}

// serverUsage makes the server's configuration errors usage errors.
func serverUsage(err error) error {
	if errors.Is(err, server.ErrConfig) {
		return usageError{err}
	}
	return err
}

// announce says where the server listens and with which stamps, and, with
// --log -, starts the log on stdout after the UDP address, and returns
// the log (nil without --log).
func (f *serverFlags) announce(stdout io.Writer, ss *server.Listeners, mode tstamp.Mode, used string) (*probelog.Writer, error) {
	fmt.Fprintf(stdout, "listening on udp://%s\n", ss.UDP[0].LocalAddr())
	if mode != tstamp.User && (!f.quiet || mode != tstamp.Auto) {
		fmt.Fprintf(stdout, "timestamps: %s on UDP (TCP and Unix sockets: user-space times)\n", used)
	}
	plog := ss.Log
	if f.logPath == "-" {
		var err error
		if plog, err = probelog.NewWriter(stdout, reflector.LogHeader); err != nil {
			return nil, fmt.Errorf("--log %s: %w", f.logPath, err)
		}
	}
	if ss.TCP != nil {
		fmt.Fprintf(stdout, "listening on tcp://%s\n", ss.TCP.LocalAddr())
	}
	if ss.STAMP != nil {
		fmt.Fprintf(stdout, "listening on stamp://%s\n", ss.STAMP.LocalAddr())
	}
	if ss.Unix != nil {
		fmt.Fprintf(stdout, "listening on unix://%s\n", f.unixPath)
	}
	if ss.Unixgram != nil {
		fmt.Fprintf(stdout, "listening on unixgram://%s\n", f.unixgramPath)
	}
	if ss.DBus != nil {
		fmt.Fprintf(stdout, "listening on dbus %s as %s\n", f.dbusBus, f.dbusName)
	}
	return plog, nil
}

// busyPollSockets reads --busy-poll: the sockets to spin on.
func (f *serverFlags) busyPollSockets() (server.BusyPoll, error) {
	var busy server.BusyPoll
	if f.busyPoll != "" {
		for _, k := range strings.Split(f.busyPoll, ",") {
			switch k {
			case "all", "true": // true: as when the flag was a boolean
				busy = server.BusyPoll{UDP: true, TCP: true, Unix: true}
			case "false":
			case "udp":
				busy.UDP = true
			case "tcp":
				busy.TCP = true
			case "unix":
				busy.Unix = true
			default:
				return busy, usagef("--busy-poll=%s: want all, or a list of udp, tcp and unix", f.busyPoll)
			}
		}
	}
	if explicit := f.busyPoll != "all" && f.busyPoll != "true"; explicit && busy.TCP && !f.tcp {
		return busy, usagef("--busy-poll=%s: no TCP socket to spin on (--tcp=false)", f.busyPoll)
	} else if explicit && busy.Unix && f.unixPath == "" {
		return busy, usagef("--busy-poll=%s: no --unix socket to spin on", f.busyPoll)
	}
	return busy, nil
}

// checkListen checks --listen's form before anything is opened: HOST:PORT
// or :PORT, the port a number from 0 to 65535 (or a service name). A
// host that does not resolve, or is not this host's, is found by bind.
func checkListen(addr string) error {
	const want = "want HOST:PORT or :PORT, the port 0 to 65535 (0 picks a free one)"
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %s: %s", addr, want)
	}
	if _, err := net.LookupPort("udp", port); err != nil || port == "" {
		return usagef("--listen %s: bad port %q; %s", addr, port, want)
	}
	return nil
}

// config checks the flags, in the order their errors are told, and makes
// the server's configuration from them.
func (f *serverFlags) config(cmd *cobra.Command) (serverConfig, error) {
	var c serverConfig
	if err := f.checkValues(); err != nil {
		return c, err
	}
	if f.iface != "" {
		nic, err := ifstats.Read(f.iface)
		if err != nil {
			return c, usagef("--interface %s: %v", f.iface, err)
		}
		c.nic = nic
	}
	key, err := loadKey(f.key, f.keyFile)
	if err != nil {
		return c, err
	}
	prefixes, err := parseAllow(f.allow)
	if err != nil {
		return c, err
	}
	stampAddr, err := f.stamp.config(cmd, &c.stamp)
	if err != nil {
		return c, err
	}
	if err := f.checkBounds(cmd); err != nil {
		return c, err
	}
	if c.stamps, err = f.stampMode(); err != nil {
		return c, err
	}
	if err := f.lim.check(); err != nil {
		return c, err
	}
	loads, err := f.load.server(cmd, f.lim.sendTimeout)
	if err != nil {
		return c, err
	}
	mem := f.lim.budget(f.shared)
	so := sockopt.Options{TOS: f.tos, TTL: f.ttl, Buffer: int(f.buffer), Congestion: f.congestion, NoDelayOff: !f.nodelay, Interface: f.iface}
	udpOpts := so
	udpOpts.Congestion, udpOpts.NoDelayOff = "", false
	c.setup = server.Setup{Listen: f.listen, Workers: f.workers, UDP: udpOpts, TCP: f.tcp,
		Stream:   transport.ListenOptions{Socket: so, QuickAck: reflector.QuickAck(f.quickAck), Limits: f.lim.stream(f.idleTimeout, mem)},
		UnixPath: f.unixPath, GramPath: f.unixgramPath, DBusBus: f.dbusBus, DBusName: f.dbusName, LogPath: f.logPath, STAMP: stampAddr}
	c.reflector = reflector.Config{IdleTimeout: f.idleTimeout, ReportInterval: f.reportInterval,
		MaxSize: int(f.maxSize), MaxHold: f.maxHold, MaxRate: float64(f.maxRate), ReportEvery: f.reportEvery,
		Key: key, Allow: prefixes, MaxSessions: f.maxSessions, MaxSessionsPerSource: f.lim.sessionsPerSource,
		SourceSessions: quota.NewCounter(0, f.lim.sessionsPerSource), // one count for every transport
		MaxDuration:    f.maxDuration, MaxTotalRate: float64(f.maxTotalRate), Memory: mem, Load: loads}
	if f.reportInterval == 0 {
		c.reflector.ReportInterval = -1
	}
	return c, nil
}

// checkValues checks the flags that stand alone, from --listen to
// --max-rate.
func (f *serverFlags) checkValues() error {
	if err := checkListen(f.listen); err != nil {
		return err
	}
	if f.format != "text" && f.format != "dping" {
		return usagef("--format %q: want text or dping", f.format)
	}
	if err := checkReportInterval(f.reportInterval); err != nil {
		return err
	}
	if f.idleTimeout < minIdleTimeout {
		return usagef("--idle-timeout %s: want at least %s", units.FormatDuration(f.idleTimeout), units.FormatDuration(minIdleTimeout))
	}
	if f.maxSize < server.MinMaxSize || int(f.maxSize) > transport.StreamMaxMessage {
		return usagef("--max-size %s: want %d to %d bytes (%s)", f.maxSize, server.MinMaxSize, transport.StreamMaxMessage, byteSize(transport.StreamMaxMessage))
	}
	if f.maxHold <= 0 {
		return usagef("--max-hold %s: want a positive duration", f.maxHold)
	}
	if f.maxRate <= 0 {
		return usagef("--max-rate %s: want a positive number of probes/s", f.maxRate)
	}
	return nil
}

// parseAllow reads --allow: networks, or addresses, each a network of
// its own.
func parseAllow(allow []string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, a := range allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			if addr, aerr := netip.ParseAddr(a); aerr == nil {
				p = netip.PrefixFrom(addr, addr.BitLen())
			} else {
				return nil, usagef("--allow %q: want a network such as 192.0.2.0/24 or an address", a)
			}
		}
		prefixes = append(prefixes, p.Masked())
	}
	return prefixes, nil
}

// checkBounds checks the bounds on sessions and workers, and the socket
// flags.
func (f *serverFlags) checkBounds(cmd *cobra.Command) error {
	if f.maxDuration < minMaxDuration {
		return usagef("--max-duration %s: want at least %s", units.FormatDuration(f.maxDuration), units.FormatDuration(minMaxDuration))
	}
	if f.maxTotalRate < 0 {
		return usagef("--max-total-rate %s: want a rate of 0 (none) or more", f.maxTotalRate)
	}
	if f.maxSessions < 1 {
		return usagef("--max-sessions %d: want at least 1", f.maxSessions)
	}
	if f.workers < 1 || f.workers > maxWorkers {
		return usagef("--workers %d: want 1 to %d", f.workers, maxWorkers)
	}
	return checkSocketFlags(cmd, f.tos, f.ttl, f.buffer, f.congestion)
}

// stampMode reads --timestamps; hardware stamps are turned on on
// --interface here.
func (f *serverFlags) stampMode() (tstamp.Mode, error) {
	mode, ok := tstamp.ParseMode(f.timestamps)
	if !ok {
		return mode, usagef("--timestamps %q: want user, kernel, hardware or auto", f.timestamps)
	}
	if mode == tstamp.Hardware {
		if f.iface == "" {
			return mode, usagef("--timestamps hardware: name the interface to stamp on with --interface")
		}
		if _, err := tstamp.PrepareHardwareFor(f.iface, nil); err != nil {
			return mode, usagef("--timestamps hardware: %v; --timestamps kernel uses the kernel's stamps instead", err)
		}
	}
	return mode, nil
}
