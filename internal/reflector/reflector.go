// Package reflector bounces volley probes back to their senders, stamping
// each with its receive and send times and the session's received count.
//
// A reflector keeps no state for a peer until the peer has echoed a cookie
// (see package wire), and until then never sends more bytes than it
// received: the Cookie answering a Hello is the 64-byte header, and a Hello
// is at least that. Replies to probes are the size of the probe.
package reflector

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// MaxMessage is the largest message the reflector reads over UDP (see
// Config.MaxMessage for others); a longer datagram is cut to this size and
// dropped as oversized.
const MaxMessage = 65535

// DropReason says why a message was dropped.
type DropReason int

// The reasons a message is dropped.
const (
	DropShort      DropReason = iota // shorter than the header
	DropMagic                        // not a volley message
	DropVersion                      // a version this reflector does not speak
	DropType                         // unknown type, or a type only reflectors send
	DropToken                        // no session and not a valid cookie
	DropAddress                      // a session's token from another address
	DropClosed                       // a probe after its session was closed
	DropOversize                     // larger than MaxMessage
	DropRate                         // above the session's rate limit
	DropHoldFull                     // too many replies already held
	DropAuth                         // missing or wrong authentication tag
	DropRefused                      // from an address --allow does not cover
	DropSessions                     // a new session beyond MaxSessions
	DropDuration                     // a probe after its session's longest duration
	DropReplayed                     // a probe older than its session's replay window, or a keyed session's copy
	DropSlowReader                   // a reply to a stream peer whose earlier replies wait unread
	DropMemory                       // a reply or session the memory budget cannot hold
	DropConns                        // a stream connection beyond the most, in all or from its source
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"short", "magic", "version", "type", "token", "address", "closed", "oversize", "rate", "hold-full", "auth", "refused", "sessions", "duration", "replayed", "slow-reader", "memory", "conns"}

