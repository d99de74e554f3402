package reflector

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// Load streams: a stream connection's TypeLoad, answered with a LoadAck
// that hands the connection to the load server (Config.Load), or with a
// refusal.

// loadAsk answers a TypeLoad (in pkt, whose header is h). On a stream
// connection whose token is a valid cookie for it, the answer is a
// LoadAck, which hands the connection over to the load server once sent
// (transport.AdmitTake, then streamHandler.Take), or a refusal: ErrorLoad
// without a load server, ErrorLoadStreams beyond its limits. Anywhere
// else (a datagram, a bus), and to a wrong token or a stream of no
// duration, nothing.
func (r *Reflector) loadAsk(pkt []byte, h *wire.Header, in *arrival, o *outcome) []byte {
	if !r.stream {
		r.st.Drops[DropType]++ // load is for stream connections only
		return nil
	}
	if ok, _ := r.validCookie(h.Token, in.addr, h.Nonce, in.t2); !ok {
		r.st.Drops[DropToken]++
		return nil
	}
	if !r.allowed(in.addr) {
		r.st.Drops[DropRefused]++
		return nil
	}
	if r.cfg.Load == nil {
		r.st.Drops[DropLoadOff]++
		return r.loadRefusal(pkt, h, wire.ErrorLoad)
	}
	dir := load.Up
	if h.Flags&wire.FlagLoadDown != 0 {
		dir = load.Down
	}
	g, err := r.cfg.Load.Grant(in.addr, dir, time.Duration(h.HoldMicro)*time.Microsecond)
	switch {
	case errors.Is(err, load.ErrStreams):
		r.st.Drops[DropLoadStreams]++
		return r.loadRefusal(pkt, h, wire.ErrorLoadStreams)
	case err != nil:
		r.st.Drops[DropType]++ // malformed: no duration
		return nil
	}
	if old := r.loads[in.addr]; old != nil {
		old.Release() // cannot be: a connection is taken over once
	}
	r.loads[in.addr] = g
	*h = wire.Header{Type: wire.TypeLoadAck, Flags: h.Flags & wire.FlagLoadDown, Token: h.Token, Seq: h.Seq,
		T1: h.T1, T2: in.t2, RateLimit: r.cfg.Load.RateLimit(), HoldMicro: uint32(g.Duration / time.Microsecond)}
	o.admit = transport.AdmitTake
	return r.reply(pkt[:wire.HeaderLen+r.tagLen()], h)
}

// loadRefusal answers a TypeLoad (in pkt, whose header is h) with an
// Error of code: no larger than the TypeLoad, signed when there is a key.
func (r *Reflector) loadRefusal(pkt []byte, h *wire.Header, code wire.ErrorCode) []byte {
	e := wire.Header{Type: wire.TypeError, Token: h.Token, Seq: h.Seq, T1: h.T1, Code: code}
	return r.reply(pkt[:wire.HeaderLen+r.tagLen()], &e)
}

// Take serves the load stream granted to the connection of from, which
// the listener hands over after the LoadAck, until the stream ends; the
// listener closes the connection then.
func (h streamHandler) Take(c net.Conn, from netip.AddrPort) {
	r := h.r
	r.mu.Lock()
	g := r.loads[from]
	delete(r.loads, from)
	r.mu.Unlock()
	if g == nil {
		return
	}
	if errors.Is(g.Serve(c), load.ErrStalled) {
		r.mu.Lock()
		r.st.Drops[DropLoadStalled]++
		r.mu.Unlock()
	}
}
