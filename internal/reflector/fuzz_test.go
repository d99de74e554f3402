package reflector

import (
	"testing"

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
		{Type: wire.TypeProbe, Token: tok, Seq: 1, T1: 5},
		{Type: wire.TypeProbe, Flags: wire.FlagWarmup, Token: tok, Seq: 2},
		{Type: wire.TypeClose, Token: tok},
		{Type: wire.TypeReply, Token: tok},
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
		r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Seq: 1}, wire.HeaderLen), alice, clk.Now())
		from := alice
		if fromBob {
			from = bob
		}
		in := len(pkt)
		before := r.Stats()
		reply := r.Handle(pkt, from, clk.Now())
		after := r.Stats()
		if after.PacketsIn != before.PacketsIn+1 {
			t.Fatalf("Handle counted %d packets in for one", after.PacketsIn-before.PacketsIn)
		}
		if reply == nil {
			// Every message left unanswered is a drop with a reason.
			if after.Dropped() != before.Dropped()+1 {
				t.Fatalf("Handle(%x) neither answered nor counted one drop", pkt)
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