// String returns the reason's short name, as printed in reports.
func (r DropReason) String() string {
	if r >= 0 && r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Stats are the reflector's counters, for one interval or since start.
type Stats struct {
	Elapsed        time.Duration
	PacketsIn      uint64
	PacketsOut     uint64
	BytesIn        uint64
	BytesOut       uint64
	SendErrors     uint64
	OneWay         uint64 // one-way probes received (they get no reply)
	Duplicates     uint64 // probes seen before in their session (answered, not counted)
	Sessions       int    // sessions open at the end of the interval
	SessionsOpened uint64 // sessions opened in the interval
	Drops          [NumDropReasons]uint64
	// Response is the distribution of response times (T3−T2 less the
	// hold) of the replies sent, and ResponseKernel the same from kernel
	// stamps (nil without them).
	Response, ResponseKernel *stats.Dist
}

// Dropped returns the sum of all drops.
func (s Stats) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

// Add returns the sum of s and o, as for several workers; Elapsed is the
// longer of the two.
func (s Stats) Add(o Stats) Stats {
	d := s
	d.Elapsed = max(s.Elapsed, o.Elapsed)
	d.PacketsIn += o.PacketsIn
	d.PacketsOut += o.PacketsOut
	d.BytesIn += o.BytesIn
	d.BytesOut += o.BytesOut
	d.SendErrors += o.SendErrors
	d.OneWay += o.OneWay
	d.Duplicates += o.Duplicates
	d.Sessions += o.Sessions
	d.SessionsOpened += o.SessionsOpened
	for i := range d.Drops {
		d.Drops[i] += o.Drops[i]
	}
	d.Response = mergeDists(s.Response, o.Response)
	d.ResponseKernel = mergeDists(s.ResponseKernel, o.ResponseKernel)
	return d
}

func (s Stats) sub(o Stats) Stats {
	d := s
	d.PacketsIn -= o.PacketsIn
	d.PacketsOut -= o.PacketsOut
	d.BytesIn -= o.BytesIn
	d.BytesOut -= o.BytesOut
	d.SendErrors -= o.SendErrors
	d.OneWay -= o.OneWay
	d.Duplicates -= o.Duplicates
	d.SessionsOpened -= o.SessionsOpened
	for i := range d.Drops {
		d.Drops[i] -= o.Drops[i]
	}
	return d
}

// Config configures a reflector. The zero value works.
type Config struct {
	// IdleTimeout ends a session that sent nothing for this long
	// (default 30s).
	IdleTimeout time.Duration
	// ReportInterval is how often OnInterval is called (default 1s; a
	// negative value turns interval reports off).
	ReportInterval time.Duration
	// OnInterval receives the counters of each interval. It runs on the
	// reflecting goroutine and must return quickly, and not keep the
	// Stats' distributions (Stats.Add makes copies).
	OnInterval func(Stats)
	// Clock defaults to the system clock. When it has an identity
	// (clock.Identifier), Cookies carry it (wire.FlagClockID).
	Clock clock.Clock
	// Secret keys the cookies; a random one is made when nil.
	Secret []byte
	// MaxMessage is the largest message the transport carries (default
	// the package's MaxMessage, UDP's); stream transports carry more.
	MaxMessage int
	// MaxSize bounds the reply size a probe may ask for (default and
	// most: DefaultMaxSize, or MaxMessage when that is larger than UDP's).
	MaxSize int
	// MaxHold bounds the hold a probe may ask for (default DefaultMaxHold).
	MaxHold time.Duration
	// MaxRate bounds each session's probes/s (default DefaultMaxRate);
	// probes above it are dropped and counted.
	MaxRate float64
	// MaxHeld bounds the replies held at once (default DefaultMaxHeld),
	// a source's at a quarter of it (heldShare) or 64, when more.
	MaxHeld int
	// OnOneWay receives, for each session sending one-way probes, what it
	// received in each report interval, or every ReportEvery probes when
	// that is set (dpong's reporting period). It runs on the reflecting
	// goroutine and must return quickly.
	OnOneWay    func(OneWayReport)
	ReportEvery uint64
	// Key, when set, makes every message carry an HMAC tag (see package
	// wire); messages without a valid one are dropped.
	Key []byte
	// Allow, when not empty, limits clients to these networks.
	Allow []netip.Prefix
	// MaxSessions bounds the sessions kept at once, open or recently
	// closed (default DefaultMaxSessions), and MaxSessionsPerSource those
	// of one source (quota.Source; default DefaultMaxSessionsPerSource).
	MaxSessions, MaxSessionsPerSource int
	// SourceSessions, when set, counts the sessions of each source across
	// several reflectors (a server's transports), for
	// MaxSessionsPerSource; each reflector counts its own otherwise.
	SourceSessions *quota.Counter
	// Memory is the budget held replies and one-way sessions' histograms
	// are taken from (nil: no limit); the stream listener's buffers come
	// from it too.
	Memory *quota.Memory
	// MaxDuration ends sessions this long after they opened: their probes
	// are answered with ErrorDuration (default DefaultMaxDuration).
	MaxDuration time.Duration
	// MaxTotalRate bounds the probes/s of all sessions together (0: none);
	// probes above it are dropped and counted as "rate".
	MaxTotalRate float64
	// Stamps says the socket given to Serve has kernel stamps turned on
	// (transport.Stamper): replies carry the reflector's kernel stamps to
	// clients that ask (wire.Stamps), and response times are measured
	// from them too.
	Stamps bool
	// Log, when set, gets a CSV line per reply sent (see LogHeader):
	// each interval's lines (every ReportInterval, or every IdleTimeout
	// without interval reports), and sooner when they add up to 64 KiB.
	Log *probelog.Writer
}

// Defaults for the reflector's limits.
const (
	DefaultMaxSize = 65000
	DefaultMaxHold = time.Second
	DefaultMaxRate = 1_000_000
	DefaultMaxHeld = 4096
	// DefaultMaxSessions bounds memory: a session with one-way probes
	// keeps a histogram of a few hundred kilobytes.
	DefaultMaxSessions          = 1000
	DefaultMaxSessionsPerSource = 64
	DefaultMaxDuration          = 24 * time.Hour
)

// cookieEpoch is how long a cookie stays valid before a session uses it: a
// cookie is accepted in the epoch it was made and the next, so for 10 to
// 20 seconds. A session's entry outlives its cookie (see Sweep), so that a
// token opens one session only.
const cookieEpoch = int64(10 * time.Second)

// onewayCost is what a one-way session's histograms (delay and IPDV)
// take of the memory budget.
const onewayCost = 512 << 10

type session struct {
	addr     netip.AddrPort
	src      netip.Prefix
	count    uint64
	lastSeen int64
	closed   bool  // by its Close, or swept (then swept is set too)
	swept    bool  // idle for longer than the idle timeout
	dead     int64 // when its cookie expires: until then, the entry stays
	opened   int64
	bucket   bucket  // rate limit
	oneway   *oneway // one-way probes, once the first arrives
	seqs     *seqWindow
	// Kernel transmit stamps of replies that came back, for the
	// session's next replies to carry, oldest first; nil until the first.
	t3q *t3Queue
	// A one-way session whose Close came before all its probes: the
	// CloseAck waits for them (see close).
	closing pendingClose
}

// pendingClose is a one-way session's Close whose CloseAck waits for the
// probes the Close overtook.
type pendingClose struct {
	on   bool   // a Close waits
	want uint64 // the measured probes the client sent
	seq  uint64 // the Close's, echoed
	t1   int64
	size int // the Close's length: the room of its CloseAck
}

// deadToken is a forgotten session's token whose cookie lives.
type deadToken struct {
	until int64 // when the cookie expires
	src   netip.Prefix
	swept bool // it idled out, rather than its client closed it
}

// deadPerSession is how many dead tokens the reflector keeps per session
// it may keep, in all and per source: a source that opens and closes
// sessions faster than their cookies expire is refused new ones.
const deadPerSession = 16

// held is a reply waiting out its hold.
type held struct {
	due  int64
	addr netip.AddrPort
	src  netip.Prefix
	buf  []byte
	rep  sentReply
}

// maxFreeHeld bounds the size of a held reply's buffer kept for reuse, and
// maxFree their number: larger ones come from the memory budget each time.
const (
	// heldShare: a source may hold at most 1/heldShare of MaxHeld (or
	// minHeldShare, when that is more), so that one cannot take every
	// slot from the others.
	heldShare    = 4
	minHeldShare = 64
	maxFreeHeld  = 2048
	maxFree      = 1024
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
	open   int
	st     Stats

	heldQ  []held         // a min-heap by due time
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
	resp    responses
	stamps  *stamper         // nil without kernel stamps
	log     *probelog.Buffer // nil without Config.Log
	rxStamp int64            // kernel receive stamp of the message Handle is given
	last    sentReply        // the probe reply Handle made last,
	lastOK  bool             // if it made one
	admit   bool             // the message Handle was given was a session's,
	cookied bool             // or earned a Cookie

	// A stream listener's connections do the costly part of their
	// messages themselves, outside the lock (see streamHandler): the
	// listener zeroes a reply's room, messages are checked and signed
	// outside, and a held reply goes back to its connection to wait.
	stream  bool
	tag     tagCheck      // what was found of the tag of the message Handle is given
	heldFor time.Duration // the hold of the reply Handle returned, in stream mode
	signers sync.Pool     // of *wire.Signer, for the connections
}

// unknownRate bounds the ErrorSession answers to probes of unknown
// sessions, per second: a client needs one to learn the reflector
// restarted, and a flood of made-up tokens gets no more than this.
const unknownRate = 100

// bucket is a token bucket of probes.
type bucket struct {
	tokens   float64
	refilled int64
}

// take refills b at rate probes/s, holding a tenth of a second's worth (at
// least 10), and takes a token if there is one.
func (b *bucket) take(rate float64, now int64) bool {
	burst := max(rate/10, 10)
	if b.refilled == 0 {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+float64(now-b.refilled)*rate/1e9)
	}
	b.refilled = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

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

// cookie returns the token for addr and the Hello's nonce in the given
// epoch. The nonce makes every Hello's token new, so a client that comes
// back from the same address and port gets a new session.
func (r *Reflector) cookie(addr netip.AddrPort, nonce uint64, epoch int64) uint64 {
	binary.BigEndian.PutUint64(r.macIn[0:], uint64(epoch))
	a := addr.Addr().As16()
	copy(r.macIn[8:], a[:])
	binary.BigEndian.PutUint16(r.macIn[24:], addr.Port())
	binary.BigEndian.PutUint64(r.macIn[26:], nonce)
	r.mac.Reset()
	r.mac.Write(r.macIn[:])
	return binary.BigEndian.Uint64(r.mac.Sum(r.macOut[:0]))
}

// validCookie reports whether token is a cookie for addr and nonce, and
// when it expires.
func (r *Reflector) validCookie(token uint64, addr netip.AddrPort, nonce uint64, now int64) (ok bool, dead int64) {
	e := now / cookieEpoch
	switch token {
	case r.cookie(addr, nonce, e):
		return true, (e + 2) * cookieEpoch
	case r.cookie(addr, nonce, e-1):
		return true, (e + 1) * cookieEpoch
	}
	return false, 0
}

// Limits returns the limits in force, defaults filled in.
func (r *Reflector) Limits() (maxSize int, maxHold time.Duration, maxRate float64) {
	return r.cfg.MaxSize, r.cfg.MaxHold, r.cfg.MaxRate
}

// Handle processes one received message pkt from addr, received at t2
// (Unix ns), and returns the reply to send now, or nil. The reply is
// written into pkt's memory, up to its capacity: a reply larger than the
// probe uses the space after it, zeroed. A reply with a hold is kept and
// sent by Due. Handle never allocates except to open a session or to hold
// a reply for the first time.
func (r *Reflector) Handle(pkt []byte, addr netip.AddrPort, t2 int64) []byte {
	r.admit, r.cookied = false, false
	r.st.PacketsIn++
	r.st.BytesIn += uint64(len(pkt))
	if len(pkt) > r.cfg.MaxMessage {
		r.st.Drops[DropOversize]++
		return nil
	}
	var h wire.Header
	if err := h.Decode(pkt); err != nil {
		switch {
		case errors.Is(err, wire.ErrShort):
			r.st.Drops[DropShort]++
		case errors.Is(err, wire.ErrMagic):
			r.st.Drops[DropMagic]++
		case errors.Is(err, wire.ErrVersion):
			r.st.Drops[DropVersion]++
		default:
			r.st.Drops[DropType]++
		}
		return nil
	}
	if r.signer != nil && r.tag != tagValid {
		if r.tag == tagForged || h.Flags&wire.FlagAuth == 0 || r.signer.Verify(pkt) != nil {
			r.st.Drops[DropAuth]++
			if h.Type == wire.TypeHello {
				return r.refuse(pkt, &h, wire.ErrorAuth)
			}
			return nil
		}
	}
	if r.signer == nil && h.Flags&wire.FlagAuth != 0 && h.Type == wire.TypeHello {
		// A keyed client takes only signed replies: say at once that
		// none will come, rather than let it wait out its tries.
		r.st.Drops[DropAuth]++
		return r.refuse(pkt, &h, wire.ErrorNoKey)
	}
	switch h.Type {
	case wire.TypeHello:
		if !r.allowed(addr) {
			r.st.Drops[DropRefused]++
			return r.refuse(pkt, &h, wire.ErrorRefused)
		}
		if r.open >= r.cfg.MaxSessions {
			r.st.Drops[DropSessions]++
			return r.refuse(pkt, &h, wire.ErrorSessions)
		}
		if src := quota.Source(addr); r.bySource.Of(src) >= r.cfg.MaxSessionsPerSource && !r.evictClosed(src, t2) {
			r.st.Drops[DropSessions]++
			return r.refuse(pkt, &h, wire.ErrorSourceSessions)
		}
		r.cookied = true
		// Stateless: answer with a cookie no larger than the Hello, and
		// the grants within the limits.
		size, hold := r.grant(&h, r.cfg.MaxSize)
		h = wire.Header{
			Type: wire.TypeCookie, Token: r.cookie(addr, h.Seq, t2/cookieEpoch), Seq: h.Seq, T1: h.T1, T2: t2,
			RateLimit: uint64(r.cfg.MaxRate), ReplySize: uint32(size), HoldMicro: hold,
		}
		if id := clock.IdentityOf(r.clk); id != 0 {
			// A client on the same clock measures its one-way delays
			// instead of estimating them.
			h.Flags, h.T3 = wire.FlagClockID, int64(id)
		}
		return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &h)
	case wire.TypeProbe, wire.TypeClose:
		s, known, full := r.session(h.Token, h.Nonce, addr, t2)
		if s == nil {
			switch {
			case full != 0 && h.Type == wire.TypeProbe:
				// Its Hello found room, but others took it since: say
				// so, no larger than the probe (a valid cookie shows
				// its sender receives at its address).
				e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, T1: h.T1, Code: full}
				return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
			case !known:
				return r.unknownSession(pkt, &h, t2)
			}
			return nil
		}
		if s.swept {
			// Idled out: its token is dead, but its client may still be
			// told, as if the session were unknown.
			return r.unknownSession(pkt, &h, t2)
		}
		// A session's message, while it is open, keeps a stream
		// connection in (Close included); a closed one's do not.
		r.admit = !s.closed
		if !s.closed && !s.closing.on && t2-s.opened <= int64(r.cfg.MaxDuration) {
			// Only an open session's messages keep it: Closes repeated
			// after the first, and messages past the longest duration,
			// do not, so that a closed, closing or ended session goes
			// within an idle timeout (two for a closing one's results)
			// whatever its peer sends.
			s.lastSeen = t2
		}
		if h.Type == wire.TypeClose {
			return r.close(pkt, &h, s, addr, t2)
		}
		if s.closed {
			r.st.Drops[DropClosed]++
			return nil
		}
		if t2-s.opened > int64(r.cfg.MaxDuration) {
			r.st.Drops[DropDuration]++
			// Within the session, so signed when there is a key; no
			// larger than the probe.
			e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, Code: wire.ErrorDuration}
			return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
		}
		if !s.bucket.take(r.cfg.MaxRate, t2) || (r.cfg.MaxTotalRate > 0 && !r.allRate.take(r.cfg.MaxTotalRate, t2)) {
			r.st.Drops[DropRate]++
			return nil
		}
		if h.Flags&wire.FlagOneWay != 0 {
			if h.Flags&wire.FlagWarmup == 0 {
				s.count++
			}
			r.oneWay(s, &h, addr, t2)
			if c := &s.closing; c.on && s.onewayDone(c.want) {
				// The last probe the Close overtook: the CloseAck goes
				// now, in this probe's buffer, with the Close's room.
				hc := wire.Header{Type: wire.TypeClose, Token: h.Token, Seq: c.seq, T1: c.t1}
				return r.close(pkt[:min(c.size, cap(pkt))], &hc, s, addr, t2)
			}
			return nil
		}
		// A copy of a probe already seen (duplicated on the way, or
		// replayed) is answered, so the client sees the duplicate, but not
		// counted: the count is of probes that arrived.
		if s.seqs == nil {
			s.seqs = new(seqWindow)
		}
		if h.Seq+seenWindow <= s.seqs.maxSeq {
			// Too old to tell a copy from a first arrival: no link
			// reorders this far, so it is a replay.
			r.st.Drops[DropReplayed]++
			return nil
		}
		dup, reordered := s.seqs.add(h.Seq)
		// The reply says whether its probe came after a later one, so
		// that the client can tell reordering up from reordering down.
		h.Flags &^= wire.FlagReordered
		if reordered {
			h.Flags |= wire.FlagReordered
		}
		if dup {
			r.st.Duplicates++
			if r.signer != nil {
				// Signed, so a copy is a replay or the network's: a
				// keyed session answers each probe once.
				r.st.Drops[DropReplayed]++
				return nil
			}
		} else if h.Flags&wire.FlagWarmup == 0 {
			s.count++
		}
		size, hold := r.grant(&h, cap(pkt))
		if size == 0 || (dup && size > len(pkt)) {
			// A copy never earns more than it brought.
			size = len(pkt)
		}
		size = max(size, wire.HeaderLen+r.tagLen())
		if n := len(pkt); size > n {
			pkt = pkt[:size]
			if !r.stream { // a stream listener zeroes the room itself
				clear(pkt[n:]) // never echo what an earlier datagram left there
			}
		} else {
			pkt = pkt[:size]
		}
		h.Type, h.T2, h.Received, h.ReplySize, h.HoldMicro = wire.TypeReply, t2, s.count, uint32(size), hold
		r.putStamps(pkt, &h, s)
		rep := sentReply{addr: addr, token: h.Token, seq: h.Seq, t2: t2, t2k: r.rxStamp, hold: int64(hold) * int64(time.Microsecond)}
		if hold == 0 {
			out := r.reply(pkt, &h)
			rep.t3 = h.T3
			r.last, r.lastOK = rep, true
			return out
		}
		if r.stream {
			// The connection holds it, and asks Send to stamp it.
			if r.signer != nil {
				h.Flags |= wire.FlagAuth
			}
			_ = h.Encode(pkt)
			r.heldFor = time.Duration(rep.hold)
			return pkt
		}
		r.hold(pkt, &h, s.src, t2+rep.hold, rep)
		return nil
	default:
		r.st.Drops[DropType]++
		return nil
	}
}

