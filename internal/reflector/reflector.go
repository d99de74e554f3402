// Package reflector bounces volley probes back to their senders, stamping
// each with its receive and send times and the session's received count.
//
// A reflector keeps no state for a peer until the peer has echoed a cookie
// (see package wire), and until then never sends more bytes than it
// received: the Cookie answering a Hello is the 64-byte header, and a Hello
// is at least that. Replies to probes are the size of the probe.
package reflector

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"net/netip"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// Reflector holds the state of one reflecting loop. It is not safe for
// concurrent use: Serve owns it.
type Reflector struct {
	cfg      Config
	clk      clock.Clock
	mac      hash.Hash
	macIn    [8 + 16 + 2 + 8]byte
	macOut   [sha256.Size]byte
	sessions map[uint64]*session
	bySource *quota.Counter // sessions kept, per source
	// Tokens of sessions forgotten while their cookies live, until they
	// expire: such a token must not open a session again.
	dead      map[uint64]deadToken
	deadCount *quota.Counter
	// In stream mode, the session of each connection (its latest), so
	// that it ends with the connection.
	byAddr map[netip.AddrPort]uint64
	// openSessions counts the sessions open: not closed, by their
	// client or an idle timeout.
	openSessions int
	st           Counters

	heldQ  heldQueue      // by due time
	heldBy *quota.Counter // the held replies of each source, at most heldShare of MaxHeld
	free   [][]byte       // buffers of replies sent after their hold
	// alarm wakes the goroutine that sends held replies when they are
	// due (see holdStep); a reply held for sooner than the others wakes
	// it early.
	alarm *pace.Alarm

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
}

// unknownRate bounds the ErrorSession answers to probes of unknown
// sessions, per second: a client needs one to learn the reflector
// restarted, and a flood of made-up tokens gets no more than this.
const unknownRate = 100

// New returns a Reflector for cfg.
func New(cfg Config) (*Reflector, error) {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.ReportInterval == 0 {
		cfg.ReportInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewSystem()
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = MaxMessage
	}
	top := DefaultMaxSize
	if cfg.MaxMessage > MaxMessage {
		top = cfg.MaxMessage
	}
	if cfg.MaxSize <= 0 || cfg.MaxSize > top {
		cfg.MaxSize = top
	}
	cfg.MaxSize = max(cfg.MaxSize, wire.HeaderLen)
	if cfg.MaxHold <= 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = DefaultMaxRate
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionsPerSource <= 0 {
		cfg.MaxSessionsPerSource = DefaultMaxSessionsPerSource
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	if cfg.Secret == nil {
		cfg.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Secret); err != nil {
			return nil, fmt.Errorf("make cookie secret: %w", err)
		}
	}
	if cfg.SourceSessions == nil {
		cfg.SourceSessions = quota.NewCounter(0, cfg.MaxSessionsPerSource)
	}
	r := &Reflector{
		cfg:      cfg,
		clk:      cfg.Clock,
		mac:      hmac.New(sha256.New, cfg.Secret),
		sessions: make(map[uint64]*session),
		bySource: cfg.SourceSessions,
		dead:     make(map[uint64]deadToken),
		byAddr:   make(map[netip.AddrPort]uint64),
		deadCount: quota.NewCounter(deadPerSession*cfg.MaxSessions,
			deadPerSession*cfg.MaxSessionsPerSource),
		alarm:  pace.NewAlarm(cfg.Clock),
		heldBy: quota.NewCounter(0, max(cfg.MaxHeld/heldShare, min(cfg.MaxHeld, minHeldShare))),
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
