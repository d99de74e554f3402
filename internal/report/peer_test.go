package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// The notes of the fixtures' peers. A STAMP reflector's and a connect://
// run's are the adapters' (package foreign), not this package's: any
// sentence does here.
const (
	echoNote    = "an echo service returns the bytes it got and nothing else: no times of its own and no count, so neither one-way delays nor loss per direction can be told"
	stampNote   = "a stateless reflector returns the sender's sequence numbers and keeps no count: loss per direction cannot be told (--stamp-stateful, with a reflector that numbers its replies, splits it)"
	connectNote = "a handshake carries no times of the service's own and no count: round trips only, and a handshake that did not complete is lost in no known direction"
)

// peerFixture is userFixture() against the foreign peer p, as the client
// records it: no up, down or response without p.OneWay (and no clock
// offset to estimate), loss, duplicates and reorders not split without
// p.Directions, no session (no reconnections, the count from the last
// reply), nothing granted.
func peerFixture(target, transport string, p *result.Peer, said *result.PeerResults) *result.Result {
	res := userFixture()
	res.PeerResults = said
	c := &res.Config
	c.Target, c.Transport, c.RemoteAddr, c.Peer = target, transport, strings.TrimPrefix(target, p.Protocol+"://"), p
	c.Granted, c.Threshold, c.WarmupCount = result.Grant{}, 0, 0
	res.ReflectorCount, res.Reconnects = "last-reply", nil
	none := stats.NewDist().Summary(pcts) // what the client records of a figure it has no value of
	ivs := append([]*result.Interval{&res.Summary}, pointers(res.Intervals)...)
	for _, iv := range ivs {
		iv.Counts.Reconnects = 0
		if !p.OneWay {
			iv.Response, iv.Up, iv.Down = none, none, none
			iv.IPDV.Up, iv.IPDV.Down = none, none
		}
		if !p.Directions {
			n := &iv.Counts
			n.LostUp, n.LostDown, n.DuplicatesUp, n.DuplicatesDown, n.ReorderedUp, n.ReorderedDown = 0, 0, 0, 0, 0, 0
		}
	}
	if !p.OneWay {
		res.ClockOffset = nil
		res.Distribution.Up, res.Distribution.Down = nil, nil
	}
	return res
}

func pointers(ivs []result.Interval) []*result.Interval {
	ps := make([]*result.Interval, len(ivs))
	for i := range ivs {
		ps[i] = &ivs[i]
	}
	return ps
}

// stampPeerFixture is a run against a stateless STAMP reflector in
// authenticated mode, whose clock is synchronized: one-way delays, no
// loss per direction.
func stampPeerFixture() *result.Result {
	return peerFixture("stamp://192.0.2.1:862", "udp",
		&result.Peer{Protocol: "stamp", OneWay: true, STAMP: &result.STAMPPeer{Authenticated: true, SSID: 4242}},
		&result.PeerResults{Note: stampNote, STAMP: &result.STAMPResults{Renumbered: 3, SenderTTL: 61,
			ErrorEstimate: result.ErrorEstimate{Synchronized: true, Error: 3906 * time.Nanosecond, Raw: 0x8801}}})
}

// connectFixture is a connect:// run, some of whose handshakes were
// refused or timed out.
func connectFixture() *result.Result {
	res := peerFixture("connect://127.0.0.1:22", "tcp", &result.Peer{Protocol: "connect"},
		&result.PeerResults{Note: connectNote, Connect: &result.ConnectPeer{Refused: 2, TimedOut: 1}})
	res.Config.Size = 0
	return res
}

// echoFixture is a run against a UDP echo service.
func echoFixture() *result.Result {
	return peerFixture("echo://127.0.0.1:7", "udp", &result.Peer{Protocol: "echo"}, &result.PeerResults{Note: echoNote})
}

// TestGoldenPeers: the text and JSON of runs against foreign peers.
func TestGoldenPeers(t *testing.T) {
	for name, res := range map[string]*result.Result{"peer-stamp": stampPeerFixture(), "peer-connect": connectFixture(), "peer-echo": echoFixture()} {
		var b bytes.Buffer
		if err := WriteText(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name+".txt", b.Bytes())
		b.Reset()
		if err := WriteJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name+".json", b.Bytes())
	}
}

// TestPeerText: the text of a foreign peer's run names the peer, says
// what its answers cannot tell and why, and shows no figure they do not
// carry.
func TestPeerText(t *testing.T) {
	for _, tt := range []struct {
		name      string
		res       *result.Result
		want, not []string
	}{
		{"echo", echoFixture(),
			[]string{"volley echo://127.0.0.1:7 (UDP echo) from", "lost 3 (0.150%: direction unknown), duplicates 2, reordered 4,", "\n         " + echoNote + "\n", " lost  ", "\nipdv rtt "},
			[]string{" up, 0 down)", "loss per direction is", "\nresponse ", "\nup ", "\ndown ", "ipdv up", "lost(up/dn)", "3(", "raw clock differences", "stamp    ", "connect  "}},
		{"stamp", stampPeerFixture(),
			[]string{"volley stamp://192.0.2.1:862 (STAMP reflector) from", "direction unknown", stampNote,
				"stamp    authenticated, stateless, SSID 4242; the reflector's clock error estimate ±3.91µs, synchronized to UTC (raw 0x8801); 3 replies renumbered",
				"\nresponse ", "\nup ", "\ndown ", "ipdv down"},
			[]string{"loss per direction is", "lost(up/dn)", "connect  "}},
		{"connect", connectFixture(),
			[]string{"volley connect://127.0.0.1:22 (TCP connect) from 127.0.0.1:40000: TCP handshakes,", "direction unknown", connectNote,
				"connect  refused 2, timed out 1, failed 0", "rate     1.00k handshakes/s started, 1.00k completed\n"},
			[]string{"64-byte", "\nup ", "stamp    ", "bit/s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.res); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the text has no %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("the text has %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestPeerFlows: a flow's line of a run of several against a peer that
// does not split loss leaves the split out.
func TestPeerFlows(t *testing.T) {
	res := echoFixture()
	res.Flows = []result.Flow{{LocalAddr: "127.0.0.1:40000", Summary: res.Summary}}
	var b strings.Builder
	writeFlows(&b, res)
	if want := "flow 1 from 127.0.0.1:40000: sent 2003, received 2000, lost 3; rtt min"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("writeFlows = %q, want it to start with %q", b.String(), want)
	}
}