// oneWay records a one-way probe of session s.
func (r *Reflector) oneWay(s *session, h *wire.Header, addr netip.AddrPort, t2 int64) {
	r.st.OneWay++
	if h.Flags&wire.FlagWarmup != 0 {
		return
	}
	if s.oneway == nil {
		if r.cfg.Memory.Take(s.src, onewayCost) != quota.OK {
			r.st.Drops[DropMemory]++
			return
		}
		s.oneway = newOneway()
	}
	s.oneway.record(h.Seq, t2, t2-h.T1)
	if r.cfg.ReportEvery > 0 && s.oneway.win.Received >= r.cfg.ReportEvery && r.cfg.OnOneWay != nil {
		r.cfg.OnOneWay(s.oneway.report(addr))
	}
}

// reportOneWay hands over each one-way session's interval.
func (r *Reflector) reportOneWay() {
	if r.cfg.OnOneWay == nil || r.cfg.ReportEvery > 0 {
		return
	}
	for _, s := range r.sessions {
		if s.oneway != nil && (s.oneway.win.Received > 0 || s.oneway.seqs.maxSeq > s.oneway.winSeq) {
			r.cfg.OnOneWay(s.oneway.report(s.addr))
		}
	}
}

// grant clamps the reply size and hold h asks for to the limits, and the
// size to room, the space there is for the reply. A size of 0 (the probe's
// own) stays 0.
func (r *Reflector) grant(h *wire.Header, room int) (size int, holdMicro uint32) {
	size = min(int(h.ReplySize), r.cfg.MaxSize, room)
	if h.ReplySize > 0 {
		size = max(size, wire.HeaderLen)
	}
	holdMicro = min(h.HoldMicro, uint32(r.cfg.MaxHold/time.Microsecond))
	return size, holdMicro
}

