package reflector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// The session table: sessions by token, the cookies that open them, the
// dead tokens that must not open one again, the rate buckets, the idle
// sweep, and the sequence window of each.

// sessionTable is the reflector's sessions by token, the tokens they left
// dead, and the key their cookies are made with.
type sessionTable struct {
	mac      hash.Hash // keys the cookies
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
}

// newSessionTable returns an empty table for cfg, defaults filled in.
func newSessionTable(cfg Config) sessionTable {
	return sessionTable{
		mac:      hmac.New(sha256.New, cfg.Secret),
		sessions: make(map[uint64]*session),
		bySource: cfg.SourceSessions,
		dead:     make(map[uint64]deadToken),
		byAddr:   make(map[netip.AddrPort]uint64),
		deadCount: quota.NewCounter(deadPerSession*cfg.MaxSessions,
			deadPerSession*cfg.MaxSessionsPerSource),
	}
}

// cookieEpoch is how long a cookie stays valid before a session uses it: a
// cookie is accepted in the epoch it was made and the next, so for 10 to
// 20 seconds. A session's entry outlives its cookie (see Sweep), so that a
// token opens one session only.
const cookieEpoch = int64(10 * time.Second)

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
		r.openSessions++
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
		r.openSessions--
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
			r.openSessions--
			continue
		}
		if now-s.lastSeen > int64(r.cfg.IdleTimeout) && !r.forget(tok, s, now) && !s.closed {
			s.closed, s.swept = true, true
			r.openSessions--
		}
	}
}

// seenWindow is how many recent sequence numbers a one-way session
// remembers to tell duplicates from reordered probes.
const seenWindow = 1 << 16

// seqWindow remembers which of the last seenWindow sequence numbers were
// seen, to tell duplicates from reordered probes.
type seqWindow struct {
	maxSeq uint64
	seen   [seenWindow / 64]uint64 // bit seq%seenWindow: seen
}

// add marks seq seen and says whether it was a duplicate, or arrived after
// a higher one (too old to tell counts as reordered, not duplicate).
func (w *seqWindow) add(seq uint64) (dup, reordered bool) {
	bit := &w.seen[(seq%seenWindow)/64]
	mask := uint64(1) << (seq % 64)
	switch {
	case seq+seenWindow <= w.maxSeq:
		return false, true
	case seq <= w.maxSeq && *bit&mask != 0:
		return true, false
	case seq < w.maxSeq:
		reordered = true
	default:
		// Forget what the window slides past.
		if seq-w.maxSeq >= seenWindow {
			clear(w.seen[:])
		} else {
			for s := w.maxSeq + 1; s < seq; s++ {
				w.seen[(s%seenWindow)/64] &^= 1 << (s % 64)
			}
		}
		w.maxSeq = seq
	}
	*bit |= mask
	return false, reordered
}
