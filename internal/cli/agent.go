package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/monitor"
)

// agentLong is the agent's --help.
const agentLong = `Run a reflector and a monitor in one process: one per host of a fleet.

Every agent answers probes (the server's flags, --listen :7766 by default)
and probes its peers (the monitor's flags), exporting what it measures on
--metrics-listen for Prometheus. Peers come from a YAML file (--peers, the
monitor's targets format with a zone per peer; read again on SIGHUP and
when it changes) or from the addresses of a DNS name (--peers-dns, a
Kubernetes headless Service), re-resolved every --resolve-every. This
agent is the peer named by --self (default: the peer at one of this host's
addresses).

With at most --mesh-all other peers, an agent probes all of them. Past
that, it probes every peer of its own zone and --mesh-k of the others,
chosen on a ring in the order of a hash of their names, so that every
agent probes k peers and, without zones, is probed by k (pingmesh). Series
carry source_zone and target_zone labels when peers have zones. See
docs/monitor.md.`

// errNotListedYet: the agent is not among the peers its DNS name lists;
// it waits for a later lookup.
var errNotListedYet = errors.New("this agent is not among the peers yet")

// agentFlags are volley agent's own flags.
type agentFlags struct {
	server   serverFlags
	mon      monitorFlags
	peers    string
	peersDNS string
	self     string
	zone     string
	meshAll  int
	meshK    int
}

func newAgentCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Reflect and monitor peers in one process, for a fleet",
		Long:  agentLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd, f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.peers, "peers", "", "YAML file of the fleet's peers (targets format, a zone per peer); read again on SIGHUP and when it changes")
	fl.StringVar(&f.peersDNS, "peers-dns", "", "NAME:PORT: every address of NAME is a peer (a headless Service), named by its address")
	fl.StringVar(&f.self, "self", "", "which peer this agent is: its name or address (default: the peer at one of this host's addresses)")
	fl.StringVar(&f.zone, "zone", "", "this agent's zone, when the peer list gives it none")
	fl.IntVar(&f.meshAll, "mesh-all", 32, "probe every other peer while there are at most this many")
	fl.IntVar(&f.meshK, "mesh-k", 8, "past --mesh-all, probe this many peers outside the own zone (and all of it)")
	f.server.register(cmd)
	f.mon.register(cmd, true)
	// An agent runs for weeks: a reflector line a minute, not a second.
	_ = fl.Set("report-interval", "1m")
	fl.Lookup("report-interval").DefValue = "1m"
	return cmd
}

// checkPorts refuses a --metrics-listen port that the reflector's TCP
// listener (on --listen's port) would take too, naming both flags rather
// than failing on whichever binds second.
func (f *agentFlags) checkPorts() error {
	_, mp, err1 := net.SplitHostPort(f.mon.metricsListen)
	_, lp, err2 := net.SplitHostPort(f.server.listen)
	if err1 != nil || err2 != nil || !f.server.tcp || mp == "0" || mp != lp {
		return nil // a bad address is said where it is read
	}
	return usagef("--metrics-listen %s and --listen %s: the same TCP port (the reflector takes TCP on --listen's port too); want another", f.mon.metricsListen, f.server.listen)
}

// runAgent runs the reflector and the monitor until the context is done;
// either ending ends both.
func runAgent(cmd *cobra.Command, f *agentFlags, stdout, stderr io.Writer) error {
	switch {
	case (f.peers == "") == (f.peersDNS == ""):
		return usagef("want the peers from one of --peers FILE and --peers-dns NAME:PORT")
	case f.meshAll < 0:
		return usagef("--mesh-all %d: want 0 or more", f.meshAll)
	case f.meshK < 1:
		return usagef("--mesh-k %d: want at least 1", f.meshK)
	}
	if err := f.checkPorts(); err != nil {
		return err
	}
	f.server.shared = true
	m := &f.mon
	m.quiet, m.format = f.server.quiet, "text"
	if err := m.check(); err != nil {
		return err
	}
	key, err := loadKey(f.server.key, f.server.keyFile)
	if err != nil {
		return err
	}
	base := m.schedule(key)
	wc := monitor.WatchConfig{File: f.peers, FileOptions: monitor.FileOptions{Base: base, Zones: true, Source: "peers"}}
	fromDNS := f.peersDNS != ""
	if fromDNS {
		wc.Targets = []monitor.Target{{Name: "peers", URL: "udp://" + f.peersDNS, Source: "peers", Schedule: base}}
		wc.MaxAddresses = monitor.MaxPeerAddresses // a fleet, not one service's replicas
	}
	local, err := monitor.LocalAddrs()
	if err != nil && f.self == "" {
		return fmt.Errorf("--self not given, and this host's addresses: %w", err)
	}
	wc.Select = func(ps []monitor.Peer) ([]monitor.Target, error) {
		if fromDNS {
			ps = monitor.AddressPeers(ps)
		}
		self, err := monitor.FindSelf(f.self, ps, local)
		if err != nil && fromDNS {
			// A starting pod's address may not be in the Service yet.
			return nil, fmt.Errorf("%w: %w", errNotListedYet, err)
		}
		if err != nil {
			return nil, err
		}
		return monitor.Mesh(self, f.zone, ps, f.meshK, f.meshAll), nil
	}
	r, err := newMonitorRun(m, stdout, stderr)
	if err != nil {
		return err
	}
	defer r.close() // when the reflector does not open
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	srvErr := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		srvErr <- runServer(ctx, cmd, &f.server, stdout, func() { close(ready) })
		cancel()
	}()
	// The reflector's addresses come first on stdout, and a reflector
	// that cannot open ends the agent before it probes anyone.
	select {
	case <-ready:
	case err := <-srvErr:
		return err
	}
	err = r.run(ctx, wc, func(err error) bool { return errors.Is(err, errNotListedYet) })
	cancel()
	return errors.Join(err, <-srvErr)
}