// hold keeps the encoded reply pkt for rep.addr, of source src, until due.
// Small replies' buffers are reused; larger ones are taken from the memory
// budget.
func (r *Reflector) hold(pkt []byte, h *wire.Header, src netip.Prefix, due int64, rep sentReply) {
	if len(r.heldQ) >= r.cfg.MaxHeld || r.heldBy.Take(src) != quota.OK {
		r.st.Drops[DropHoldFull]++
		return
	}
	var buf []byte
	if len(pkt) <= maxFreeHeld {
		if n := len(r.free); n > 0 {
			buf, r.free = r.free[n-1], r.free[:n-1]
		} else {
			buf = make([]byte, 0, maxFreeHeld)
		}
	} else if r.cfg.Memory.Take(src, len(pkt)) != quota.OK {
		r.heldBy.Give(src)
		r.st.Drops[DropMemory]++
		return
	}
	if r.signer != nil {
		h.Flags |= wire.FlagAuth
	}
	_ = h.Encode(pkt)
	buf = append(buf[:0], pkt...)
	// Push onto the heap.
	r.heldQ = append(r.heldQ, held{due: due, addr: rep.addr, src: src, buf: buf, rep: rep})
	i := len(r.heldQ) - 1
	for i > 0 {
		p := (i - 1) / 2
		if r.heldQ[p].due <= r.heldQ[i].due {
			break
		}
		r.heldQ[p], r.heldQ[i] = r.heldQ[i], r.heldQ[p]
		i = p
	}
	if i == 0 {
		r.alarm.Wake() // due before the one waited for, if any
	}
}

