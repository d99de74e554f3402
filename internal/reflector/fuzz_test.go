package reflector

import (
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/wire"
)

// FuzzHandle drives the reflector's whole receive path: decoding, cookie
// checks, session lookup and reply. Whatever arrives, it must not panic, a
// reply must decode, and a peer without a session must never get back more
// bytes than it sent.
func FuzzHandle(f *testing.F) {
	r, clk := newTest(f)
	tok := handshake(f, r, clk, alice)
	for _, h := range []wire.Header{
		{Type: wire.TypeHello, Seq: 1},
		{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1, T1: 5},
		{Type: wire.TypeProbe, Flags: wire.FlagWarmup, Token: tok, Nonce: 99, Seq: 2},
		{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: 3, T1: 1},
		{Type: wire.TypeClose, Token: tok, Nonce: 99},
		{Type: wire.TypeReply, Token: tok},
		{Type: wire.TypeLoad, Flags: wire.FlagLoadDown, Token: tok, Nonce: 99, Seq: 1, HoldMicro: 1e6},
		{Type: wire.TypeLoad, Token: tok, Nonce: 99, Seq: 2},
	} {
		for _, size := range []int{wire.HeaderLen, 200} {
			f.Add(msg(f, h, size), false)
			f.Add(msg(f, h, size), true)
		}
	}
	f.Add([]byte("not volley"), true)
	f.Fuzz(func(t *testing.T, pkt []byte, fromBob bool) {
		// Alice holds a session; Bob has none.
		r, clk := newTest(t)
		if got := handshake(t, r, clk, alice); got != tok {
			t.Fatalf("cookie for alice changed: %x, want %x", got, tok)
		}
		r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1}, wire.HeaderLen), alice, clk.Now())
		from := alice
		if fromBob {
			from = bob
		}
		in := len(pkt)
		before, closingBefore := r.Counters(), closing(r)
		reply := r.Handle(pkt, from, clk.Now())
		after := r.Counters()
		if after.PacketsIn != before.PacketsIn+1 {
			t.Fatalf("Handle counted %d packets in for one", after.PacketsIn-before.PacketsIn)
		}
		if reply == nil {
			// Every message left unanswered is a drop with a reason, a
			// reply held for later, a one-way probe counted, or a one-way
			// Close waiting for the probes it overtook.
			heldBefore := len(r.heldQ)
			if after.Dropped() != before.Dropped()+1 && r.NextDue() == 0 && after.OneWay != before.OneWay+1 &&
				closing(r) != closingBefore+1 {
				t.Fatalf("Handle(%x) neither answered, held nor counted one drop", pkt)
			}
			r.Due(clk.Now()+int64(time.Hour), func(b []byte, to netip.AddrPort) {
				var h wire.Header
				if err := h.Decode(b); err != nil {
					t.Fatalf("held reply %x does not decode: %v", b, err)
				}
				if to != alice || (fromBob && len(b) > in) {
					t.Fatalf("held reply of %d bytes to %v for %d bytes from %v", len(b), to, in, from)
				}
			})
			if heldBefore > 0 && r.NextDue() != 0 {
				t.Fatal("held replies left after Due for an hour later")
			}
			return
		}
		var h wire.Header
		if err := h.Decode(reply); err != nil {
			t.Fatalf("reply %x does not decode: %v", reply, err)
		}
		if fromBob && len(reply) > in {
			t.Fatalf("Handle(%d bytes from a peer without a session) = %d bytes: amplification", in, len(reply))
		}
	})
}

// closing counts r's sessions whose one-way Close waits for the probes it
// overtook.
func closing(r *Reflector) int {
	n := 0
	for _, s := range r.sessions {
		if s.closing.on {
			n++
		}
	}
	return n
}

// FuzzHandleKeyed drives a reflector with a key: whatever arrives, it must
// not panic, and a message without a valid tag gets at most an Error no
// larger than itself.
func FuzzHandleKeyed(f *testing.F) {
	key := []byte("fuzz key")
	signer := wire.NewSigner(key)
	for _, h := range []wire.Header{
		{Type: wire.TypeHello, Seq: 1},
		{Type: wire.TypeProbe, Token: 9, Seq: 1},
		{Type: wire.TypeClose, Token: 9},
	} {
		b := msg(f, h, wire.HeaderLen+wire.TagLen)
		f.Add(append([]byte(nil), b...))
		h.Flags |= wire.FlagAuth
		_ = h.Encode(b)
		signer.Sign(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		clk := clock.NewFake(int64(1000 * time.Hour))
		r, err := New(Config{Clock: clk, Key: key, Secret: []byte("s")})
		if err != nil {
			t.Fatal(err)
		}
		in := len(pkt)
		valid := false
		var h wire.Header
		if h.Decode(pkt) == nil && h.Flags&wire.FlagAuth != 0 && signer.Verify(pkt) == nil {
			valid = true
		}
		reply := r.Handle(pkt, alice, clk.Now())
		if reply == nil || valid {
			return
		}
		var out wire.Header
		if err := out.Decode(reply); err != nil || out.Type != wire.TypeError || len(reply) > in {
			t.Fatalf("an unsigned %d-byte message got %d bytes back: %+v, %v", in, len(reply), out, err)
		}
	})
}
