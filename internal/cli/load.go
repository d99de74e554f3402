package cli

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/underload"
	"github.com/volley-net/volley/internal/units"
)

// loadFlags are the client's latency-under-load flags (--load, --phase).
type loadFlags struct {
	load  string
	phase time.Duration
}

func (f *loadFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.load, "load", "", "latency under load: phases idle, loaded, idle again, the loaded one with N bulk TCP streams (default 4, at most 8) downloading (down), uploading (up) or both (both:N); probes open loop (--rate 100 unless given); needs a reflector with --allow-load")
	durationVarP(fl, &f.phase, "phase", "", underload.DefaultPhase, true, "with --load: each phase's length, 1s to 1m; a bare number is seconds")
}

// on says whether --load was given.
func (f loadFlags) on() bool { return f.load != "" }

// parse returns --load's directions and stream count.
func (f loadFlags) parse() ([]load.Direction, int, error) {
	word, count, hasCount := strings.Cut(f.load, ":")
	streams := underload.DefaultStreams
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > underload.MaxStreams {
			return nil, 0, usagef("--load %q: want a stream count of 1 to %d after the colon", f.load, underload.MaxStreams)
		}
		streams = n
	}
	switch word {
	case "down":
		return []load.Direction{load.Down}, streams, nil
	case "up":
		return []load.Direction{load.Up}, streams, nil
	case "both":
		return []load.Direction{load.Down, load.Up}, streams, nil
	}
	return nil, 0, usagef("--load %q: want down, up or both, optionally with :N streams (down:4)", f.load)
}

// checkLoad refuses what does not go with --load, before anything opens.
func (f clientFlags) checkLoad(cmd *cobra.Command, t transport.Target) error {
	changed := cmd.Flags().Changed
	if !f.loadF.on() {
		if changed("phase") {
			return usagef("--phase goes with --load")
		}
		return nil
	}
	if _, _, err := f.loadF.parse(); err != nil {
		return err
	}
	if f.loadF.phase < underload.MinPhase || f.loadF.phase > underload.MaxPhase {
		return usagef("--phase %s: want %s to %s", units.FormatDuration(f.loadF.phase), units.FormatDuration(underload.MinPhase), units.FormatDuration(underload.MaxPhase))
	}
	for _, flag := range []string{"duration", "count", "report-interval", "warmup", "threshold"} {
		if changed(flag) {
			return usagef("--%s does not go with --load: the run is three --phase long, a phase an interval", flag)
		}
	}
	for _, flag := range []string{"window", "burst", "oneway", "parallel"} {
		if changed(flag) && !(flag == "window" && f.window == 1) && !(flag == "parallel" && f.parallel == 1) {
			return usagef("--%s does not go with --load: its probes are one flow, open loop, with replies (--rate)", flag)
		}
	}
	if f.rate.max {
		return usagef("--rate max does not go with --load: the probes keep a schedule that the load cannot change")
	}
	if f.format == "iperf" || f.format == "dping" {
		return usagef("--format %s does not go with --load: its lines have no phases (text, json or jsonl have them)", f.format)
	}
	switch t.Scheme {
	case "udp", "tcp", "unix":
		return nil
	}
	return usagef("--load needs a udp://, tcp:// or unix:// target (its bulk streams go over TCP, or the Unix stream socket), not %s://", t.Scheme)
}

// loadConfig sets the probes' run for the phases: intervals of a phase,
// three phases, open loop at underload.DefaultRate unless a rate is given.
func (f clientFlags) loadConfig(cmd *cobra.Command, cfg *client.Config) {
	if !f.loadF.on() {
		return
	}
	cfg.ReportInterval = f.loadF.phase
	cfg.Duration = 3 * f.loadF.phase
	cfg.Count = 0
	if !cmd.Flags().Changed("rate") && !cmd.Flags().Changed("send-interval") {
		cfg.Rate = underload.DefaultRate
	}
}

// runLoad runs the probes through conn and the bulk streams to t.
func (f clientFlags) runLoad(ctx context.Context, t transport.Target, cfg client.Config, conn transport.Conn) (*result.Result, error) {
	dirs, streams, err := f.loadF.parse()
	if err != nil {
		return nil, err
	}
	lc := underload.Config{Directions: dirs, Streams: streams, Phase: f.loadF.phase, Dialer: f.loadDialer(t, conn, cfg.Key)}
	res, err := underload.Run(ctx, lc, cfg, conn)
	if res == nil && err != nil {
		// Nothing measured: the streams could not open (nothing listens,
		// a key refused, load refused), which is the set-up's fault, as a
		// probe connection that cannot open is.
		return nil, usageError{err}
	}
	return res, err
}

// loadDialer says how the bulk streams reach the reflector: where the
// probes go. Over IP that is the address the probes' socket is connected
// to (not the name again, which round-robin DNS could answer with another
// host), from the probes' local address, through --interface and with
// --congestion; --tos, --ttl and --buffer are the probes' own.
func (f clientFlags) loadDialer(t transport.Target, conn transport.Conn, key []byte) load.Dialer {
	if t.Scheme == "unix" {
		return load.Dialer{Network: "unix", Address: t.Address(), Key: key}
	}
	d := load.Dialer{Network: "tcp", Address: t.Address(), Key: key}
	remote, rok := ipOf(conn.RemoteAddr())
	local, lok := ipOf(conn.LocalAddr())
	if !rok || !lok {
		return d
	}
	d.Address = netip.AddrPortFrom(remote, uint16(t.Port)).String()
	opts := sockopt.Options{TOS: -1, Congestion: f.congestion, Interface: f.iface}
	nd := &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0)), Control: opts.Control}
	d.Connect = nd.DialContext
	return d
}

// ipOf returns the IP address of a (UDP or TCP) socket address.
func ipOf(a net.Addr) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}