// holdStep waits until the next held reply is due, and hands those due
// to send (under the lock); a reply held for sooner than the one waited
// for wakes it to wait for that one instead. It returns after sending, or
// when woken with stop true. The wait is precise (see pace.Alarm): it
// spins only for the last stretch before a reply is due, and sleeps
// otherwise, also while nothing is held.
func (r *Reflector) holdStep(send func(b []byte, addr netip.AddrPort), stop func() bool) {
	for {
		r.mu.Lock()
		due := r.NextDue()
		r.mu.Unlock()
		if due == 0 {
			due = math.MaxInt64
		}
		if _, woken := r.alarm.Until(due); !woken {
			break
		}
		if stop() {
			return
		}
	}
	r.mu.Lock()
	r.Due(r.clk.Now(), send)
	if r.stamps != nil {
		r.drainTx()
	}
	r.mu.Unlock()
}

// NextDue returns when the next held reply is due, or 0 when none is held.
func (r *Reflector) NextDue() int64 {
	if len(r.heldQ) == 0 {
		return 0
	}
	return r.heldQ[0].due
}

// Due hands every held reply due by now to send, stamped with its send
// time; send must not keep the buffer.
func (r *Reflector) Due(now int64, send func(b []byte, addr netip.AddrPort)) {
	for len(r.heldQ) > 0 && r.heldQ[0].due <= now {
		top := r.heldQ[0]
		last := len(r.heldQ) - 1
		r.heldQ[0] = r.heldQ[last]
		r.heldQ[last] = held{}
		r.heldQ = r.heldQ[:last]
		// Sift the moved element down.
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(r.heldQ) && r.heldQ[l].due < r.heldQ[m].due {
				m = l
			}
			if l+1 < len(r.heldQ) && r.heldQ[l+1].due < r.heldQ[m].due {
				m = l + 1
			}
			if m == i {
				break
			}
			r.heldQ[i], r.heldQ[m] = r.heldQ[m], r.heldQ[i]
			i = m
		}
		top.rep.t3 = r.clk.Now()
		wire.PutT3(top.buf, top.rep.t3)
		if r.signer != nil {
			r.signer.Sign(top.buf)
		}
		r.last, r.lastOK = top.rep, true
		send(top.buf, top.addr)
		r.lastOK = false
		r.release(top)
	}
}

// release gives back a held reply's buffer once it was sent: to the free
// list when small, to the memory budget otherwise.
func (r *Reflector) release(hd held) {
	r.heldBy.Give(hd.src)
	if cap(hd.buf) <= maxFreeHeld {
		if len(r.free) < maxFree {
			r.free = append(r.free, hd.buf)
		}
		return
	}
	r.cfg.Memory.Give(hd.src, len(hd.buf))
}

// close ends session s on its Close (in pkt, whose header is h) and
// returns the CloseAck: no larger than the Close, so a replayed Close
// amplifies nothing. It carries the follow-ups the Close asked for, or a
// one-way session's results, as far as the Close's size makes room.
//
// A Close with FlagOneWay says in Seq how many measured one-way probes
// its client sent: while fewer came, close returns nil and keeps the
// session open for them (see wire.FlagOneWay).
func (r *Reflector) close(pkt []byte, h *wire.Header, s *session, addr netip.AddrPort, t2 int64) []byte {
	if !s.closed && h.Flags&wire.FlagOneWay != 0 && !r.stream && !s.onewayDone(h.Seq) {
		// Probes the Close overtook on the way may still come: count
		// them, and answer when the last has, or at the client's next
		// Close (sent when its timeout ran out), whichever is first. A
		// stream keeps order: nothing can come after its Close.
		s.closing = pendingClose{on: true, want: h.Seq, seq: h.Seq, t1: h.T1, size: len(pkt)}
		return nil
	}
	s.closing = pendingClose{}
	if !s.closed {
		s.closed = true
		r.open--
	}
	asked := h.Flags & wire.FlagStamps
	*h = wire.Header{Type: wire.TypeCloseAck, Token: h.Token, Seq: h.Seq, T1: h.T1, T2: t2, Received: s.count}
	room := len(pkt) - r.tagLen() // what came, less the tag the answer needs too
	size := wire.HeaderLen
	if asked != 0 && s.oneway == nil {
		size += r.followUps(pkt[wire.HeaderLen:room], s, h)
	}
	if s.oneway != nil && s.oneway.win.Received > 0 && r.cfg.OnOneWay != nil {
		r.cfg.OnOneWay(s.oneway.report(addr)) // the last window
	}
	if s.oneway != nil {
		// The session's one-way results ride after the header, when
		// they fit (they are a few kilobytes; the client's Close makes
		// the room).
		if res, err := s.oneway.results(room - wire.HeaderLen); err == nil && wire.HeaderLen+len(res) <= room {
			size += copy(pkt[wire.HeaderLen:room], res)
		}
	}
	return r.reply(pkt[:size+r.tagLen()], h)
}

// onewayDone reports whether the one-way session s received want
// measured probes (it may have more: copies too old to tell).
func (s *session) onewayDone(want uint64) bool {
	if s.oneway == nil {
		return want == 0
	}
	return s.oneway.received >= want
}

