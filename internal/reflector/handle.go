package reflector

import (
	"errors"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// The answer to one message: Handle and the steps it takes.

// arrival is what the caller knows of a message besides its bytes and
// its sender.
type arrival struct {
	addr netip.AddrPort // its sender
	t2   int64          // when it was read (Unix ns)
	t2k  int64          // its kernel receive stamp (0: none)
	tag  tagCheck       // in stream mode, what its connection found of its tag
	// path is what its IP header said, where its socket reads it (see
	// transport.PathReader; OK false otherwise).
	path transport.Path
}

// outcome is what handle made of a message, for the caller that sends the
// answer and accounts it.
type outcome struct {
	// reply is the answer to send now (nil: none), or in stream mode
	// after hold, which its connection waits out.
	reply []byte
	hold  time.Duration
	// admit is what the message earns its stream connection.
	admit transport.Admission
	// replied says reply answers a probe, and rep is what is known of
	// it, to account it once it left (see sent).
	replied bool
	rep     sentReply
}

// Handle processes one received message pkt from addr, received at t2
// (Unix ns), and returns the reply to send now, or nil. The reply is
// written into pkt's memory, up to its capacity: a reply larger than the
// probe uses the space after it, zeroed. A reply with a hold is kept and
// sent by Due. Handle never allocates except to open a session or to hold
// a reply for the first time.
func (r *Reflector) Handle(pkt []byte, addr netip.AddrPort, t2 int64) []byte {
	var o outcome
	return r.answerTo(pkt, &arrival{addr: addr, t2: t2}, &o)
}

// handle is Handle, told more of the message and telling more of its
// answer: what Serve and the stream and call handlers need to send and
// account it.
func (r *Reflector) handle(pkt []byte, in arrival) (o outcome) {
	o.reply = r.answerTo(pkt, &in, &o)
	return o
}

// answerTo answers pkt, and tells o more of the answer than its bytes.
func (r *Reflector) answerTo(pkt []byte, in *arrival, o *outcome) []byte {
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
	if r.signer != nil || h.Flags&wire.FlagAuth != 0 {
		if refusal, ok := r.authentic(pkt, &h, in.tag); !ok {
			return refusal
		}
	}
	switch h.Type {
	case wire.TypeHello:
		return r.hello(pkt, &h, in.addr, in.t2, o)
	case wire.TypeProbe, wire.TypeClose:
		return r.inSession(pkt, &h, in, o)
	case wire.TypeLoad:
		return r.loadAsk(pkt, &h, in, o)
	}
	r.st.Drops[DropType]++
	return nil
}

// authentic reports whether pkt, whose header is h, may be answered: with
// a key, it carries a valid tag (tag says what a stream connection found
// of it already); without, it is not a keyed client's Hello. A Hello that
// may not gets a refusal.
func (r *Reflector) authentic(pkt []byte, h *wire.Header, tag tagCheck) (refusal []byte, ok bool) {
	if r.signer != nil && tag != tagValid {
		if tag == tagForged || h.Flags&wire.FlagAuth == 0 || r.signer.Verify(pkt) != nil {
			r.st.Drops[DropAuth]++
			if h.Type == wire.TypeHello {
				return r.refuse(pkt, h, wire.ErrorAuth), false
			}
			return nil, false
		}
	}
	if r.signer == nil && h.Flags&wire.FlagAuth != 0 && h.Type == wire.TypeHello {
		// A keyed client takes only signed replies: say at once that
		// none will come, rather than let it wait out its tries.
		r.st.Drops[DropAuth]++
		return r.refuse(pkt, h, wire.ErrorNoKey), false
	}
	return nil, true
}

// hello answers a Hello (in pkt, whose header is h) with a Cookie, or a
// refusal when addr may not open a session or there is no room for one.
func (r *Reflector) hello(pkt []byte, h *wire.Header, addr netip.AddrPort, t2 int64, o *outcome) []byte {
	if !r.allowed(addr) {
		r.st.Drops[DropRefused]++
		return r.refuse(pkt, h, wire.ErrorRefused)
	}
	if r.openSessions >= r.cfg.MaxSessions {
		r.st.Drops[DropSessions]++
		return r.refuse(pkt, h, wire.ErrorSessions)
	}
	if src := quota.Source(addr); r.bySource.Of(src) >= r.cfg.MaxSessionsPerSource && !r.evictClosed(src, t2) {
		r.st.Drops[DropSessions]++
		return r.refuse(pkt, h, wire.ErrorSourceSessions)
	}
	// Stateless: answer with a cookie no larger than the Hello, and the
	// grants within the limits.
	size, hold := r.grant(h, r.cfg.MaxSize)
	*h = wire.Header{
		Type: wire.TypeCookie, Token: r.cookie(addr, h.Seq, t2/cookieEpoch), Seq: h.Seq, T1: h.T1, T2: t2,
		RateLimit: uint64(r.cfg.MaxRate), ReplySize: uint32(size), HoldMicro: hold,
	}
	if id := clock.IdentityOf(r.clk); id != 0 {
		// A client on the same clock measures its one-way delays
		// instead of estimating them.
		h.Flags, h.T3 = wire.FlagClockID, int64(id)
	}
	o.admit = transport.AdmitLarge
	return r.reply(pkt[:wire.HeaderLen+r.tagLen()], h)
}

// inSession answers a probe or a Close (in pkt, whose header is h) of a
// session, opening it when its token is a fresh cookie.
func (r *Reflector) inSession(pkt []byte, h *wire.Header, in *arrival, o *outcome) []byte {
	addr, t2 := in.addr, in.t2
	s, known, full := r.session(h.Token, h.Nonce, addr, t2)
	if s == nil {
		switch {
		case full != 0 && h.Type == wire.TypeProbe:
			// Its Hello found room, but others took it since: say so,
			// no larger than the probe (a valid cookie shows its sender
			// receives at its address).
			e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, T1: h.T1, Code: full}
			return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
		case !known:
			return r.unknownSession(pkt, h, t2)
		}
		return nil
	}
	if s.swept {
		// Idled out: its token is dead, but its client may still be
		// told, as if the session were unknown.
		return r.unknownSession(pkt, h, t2)
	}
	// A session's message, while it is open, keeps a stream connection
	// in (Close included); a closed one's do not.
	if !s.closed {
		o.admit = transport.AdmitSession
	}
	if !s.closed && !s.closing.on && t2-s.opened <= int64(r.cfg.MaxDuration) {
		// Only an open session's messages keep it: Closes repeated after
		// the first, and messages past the longest duration, do not, so
		// that a closed, closing or ended session goes within an idle
		// timeout (two for a closing one's results) whatever its peer
		// sends.
		s.lastSeen = t2
	}
	if h.Type == wire.TypeClose {
		return r.close(pkt, h, s, addr, t2)
	}
	return r.probe(pkt, h, s, in, o)
}

