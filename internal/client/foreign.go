package client

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
)

// Foreign is a connection to a peer that is not a volley reflector (a
// STAMP reflector, an echo service, a TCP port), adapted to volley's
// messages: Write takes volley probes and Read returns volley replies to
// them, with the probe's Token, Seq and T1, and T2, T3 and Received where
// the peer's answers carry them (Peer says which). Run opens no session
// with such a peer and sends it no Close: the adapter speaks the peer's
// protocol, and Run keeps its accounting.
//
// Peer is read as the run opens: the Result's Config.Peer. PeerResults
// is read as it ends: what the peer said, the Result's PeerResults.
type Foreign interface {
	transport.Conn
	Peer() *result.Peer
	PeerResults() *result.PeerResults
}

// Answerer is a Foreign peer that can answer a probe without a reply: a
// TCP service refuses a handshake with an RST. Answers counts such
// answers so far; a peer whose count moves is not silent, though its
// probes are lost.
type Answerer interface {
	Answers() uint64
}

// ErrForeignKey is the error of a run with a key against a foreign peer:
// volley's tags mean nothing to it (an adapter that authenticates, as
// STAMP's does, takes its key itself).
var ErrForeignKey = errors.New("client: a volley key (--key) is for volley reflectors")

// openForeign opens the run's session with a foreign peer f: no handshake,
// a token of the client's own that the adapter echoes in every reply.
func (r *run) openForeign(f Foreign) error {
	if r.signer != nil {
		return fmt.Errorf("%w, not a %s peer", ErrForeignKey, f.Peer().Protocol)
	}
	var tb [8]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return fmt.Errorf("make session token: %w", err)
	}
	r.foreign = f
	r.token = binary.BigEndian.Uint64(tb[:]) | 1 // never 0
	r.opened = r.clk.Now()
	r.heardAt(r.opened)
	r.segs = []segment{{token: r.token, first: 1}}
	if r.openLoop != nil {
		r.openLoop.session.Store(&sessionKey{token: r.token})
	}
	p := f.Peer()
	r.noOneWay, r.noDirections = !p.OneWay, !p.Directions
	r.answerer, _ = f.(Answerer)
	return nil
}

// answeredSince reports whether the foreign peer answered without a reply
// since the last look (see Answerer).
func (r *run) answeredSince() bool {
	if r.answerer == nil {
		return false
	}
	n := r.answerer.Answers()
	moved := n != r.answers
	r.answers = n
	return moved
}

// unsplit clears the directions of c's losses, duplicates and reorders:
// the peer's replies do not say them.
func unsplit(c *result.Counts) {
	c.LostUp, c.LostDown = 0, 0
	c.DuplicatesUp, c.DuplicatesDown = 0, 0
	c.ReorderedUp, c.ReorderedDown = 0, 0
}