// unknownSession answers a probe (in pkt, whose header is h) of a session
// the reflector does not know, or that idled out: it tells the client its
// session is gone (this reflector restarted, or swept it), so that it need
// not wait out its silence timeout. The answer is the header, no larger
// than the probe, and carries the probe's token and sequence number, which
// only its sender knows; at most unknownRate a second go out in all.
func (r *Reflector) unknownSession(pkt []byte, h *wire.Header, t2 int64) []byte {
	if h.Type != wire.TypeProbe || !r.unknown.take(unknownRate, t2) {
		return nil
	}
	e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, T1: h.T1, Code: wire.ErrorSession}
	return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
}

// tagLen is the room an authentication tag takes in each message.
func (r *Reflector) tagLen() int {
	if r.signer != nil {
		return wire.TagLen
	}
	return 0
}

// allowed reports whether addr may open a session.
func (r *Reflector) allowed(addr netip.AddrPort) bool {
	if len(r.cfg.Allow) == 0 {
		return true
	}
	a := addr.Addr().Unmap()
	for _, p := range r.cfg.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refuse answers a Hello with an Error of the header's size, unsigned: no
// larger than what came, and readable by a client without the key.
func (r *Reflector) refuse(pkt []byte, h *wire.Header, code wire.ErrorCode) []byte {
	e := wire.Header{Type: wire.TypeError, Seq: h.Seq, T1: h.T1, Code: code}
	_ = e.Encode(pkt)
	return pkt[:wire.HeaderLen]
}

// reply stamps T3 and encodes h into pkt, and signs it (in stream mode,
// the connection signs it).
func (r *Reflector) reply(pkt []byte, h *wire.Header) []byte {
	if wire.ClockIDOf(h) == 0 {
		h.T3 = r.clk.Now()
	}
	if r.signer != nil {
		h.Flags |= wire.FlagAuth
	}
	_ = h.Encode(pkt) // pkt is at least HeaderLen: it decoded
	if r.signer != nil && !r.stream {
		r.signer.Sign(pkt)
	}
	return pkt
}

// session finds the session for token, opening it when token is a valid
// cookie for addr and nonce. It counts and returns nil when the message
// must be dropped; known is false when the token is neither a session's
// nor a valid cookie, and full says which limit left no room for a new
// session (0: none did).
func (r *Reflector) session(token, nonce uint64, addr netip.AddrPort, now int64) (s *session, known bool, full wire.ErrorCode) {
	s = r.sessions[token]
	if s == nil {
		ok, dead := r.validCookie(token, addr, nonce, now)
		if !ok {
			r.st.Drops[DropToken]++
			return nil, false, 0
		}
		if d, gone := r.dead[token]; gone {
			r.st.Drops[DropClosed]++
			// An idled-out session's client may still be told.
			return nil, !d.swept, 0
		}
		if !r.allowed(addr) {
			r.st.Drops[DropRefused]++
			return nil, true, 0
		}
		src := quota.Source(addr)
		if len(r.sessions) >= r.cfg.MaxSessions && !r.evictClosed(netip.Prefix{}, now) {
			r.st.Drops[DropSessions]++
			return nil, true, wire.ErrorSessions
		}
		if r.bySource.Take(src) != quota.OK {
			if !r.evictClosed(src, now) || r.bySource.Take(src) != quota.OK {
				r.st.Drops[DropSessions]++
				return nil, true, wire.ErrorSourceSessions
			}
		}
		s = &session{addr: addr, src: src, opened: now, dead: dead}
		r.sessions[token] = s
		if r.stream {
			r.byAddr[addr] = token
		}
		r.open++
		r.st.SessionsOpened++
		return s, true, 0
	}
	if s.addr != addr {
		r.st.Drops[DropAddress]++
		return nil, true, 0
	}
	return s, true, 0
}

// evictClosed forgets one closed session (kept only to answer a repeated
// Close), of source src (any source when src is not valid), to make room
// for a new one. It reports whether it could.
func (r *Reflector) evictClosed(src netip.Prefix, now int64) bool {
	for tok, s := range r.sessions {
		if s.closed && (!src.IsValid() || s.src == src) {
			return r.forget(tok, s, now)
		}
	}
	return false
}

// forget deletes session s, of token tok, from the table, unless its
// cookie lives and the dead tokens are full: it reports whether it did.
func (r *Reflector) forget(tok uint64, s *session, now int64) bool {
	if now < s.dead {
		if r.deadCount.Take(s.src) != quota.OK {
			return false
		}
		r.dead[tok] = deadToken{until: s.dead, src: s.src, swept: !s.closed || s.swept}
	}
	if !s.closed {
		r.open--
	}
	if s.oneway != nil {
		r.cfg.Memory.Give(s.src, onewayCost)
	}
	r.bySource.Give(s.src)
	delete(r.sessions, tok)
	if r.byAddr[s.addr] == tok {
		delete(r.byAddr, s.addr)
	}
	return true
}

// Sweep forgets sessions idle for longer than the idle timeout at now, and
// the dead tokens whose cookies expired. A session forgotten while its
// cookie lives leaves its token dead (see forget); while the dead tokens
// are full, it stays as a closed session that tells its client it idled
// out.
func (r *Reflector) Sweep(now int64) {
	for tok, d := range r.dead {
		if now >= d.until {
			delete(r.dead, tok)
			r.deadCount.Give(d.src)
		}
	}
	for tok, s := range r.sessions {
		if s.closing.on && now-s.lastSeen > int64(r.cfg.IdleTimeout) {
			// A one-way session that waited this long for the probes its
			// Close overtook: closed now, its results kept for the
			// client's next Close for another idle timeout.
			s.closing, s.closed, s.lastSeen = pendingClose{}, true, now
			r.open--
			continue
		}
		if now-s.lastSeen > int64(r.cfg.IdleTimeout) && !r.forget(tok, s, now) && !s.closed {
			s.closed, s.swept = true, true
			r.open--
		}
	}
}

// Stats returns the counters since the reflector started.
func (r *Reflector) Stats() Stats {
	s := r.st
	s.Sessions = r.open
	return s
}

// Serve reflects messages arriving on conn until ctx is done or conn is
// closed, and returns the counters since start. It returns a nil error when
// stopped through ctx. A conn that moves batches (transport.BatchPacketConn)
// is read and answered up to transport.MaxBatch datagrams per system call:
// the datagrams of one batch share their receive time T2 (they were all
// waiting when the call returned), and their replies leave together.
func (r *Reflector) Serve(ctx context.Context, conn transport.PacketConn) (Stats, error) {
	stop := transport.InterruptReads(ctx, conn)
	defer stop()
	if sock, ok := conn.(transport.Stamper); ok && r.cfg.Stamps {
		r.stamps = &stamper{sock: sock}
	}
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.flushReplies() // the totals returned share the distributions
	}()

	bc, batch := transport.Batches(conn)
	if hc, ok := conn.(transport.StreamServer); ok {
		// Each connection answers on its own goroutine, and holds its
		// replies; this loop keeps the clock: intervals, the idle sweep.
		hc.SetHandler(newStreamHandler(r))
		batch = 1
	} else if hc, ok := conn.(transport.CallServer); ok {
		// A bus's callers, each on its own goroutine; held replies go
		// out through the holding goroutine (the bus answers the call
		// then).
		hc.SetHandler(func(msg []byte, from netip.AddrPort) []byte {
			now := r.clk.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lastOK = false
			reply := r.Handle(msg, from, now)
			if reply != nil {
				r.st.PacketsOut++ // its caller sends it
				r.st.BytesOut += uint64(len(reply))
				r.sent(0)
			}
			return reply
		})
		batch = 1
	}
	in := make([]transport.Message, batch)
	for i := range in {
		in[i].Buf = make([]byte, r.cfg.MaxMessage+1)
	}
	out := make([]transport.Message, 0, batch)
	reps := make([]sentReply, 0, batch) // out's, seq 0 for answers that are not replies
	send := func(b []byte, to netip.AddrPort) {
		id := r.nextTxID()
		if _, err := conn.WriteTo(b, to); err != nil {
			switch {
			case transport.IsSlowReader(err):
				r.st.Drops[DropSlowReader]++
			case errors.Is(err, transport.ErrNoMemory):
				r.st.Drops[DropMemory]++
			default:
				r.st.SendErrors++
			}
			return
		}
		r.st.PacketsOut++
		r.st.BytesOut += uint64(len(b))
		r.sent(id)
	}
	// A busy-polling socket honours read deadlines to the microsecond,
	// and its spinning readers leave no CPU for another goroutine: held
	// replies go from this loop, the read deadline set to the next one.
	bp, _ := conn.(transport.BusyPolled)
	busy := bp != nil && bp.BusyPolling()
	if !r.stream && !busy {
		// Held replies leave from a goroutine of their own, each when
		// due: this loop waits in the poller, which rounds its
		// deadlines up to the millisecond.
		var holder sync.WaitGroup
		var stopHold atomic.Bool
		holder.Go(func() {
			for !stopHold.Load() {
				r.holdStep(send, stopHold.Load)
			}
		})
		defer func() {
			stopHold.Store(true)
			r.alarm.Wake()
			holder.Wait()
		}()
	}
	start := r.clk.Now()
	tick := int64(r.cfg.ReportInterval)
	if tick < 0 {
		tick = int64(r.cfg.IdleTimeout)
	}
	next := start + tick
	var last Stats
	lastAt := start
	var deadline int64
	for {
		want := next
		if busy {
			if due := r.NextDue(); due != 0 && due < want {
				want = due
			}
		}
		if want != deadline {
			deadline = want
			if err := conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return r.total(start), fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil {
			return r.total(start), nil
		}
		n, err := bc.ReadBatch(in)
		now := r.clk.Now()
		r.mu.Lock()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
			case errors.Is(err, net.ErrClosed):
				r.mu.Unlock()
				return r.total(start), nil
			default:
				// Errors a socket reports for an earlier send (ICMP) do
				// not stop a reflector that serves others.
				r.st.SendErrors++
			}
		}
		for i := range n {
			m := &in[i]
			r.rxStamp, r.lastOK = m.Stamp.Best(), false
			if reply := r.Handle(m.Buf[:m.N], m.Addr, now); reply != nil {
				out = append(out, transport.Message{Buf: reply, N: len(reply), Addr: m.Addr})
				if !r.lastOK {
					r.last = sentReply{}
				}
				reps = append(reps, r.last)
			}
		}
		r.lastOK = false
		for pending, preps := out, reps; len(pending) > 0; {
			id := r.nextTxID()
			sent, err := bc.WriteBatch(pending)
			for j, m := range pending[:sent] {
				r.st.PacketsOut++
				r.st.BytesOut += uint64(m.N)
				r.last, r.lastOK = preps[j], preps[j].seq != 0
				r.sent(id + uint32(j))
			}
			if err == nil {
				break
			}
			// Skip the one that failed; send the rest.
			if transport.IsSlowReader(err) {
				r.st.Drops[DropSlowReader]++
			} else {
				r.st.SendErrors++
			}
			pending, preps = pending[sent+1:], preps[sent+1:]
		}
		out, reps = out[:0], reps[:0]
		if busy && len(r.heldQ) > 0 {
			r.Due(r.clk.Now(), send)
		}
		if r.stamps != nil {
			r.drainTx()
		}
		if now >= next {
			r.reportOneWay()
			r.Sweep(now)
			if r.log != nil {
				// The log streams: each interval's lines are in the file
				// by the next, not only once the buffer fills.
				r.log.Flush()
			}
			if r.cfg.ReportInterval > 0 && r.cfg.OnInterval != nil {
				cur := r.Stats()
				iv := cur.sub(last)
				iv.Elapsed = time.Duration(now - lastAt)
				// OnInterval must not keep them: they are reset next.
				iv.Response, iv.ResponseKernel = r.resp.iv, r.resp.ivK
				last, lastAt = cur, now
				r.cfg.OnInterval(iv)
				r.resp.iv.Reset()
				if r.resp.ivK != nil {
					r.resp.ivK.Reset()
				}
			}
			for next <= now {
				next += tick
			}
		}
		r.mu.Unlock()
	}
}