// probe answers a probe (in pkt, whose header is h) of session s, unless
// it must be dropped or is one-way.
func (r *Reflector) probe(pkt []byte, h *wire.Header, s *session, in *arrival, o *outcome) []byte {
	t2 := in.t2
	if s.closed {
		r.st.Drops[DropClosed]++
		return nil
	}
	if t2-s.opened > int64(r.cfg.MaxDuration) {
		r.st.Drops[DropDuration]++
		// Within the session, so signed when there is a key; no larger
		// than the probe.
		e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, Code: wire.ErrorDuration}
		return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
	}
	if !s.bucket.take(r.cfg.MaxRate, t2) || (r.cfg.MaxTotalRate > 0 && !r.allRate.take(r.cfg.MaxTotalRate, t2)) {
		r.st.Drops[DropRate]++
		return nil
	}
	if h.Flags&wire.FlagOneWay != 0 {
		return r.oneWayProbe(pkt, h, s, in.addr, t2)
	}
	return r.answer(pkt, h, s, in, o)
}

// oneWayProbe records a one-way probe (in pkt, whose header is h) of
// session s. It gets no answer, unless it is the last a Close waited for:
// then the CloseAck goes, in its buffer.
func (r *Reflector) oneWayProbe(pkt []byte, h *wire.Header, s *session, addr netip.AddrPort, t2 int64) []byte {
	if h.Flags&wire.FlagWarmup == 0 {
		s.count++
	}
	r.oneWay(s, h, addr, t2)
	if c := &s.closing; c.on && s.onewayDone(c.want) {
		// The last probe the Close overtook: the CloseAck goes now, in
		// this probe's buffer, with the Close's room.
		hc := wire.Header{Type: wire.TypeClose, Token: h.Token, Seq: c.seq, T1: c.t1}
		return r.close(pkt[:min(c.size, cap(pkt))], &hc, s, addr, t2)
	}
	return nil
}

