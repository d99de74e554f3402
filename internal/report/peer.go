package report

import (
	"fmt"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// The text of a run against a peer that is not a volley reflector
// (result.Peer): what it is, and what its answers could not tell.

// peerNames name result.Peer.Protocol in the header.
var peerNames = map[string]string{"stamp": "STAMP reflector", "echo": "UDP echo", "connect": "TCP connect"}

// PeerName names the foreign peer p ("STAMP reflector", "UDP echo", "TCP
// connect"), or its protocol as given when it is none of those.
func PeerName(p *result.Peer) string {
	if n, ok := peerNames[p.Protocol]; ok {
		return n
	}
	return p.Protocol
}

// undivided reports whether c's losses, duplicates and reorders are not
// split by direction: the peer's answers do not say it.
func undivided(c result.Config) bool { return c.Peer != nil && !c.Peer.Directions }

// noOneWay reports whether c's run has no one-way figures (response, up,
// down and their IPDV): its peer's answers carry no times of its own.
func noOneWay(c result.Config) bool { return c.Peer != nil && !c.Peer.OneWay }

// peerCountNote is the line under the probes' counts of a run against a
// foreign peer: what its answers cannot tell, or where the directions
// came from.
func peerCountNote(p *result.Peer, said *result.PeerResults) string {
	switch {
	case said != nil && said.Note != "":
		return "         " + said.Note + "\n"
	case p.Directions:
		return "         loss per direction is from the " + PeerName(p) + "'s own count in its replies; probes lost after its last reply are counted up (an estimate: nothing came back to say)\n"
	}
	return "         loss per direction is not known: the " + PeerName(p) + "'s answers do not say it\n"
}

// writePeer writes how the run spoke to a foreign peer and what the peer
// said: a STAMP reflector's mode and error estimate, a connect:// run's
// handshakes that did not complete.
func writePeer(b *strings.Builder, res *result.Result) {
	p, said := res.Config.Peer, res.PeerResults
	if p == nil || said == nil {
		return
	}
	if s, r := p.STAMP, said.STAMP; s != nil && r != nil {
		mode := "unauthenticated"
		if s.Authenticated {
			mode = "authenticated"
		}
		state := "stateless"
		if s.Stateful {
			state = "stateful (--stamp-stateful)"
		}
		fmt.Fprintf(b, "stamp    %s, %s, SSID %d; %s", mode, state, s.SSID, errorEstimate(r.ErrorEstimate))
		if r.Renumbered > 0 {
			fmt.Fprintf(b, "; %d replies renumbered by the reflector", r.Renumbered)
		}
		b.WriteString("\n")
		writeSenderTTL(b, r.SenderTTL, res.Config.Socket)
	}
	if c := said.Connect; c != nil {
		fmt.Fprintf(b, "connect  refused %d, timed out %d, failed %d (handshakes that did not complete, all counted lost)\n", c.Refused, c.TimedOut, c.Failed)
	}
}

// errorEstimate says what a STAMP reflector's error estimate says of its
// clock; a raw 0 (its multiplier may not be 0) is no reply having said one.
func errorEstimate(e result.ErrorEstimate) string {
	if e.Raw == 0 {
		return "no reply carried the reflector's clock error estimate"
	}
	sync := "not synchronized to UTC"
	if e.Synchronized {
		sync = "synchronized to UTC"
	}
	return fmt.Sprintf("the reflector's clock error estimate ±%s, %s (raw %#04x)", Duration(e.Error), sync, e.Raw)
}

// writeSenderTTL says the TTL (hop limit) the STAMP reflector saw on the
// last probe, and the hops up where the socket's TTL is known.
func writeSenderTTL(b *strings.Builder, ttl uint8, sock *result.Socket) {
	if ttl == 0 {
		return
	}
	fmt.Fprintf(b, "         probes arrived with TTL %d", ttl)
	if sock != nil && sock.TTL >= int(ttl) {
		fmt.Fprintf(b, " (%d sent: %s up)", sock.TTL, hops(sock.TTL-int(ttl)))
	}
	b.WriteString("\n")
}

// countsSplit renders n and its split by direction, "3(1/2)", or n
// alone where the run's peer does not split it.
func countsSplit(c result.Config, n, up, down uint64) string {
	if undivided(c) {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d(%d/%d)", n, up, down)
}