func (r *Reflector) total(start int64) Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.Stats()
	s.Elapsed = time.Duration(r.clk.Now() - start)
	s.Response, s.ResponseKernel = r.resp.total, r.resp.totalK
	return s
}

// nextTxID is the transmit-stamp ID of the next datagram sent.
func (r *Reflector) nextTxID() uint32 {
	if r.stamps == nil {
		return 0
	}
	return r.stamps.sock.NextTxID()
}

// tagCheck is what a stream connection found of a message's tag before
// handing it to Handle.
type tagCheck int

const (
	tagUnchecked tagCheck = iota // Handle checks it
	tagValid
	tagForged // missing or wrong
)

// streamHandler answers a stream listener's connections, each on its own
// goroutine. What a message needs of the reflector's state is done under
// its lock, and only that: checking and signing a tag, zeroing a large
// reply's room and holding a reply happen on the connection's goroutines,
// so that a peer's large messages cost other peers nothing, and the
// connections write their replies after the lock is released.
type streamHandler struct{ r *Reflector }

var _ transport.Handler = streamHandler{}

// newStreamHandler puts r in stream mode.
func newStreamHandler(r *Reflector) streamHandler {
	r.stream = true
	if len(r.cfg.Key) > 0 {
		key := r.cfg.Key
		r.signers.New = func() any { return wire.NewSigner(key) }
	}
	return streamHandler{r: r}
}