// answer makes the reply to the probe in pkt, whose header is h, of
// session s: sent now, held, or in stream mode handed to its connection
// to hold. The probe is marked seen in the session's sequence window, and
// counted unless it is a copy; a copy too old to tell, or in a keyed
// session, is dropped.
func (r *Reflector) answer(pkt []byte, h *wire.Header, s *session, in *arrival, o *outcome) []byte {
	// A copy of a probe already seen (duplicated on the way, or replayed)
	// is answered, so the client sees the duplicate, but not counted: the
	// count is of probes that arrived.
	if s.seqs == nil {
		s.seqs = new(seqWindow)
	}
	if h.Seq+seenWindow <= s.seqs.maxSeq {
		// Too old to tell a copy from a first arrival: no link reorders
		// this far, so it is a replay.
		r.st.Drops[DropReplayed]++
		return nil
	}
	dup, reordered := s.seqs.add(h.Seq)
	// The reply says whether its probe came after a later one, so that
	// the client can tell reordering up from reordering down.
	h.Flags &^= wire.FlagReordered
	if reordered {
		h.Flags |= wire.FlagReordered
	}
	pathOf(h, in.path)
	if dup {
		r.st.Duplicates++
		if r.signer != nil {
			// Signed, so a copy is a replay or the network's: a keyed
			// session answers each probe once.
			r.st.Drops[DropReplayed]++
			return nil
		}
	} else if h.Flags&wire.FlagWarmup == 0 {
		s.count++
	}
	size, hold := r.grant(h, cap(pkt))
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
	h.Type, h.T2, h.Received, h.ReplySize, h.HoldMicro = wire.TypeReply, in.t2, s.count, uint32(size), hold
	r.putStamps(pkt, h, s, in.t2k)
	rep := sentReply{addr: in.addr, token: h.Token, seq: h.Seq, t2: in.t2, t2k: in.t2k, hold: int64(hold) * int64(time.Microsecond)}
	switch {
	case hold == 0:
		out := r.reply(pkt, h)
		rep.t3 = h.T3
		o.replied, o.rep = true, rep
		return out
	case r.stream:
		// The connection holds it, and asks Send to stamp it.
		r.sealLater(pkt, h)
		o.hold = time.Duration(rep.hold)
		return pkt
	}
	r.hold(pkt, h, s.src, in.t2+rep.hold, rep)
	return nil
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
		r.openSessions--
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
func (r *Reflector) allowed(addr netip.AddrPort) bool { return Allowed(r.cfg.Allow, addr) }

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
	if r.stream {
		r.sealLater(pkt, h)
	} else {
		h.Seal(pkt, r.signer) // pkt is at least HeaderLen: it decoded
	}
	return pkt
}

// sealLater encodes h into pkt flagged for the tag, when there is a key,
// that is added as the message leaves: a held reply's once its T3 is in
// (see Due), a stream's by its connection (streamHandler.sign).
func (r *Reflector) sealLater(pkt []byte, h *wire.Header) {
	if r.signer != nil {
		h.Flags |= wire.FlagAuth
	}
	_ = h.Encode(pkt)
}
