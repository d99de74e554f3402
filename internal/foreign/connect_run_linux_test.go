package foreign_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/foreign"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// The client's view of a Connect: a foreign peer.
var _ client.Foreign = (*foreign.Connect)(nil)

// runConnect runs the client with cfg against connect://addr.
func runConnect(t *testing.T, addr netip.AddrPort, cfg client.Config) *result.Result {
	t.Helper()
	c, err := foreign.NewConnect(foreign.ConnectConfig{Addr: addr, Timeout: cfg.Timeout, Options: sockopt.Options{TOS: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := client.Run(context.Background(), cfg, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestRunConnect: the client measures handshakes with a listener, closed
// loop with a window and open loop at a rate: every probe is answered,
// and the result says what the peer was.
func TestRunConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	for _, tc := range []struct {
		name string
		cfg  client.Config
	}{
		{"window", client.Config{Count: 300, Window: 4, Timeout: 2 * time.Second}},
		{"rate", client.Config{Count: 300, Rate: 2000, Window: 8, Timeout: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runConnect(t, addr, tc.cfg)
			c := res.Summary.Counts
			if c.Sent != tc.cfg.Count || c.Received != c.Sent || c.Lost != 0 {
				t.Fatalf("counts %+v, want %d sent and received", c, tc.cfg.Count)
			}
			if rtt := res.Summary.RTT; rtt.Count != int64(c.Sent) || rtt.Min <= 0 {
				t.Fatalf("RTT %+v, want %d handshake times > 0", rtt, c.Sent)
			}
			p, said := res.Config.Peer, res.PeerResults
			if p == nil || p.Protocol != "connect" || p.OneWay || p.Directions {
				t.Fatalf("Config.Peer = %+v, want a connect peer", p)
			}
			if said == nil || said.Connect == nil || *said.Connect != (result.ConnectPeer{}) {
				t.Fatalf("PeerResults = %+v, want nothing refused, timed out or failed", said)
			}
			if res.Config.Transport != "connect" || res.Summary.Up.Count != 0 {
				t.Fatalf("transport %q, up %+v: want connect, no one-way delays", res.Config.Transport, res.Summary.Up)
			}
		})
	}
}

// TestRunConnectRefused: against a closed port every probe is lost, and
// the peer's counts say each was refused.
func TestRunConnectRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	ln.Close()
	res := runConnect(t, addr, client.Config{Count: 50, Rate: 1000, Timeout: 100 * time.Millisecond})
	c := res.Summary.Counts
	if c.Sent != 50 || c.Lost != c.Sent || c.Received != 0 {
		t.Fatalf("counts %+v, want 50 sent and lost", c)
	}
	if p := res.PeerResults.Connect; p == nil || p.Refused != c.Sent || p.TimedOut+p.Failed != 0 {
		t.Fatalf("PeerResults.Connect = %+v, want %d refused", p, c.Sent)
	}
}

// TestRunConnectRefusedNotSilent: a service that refuses every handshake
// answers, so a closed-loop run longer than the client's silence goes on
// to its count (client.Answerer) instead of ending as a silent peer.
func TestRunConnectRefusedNotSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	ln.Close()
	// Each probe waits its timeout: 9 of them take 3 times the silence,
	// and the silence is 3 timeouts, so that a stall of the loop shorter
	// than two timeouts cannot look like one.
	res := runConnect(t, addr, client.Config{Count: 9, Timeout: 200 * time.Millisecond, Silence: 600 * time.Millisecond})
	if c := res.Summary.Counts; c.Sent != 9 || c.Lost != 9 {
		t.Fatalf("counts %+v, want 9 sent and lost", c)
	}
	if res.Stopped != "count" {
		t.Errorf("the run stopped for %q, want count", res.Stopped)
	}
	if p := res.PeerResults.Connect; p.Refused != 9 {
		t.Errorf("refused %d, want 9", p.Refused)
	}
}

// TestConnectGranted: the options given are read back as on any socket
// (transport.Granted), for the result's socket line.
func TestConnectGranted(t *testing.T) {
	c, err := foreign.NewConnect(foreign.ConnectConfig{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Options: sockopt.Options{TOS: 0x20, TTL: 33}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := transport.Granted(c)
	if err != nil || g.TTL != 33 || g.TOS != 0x20 {
		t.Fatalf("Granted = %+v, %v, want ttl 33 tos 0x20", g, err)
	}
}