// verify reports whether msg carries a valid tag, or needs none.
func (h streamHandler) verify(msg []byte) bool {
	if h.r.signer == nil {
		return true
	}
	s := h.r.signers.Get().(*wire.Signer)
	defer h.r.signers.Put(s)
	return wire.FlagsOf(msg)&wire.FlagAuth != 0 && s.Verify(msg) == nil
}

// sign signs msg when the reflector has a key and msg is flagged for it.
func (h streamHandler) sign(msg []byte) {
	if h.r.signer == nil || wire.FlagsOf(msg)&wire.FlagAuth == 0 {
		return
	}
	s := h.r.signers.Get().(*wire.Signer)
	s.Sign(msg)
	h.r.signers.Put(s)
}

// Handle answers msg: the reply to send now, or one to send after hold.
func (h streamHandler) Handle(msg []byte, from netip.AddrPort) ([]byte, time.Duration, transport.Admission) {
	r := h.r
	ok := h.verify(msg)
	now := r.clk.Now()
	r.mu.Lock()
	r.lastOK, r.heldFor = false, 0
	r.tag = tagForged
	if ok {
		r.tag = tagValid
	}
	// Unverified, Handle counts it, and answers a Hello with its
	// refusal.
	reply := r.Handle(msg, from, now)
	hold, admit := r.heldFor, transport.AdmitNone
	switch {
	case r.admit:
		admit = transport.AdmitSession
	case r.cookied:
		admit = transport.AdmitLarge
	}
	if reply != nil && hold == 0 {
		r.st.PacketsOut++ // its connection sends it
		r.st.BytesOut += uint64(len(reply))
		r.sent(0)
	}
	r.tag = tagUnchecked
	r.mu.Unlock()
	if reply != nil && hold == 0 {
		h.sign(reply)
	}
	return reply, hold, admit
}

// Send stamps a held reply's send time as its connection sends it, and
// accounts it.
func (h streamHandler) Send(reply []byte, to netip.AddrPort) {
	r := h.r
	var hd wire.Header
	if hd.Decode(reply) != nil {
		return
	}
	t3 := r.clk.Now()
	wire.PutT3(reply, t3)
	r.mu.Lock()
	r.st.PacketsOut++
	r.st.BytesOut += uint64(len(reply))
	r.last = sentReply{addr: to, token: hd.Token, seq: hd.Seq, t2: hd.T2, t3: t3, hold: int64(hd.HoldMicro) * int64(time.Microsecond)}
	r.lastOK = true
	r.sent(0)
	r.mu.Unlock()
	h.sign(reply)
}

// Gone ends the session of a connection that closed: no other connection
// can go on with it, so its place is free at once.
func (h streamHandler) Gone(from netip.AddrPort) {
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	tok, ok := r.byAddr[from]
	if !ok {
		return
	}
	if s := r.sessions[tok]; s != nil && !r.forget(tok, s, r.clk.Now()) && !s.closed {
		s.closed, s.swept = true, true // the dead tokens are full: swept later
		r.open--
	}
}

// Drop counts a held reply its connection could not keep.
func (h streamHandler) Drop(why error) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if errors.Is(why, transport.ErrNoMemory) {
		h.r.st.Drops[DropMemory]++
		return
	}
	h.r.st.Drops[DropSlowReader]++
}

// Room returns the room the reply to the probe msg needs, within the
// reflector's limits, when it asks for more than its own size.
func (h streamHandler) Room(msg []byte) int {
	if n := min(wire.ReplySizeOf(msg), h.r.cfg.MaxSize); n > len(msg) {
		return n
	}
	return 0
}

// Refuse answers the first message of a refused connection, or a probe
// whose reply the memory budget cannot hold, with an Error no larger than
// the message: signed when the message is a session's and there is a key,
// as a refused Hello's answer is not.
func (h streamHandler) Refuse(msg []byte, from netip.AddrPort, why transport.Refusal) []byte {
	r := h.r
	var hd wire.Header
	if hd.Decode(msg) != nil {
		return nil
	}
	ok := h.verify(msg)
	r.mu.Lock()
	code := wire.ErrorMemory
	switch why {
	case transport.RefusedConns:
		code = wire.ErrorConns
		r.st.Drops[DropConns]++
	case transport.RefusedSourceConns:
		code = wire.ErrorSourceConns
		r.st.Drops[DropConns]++
	default:
		r.st.Drops[DropMemory]++
	}
	var reply []byte
	switch {
	case hd.Type == wire.TypeHello:
		reply = r.refuse(msg, &hd, code)
	case ok:
		e := wire.Header{Type: wire.TypeError, Token: hd.Token, Seq: hd.Seq, T1: hd.T1, Code: code}
		reply = r.reply(msg[:wire.HeaderLen+r.tagLen()], &e)
	}
	r.mu.Unlock()
	if reply != nil {
		h.sign(reply)
	}
	return reply
}
