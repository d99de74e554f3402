// Package reflector bounces volley probes back to their senders, stamping
// each with its receive and send times and the session's received count.
//
// A reflector keeps no state for a peer until the peer has echoed a cookie
// (see package wire), and until then never sends more bytes than it
// received: the Cookie answering a Hello is the 64-byte header, and a Hello
// is at least that. Replies to probes are the size of the probe.
//
// With a load server (Config.Load), a stream connection whose session is
// open may ask for a bulk stream instead (wire.TypeLoad): the reflector
// answers with a LoadAck and hands the connection to the load server
// (package load), within its limits; without one, it refuses.
package reflector

import (
	"net/netip"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// Reflector holds the state of one reflecting loop. It is not safe for
// concurrent use: Serve owns it.
type Reflector struct {
	cfg Config
	clk clock.Clock
	st  Counters

	sessionTable // see sessions.go
	heldReplies  // see hold.go

	signer  *wire.Signer // nil without a key
	allRate bucket       // MaxTotalRate

	// mu is held around everything but the reading when a stream
	// listener's connections call Handle on their own goroutines.
	mu      sync.Mutex
	unknown bucket // ErrorSession answers

	// Replies sent: see stamps.go.
	resp   responses
	stamps *stamper         // nil without kernel stamps
	log    *probelog.Buffer // nil without Config.Log

	// A stream listener's connections do the costly part of their
	// messages themselves, outside the lock (see streamHandler): the
	// listener zeroes a reply's room, messages are checked and signed
	// outside, and a held reply goes back to its connection to wait.
	stream  bool
	signers sync.Pool // of *wire.Signer, for the connections
	// loads are the load streams granted and not yet taken over, by
	// connection (see loadAsk).
	loads map[netip.AddrPort]*load.Grant
}

// unknownRate bounds the ErrorSession answers to probes of unknown
// sessions, per second: a client needs one to learn the reflector
// restarted, and a flood of made-up tokens gets no more than this.
const unknownRate = 100

// New returns a Reflector for cfg.
func New(cfg Config) (*Reflector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Reflector{
		cfg:          cfg,
		clk:          cfg.Clock,
		sessionTable: newSessionTable(cfg),
		loads:        make(map[netip.AddrPort]*load.Grant),
		heldReplies: heldReplies{
			alarm:  pace.NewAlarm(cfg.Clock),
			heldBy: quota.NewCounter(0, max(cfg.MaxHeld/heldShare, min(cfg.MaxHeld, minHeldShare))),
		},
	}
	if len(cfg.Key) > 0 {
		r.signer = wire.NewSigner(cfg.Key)
	}
	r.resp = newResponses(cfg.Stamps)
	if cfg.Log != nil {
		r.log = probelog.NewBuffer(cfg.Log)
	}
	return r, nil
}

// Limits returns the limits in force, defaults filled in.
func (r *Reflector) Limits() (maxSize int, maxHold time.Duration, maxRate float64) {
	return r.cfg.MaxSize, r.cfg.MaxHold, r.cfg.MaxRate
}
