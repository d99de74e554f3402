package reflector

import (
	"errors"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// The handlers of listeners whose connections or callers answer on their
// own goroutines: stream listeners (TCP, Unix streams) and buses (D-Bus).

// tagCheck is what a stream connection found of a message's tag before
// handing it to Handle.
type tagCheck int

const (
	tagUnchecked tagCheck = iota // handle checks it (arrival's zero value)
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

var (
	_ transport.Handler = streamHandler{}
	_ transport.Taker   = streamHandler{}
)

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
func (h streamHandler) Handle(msg []byte, from netip.AddrPort, readAt int64) ([]byte, time.Duration, transport.Admission) {
	r := h.r
	in := arrival{addr: from, tag: tagForged, t2: readAt} // T2 as the read returned (SetReadClock)
	if h.verify(msg) {
		in.tag = tagValid
	}
	if in.t2 == 0 {
		in.t2 = r.clk.Now()
	}
	r.mu.Lock()
	// Unverified, handle counts it, and answers a Hello with its
	// refusal.
	o := r.handle(msg, in)
	if o.reply != nil && o.hold == 0 {
		r.st.PacketsOut++ // its connection sends it
		r.st.BytesOut += uint64(len(o.reply))
		if o.replied {
			r.sent(&o.rep, 0)
		}
	}
	r.mu.Unlock()
	if o.reply != nil && o.hold == 0 {
		h.sign(o.reply)
	}
	return o.reply, o.hold, o.admit
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
	rep := sentReply{addr: to, token: hd.Token, seq: hd.Seq, t2: hd.T2, t3: t3, hold: int64(hd.HoldMicro) * int64(time.Microsecond)}
	r.mu.Lock()
	r.st.PacketsOut++
	r.st.BytesOut += uint64(len(reply))
	r.sent(&rep, 0)
	r.mu.Unlock()
	h.sign(reply)
}

// Gone ends the session of a connection that closed: no other connection
// can go on with it, so its place is free at once.
func (h streamHandler) Gone(from netip.AddrPort) {
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.loads[from]; g != nil {
		// A grant its connection never served (Take always comes
		// first: this is for safety's sake).
		g.Release()
		delete(r.loads, from)
	}
	tok, ok := r.byAddr[from]
	if !ok {
		return
	}
	if s := r.sessions[tok]; s != nil && !r.forget(tok, s, r.clk.Now()) && !s.closed {
		s.closed, s.swept = true, true // the dead tokens are full: swept later
		r.openSessions--
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

// answerCall answers a bus's call msg from a caller, on the caller's
// goroutine (transport.CallServer); the bus sends the reply.
func (r *Reflector) answerCall(msg []byte, from netip.AddrPort) []byte {
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.handle(msg, arrival{addr: from, t2: now})
	if o.reply != nil {
		r.st.PacketsOut++ // its caller sends it
		r.st.BytesOut += uint64(len(o.reply))
		if o.replied {
			r.sent(&o.rep, 0)
		}
	}
	return o.reply
}
