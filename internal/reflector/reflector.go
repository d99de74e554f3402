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
	"errors"
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
	open   int
	st     Counters

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
