package reflector

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// TestPathReply: a probe that asks for its path (wire.FlagPath) gets a
// reply that says what its IP header said, where the socket read it; one
// whose socket could not tell, or that did not ask, gets a reply without
// the flag and with bytes 6 and 7 zero.
func TestPathReply(t *testing.T) {
	read := transport.Path{TTL: 61, TClass: 46<<2 | 1, OK: true}
	cases := []struct {
		name     string
		flags    wire.Flags
		path     transport.Path
		wantFlag bool
	}{
		{"asked and read", wire.FlagPath, read, true},
		{"asked, not read", wire.FlagPath, transport.Path{}, false},
		{"not asked", 0, read, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, clk := newTest(t)
			tok := handshake(t, r, clk, alice)
			p := msg(t, wire.Header{Type: wire.TypeProbe, Flags: c.flags, Token: tok, Nonce: 99, Seq: 1}, 64)
			o := r.handle(p, arrival{addr: alice, t2: clk.Now(), path: c.path})
			h := decode(t, o.reply)
			if got := h.Flags&wire.FlagPath != 0; h.Type != wire.TypeReply || got != c.wantFlag {
				t.Fatalf("reply %+v: FlagPath %v, want a reply with it %v", h, got, c.wantFlag)
			}
			wantTTL, wantTC := uint8(0), uint8(0)
			if c.wantFlag {
				wantTTL, wantTC = c.path.TTL, c.path.TClass
			}
			if h.TTL != wantTTL || h.TClass != wantTC {
				t.Fatalf("reply TTL %d, TClass %#x; want %d, %#x", h.TTL, h.TClass, wantTTL, wantTC)
			}
		})
	}
}

// TestPathNoAlloc: answering a probe with its path allocates nothing.
func TestPathNoAlloc(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	p := make([]byte, 64)
	seq := uint64(0)
	path := transport.Path{TTL: 64, TClass: 2, OK: true}
	allocs := testing.AllocsPerRun(100, func() {
		seq++
		clk.Advance(time.Microsecond)
		_ = (&wire.Header{Type: wire.TypeProbe, Flags: wire.FlagPath, Token: tok, Nonce: 99, Seq: seq}).Encode(p)
		if o := r.handle(p, arrival{addr: alice, t2: clk.Now(), path: path}); o.reply == nil {
			t.Fatalf("probe %d unanswered", seq)
		}
	})
	if allocs != 0 {
		t.Fatalf("a probe with its path allocates %.1f times, want none", allocs)
	}
}
