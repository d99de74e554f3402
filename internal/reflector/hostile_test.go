package reflector

import (
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// TestTokenDeadAfterSession: once a session is closed or idled out, its
// cookie's token opens nothing again, however often it is replayed while
// the cookie lives, even when the session's entry must make room for
// others.
func TestTokenDeadAfterSession(t *testing.T) {
	for _, end := range []string{"close", "idle", "close, evicted"} {
		t.Run(end, func(t *testing.T) {
			clk := clock.NewFake(int64(1000 * time.Hour))
			r, err := New(Config{Clock: clk, Secret: []byte("s"), IdleTimeout: time.Second, MaxSessions: 2})
			if err != nil {
				t.Fatal(err)
			}
			tok := handshake(t, r, clk, alice)
			probe := func(seq uint64) []byte {
				return r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, ReplySize: 1000}, 64), alice, clk.Now())
			}
			if probe(1) == nil {
				t.Fatal("first probe not answered")
			}
			switch end {
			case "close", "close, evicted":
				r.Handle(msg(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}, 64), alice, clk.Now())
			case "idle":
				clk.Advance(2 * time.Second)
				r.Sweep(clk.Now())
			}
			if end == "close, evicted" {
				// Two new sessions need its room.
				for _, a := range []netip.AddrPort{bob, netip.MustParseAddrPort("192.0.2.7:9")} {
					tk := handshake(t, r, clk, a)
					if r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tk, Nonce: 99, Seq: 1}, 64), a, clk.Now()) == nil {
						t.Fatalf("a new session from %s was refused", a)
					}
				}
			}
			opened := r.Counters().SessionsOpened
			for i := range 5 {
				clk.Advance(time.Second)
				r.Sweep(clk.Now())
				if reply := probe(uint64(10 + i)); reply != nil && decode(t, reply).Type == wire.TypeReply {
					t.Fatalf("replay %d after %s answered with a reply", i, end)
				}
			}
			if got := r.Counters().SessionsOpened; got != opened {
				t.Fatalf("replays after %s opened %d sessions", end, got-opened)
			}
		})
	}
}

// TestNoAmplification: a copy of a probe never earns more than it
// brought, a keyed session answers each probe once, and a CloseAck is no
// larger than its Close.
func TestNoAmplification(t *testing.T) {
	t.Run("copy", func(t *testing.T) {
		r, clk := newTest(t)
		tok := handshake(t, r, clk, alice)
		ask := func() []byte {
			p := msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1, ReplySize: 60000}, 65536)
			return r.Handle(p[:64], alice, clk.Now())
		}
		if n := len(ask()); n != 60000 {
			t.Fatalf("first probe's reply is %d bytes, want the 60000 asked", n)
		}
		for range 3 {
			if n := len(ask()); n > 64 {
				t.Fatalf("a copy of a 64-byte probe got %d bytes", n)
			}
		}
	})
	t.Run("keyed copy", func(t *testing.T) {
		clk := clock.NewFake(int64(1000 * time.Hour))
		key := []byte("k")
		r, err := New(Config{Clock: clk, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		s := wire.NewSigner(key)
		signed := func(h wire.Header, size int) []byte {
			h.Flags |= wire.FlagAuth
			b := msg(t, h, size)
			s.Sign(b)
			return b
		}
		c := decode(t, r.Handle(signed(wire.Header{Type: wire.TypeHello, Seq: 7}, 80), alice, clk.Now()))
		p := signed(wire.Header{Type: wire.TypeProbe, Token: c.Token, Nonce: 7, Seq: 1}, 80)
		if r.Handle(append([]byte(nil), p...), alice, clk.Now()) == nil {
			t.Fatal("signed probe not answered")
		}
		if r.Handle(append([]byte(nil), p...), alice, clk.Now()) != nil {
			t.Fatal("a replayed signed probe was answered")
		}
		if got := r.Counters().Drops[DropReplayed]; got != 1 {
			t.Fatalf("replayed drops = %d, want 1", got)
		}
	})
	t.Run("close", func(t *testing.T) {
		r, clk := newTest(t)
		tok := handshake(t, r, clk, alice)
		for seq := uint64(1); seq <= 50; seq++ {
			r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: seq, T1: clk.Now() - int64(seq)*1000}, 64), alice, clk.Now())
		}
		for range 3 {
			b := make([]byte, 65536)
			_ = (&wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}).Encode(b)
			if ack := r.Handle(b[:64], alice, clk.Now()); len(ack) > 64 {
				t.Fatalf("a 64-byte Close got a %d-byte CloseAck", len(ack))
			}
		}
	})
}

// TestSessionsPerSource: one source cannot take every session; another
// source still gets one, and the refused Hello says why.
func TestSessionsPerSource(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, MaxSessions: 100, MaxSessionsPerSource: 4})
	if err != nil {
		t.Fatal(err)
	}
	open := func(addr netip.AddrPort) wire.Header {
		c := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeHello, Seq: 1}, 64), addr, clk.Now()))
		if c.Type == wire.TypeCookie {
			r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: c.Token, Nonce: 1, Seq: 1}, 64), addr, clk.Now())
		}
		return c
	}
	for port := range 10 {
		c := open(netip.AddrPortFrom(alice.Addr(), uint16(1000+port)))
		if port < 4 && c.Type != wire.TypeCookie {
			t.Fatalf("hello %d from alice: %+v, want a cookie", port, c)
		}
		if port >= 4 && (c.Type != wire.TypeError || c.Code != wire.ErrorSourceSessions) {
			t.Fatalf("hello %d from alice: %+v, want %q", port, c, wire.ErrorSourceSessions)
		}
	}
	if c := open(bob); c.Type != wire.TypeCookie {
		t.Fatalf("bob's hello: %+v, want a cookie", c)
	}
	if got := r.Counters().Sessions; got != 5 {
		t.Fatalf("%d sessions, want alice's 4 and bob's", got)
	}
}

// TestHeldMemory: held replies beyond the memory budget are dropped and
// counted, and what they held is given back once they leave.
func TestHeldMemory(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	mem := quota.NewMemory(1<<20, 1<<20)
	r, err := New(Config{Clock: clk, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice)
	for seq := uint64(1); seq <= 40; seq++ {
		p := msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, ReplySize: 60000, HoldMicro: 1000}, 65536)
		r.Handle(p[:64], alice, clk.Now())
	}
	st := r.Counters()
	if st.Drops[DropMemory] == 0 || len(r.heldQ) == 0 || len(r.heldQ)+int(st.Drops[DropMemory]) != 40 {
		t.Fatalf("%d held, %d memory drops; want some of each, 40 in all", len(r.heldQ), st.Drops[DropMemory])
	}
	if used, _ := mem.Used(); used > 1<<20 {
		t.Fatalf("held replies take %d bytes of a 1 MiB budget", used)
	}
	clk.Advance(time.Second)
	sent := 0
	r.Due(clk.Now(), func(b []byte, addr netip.AddrPort) { sent++ })
	if used, _ := mem.Used(); used != 0 || len(r.heldQ) != 0 {
		t.Fatalf("after %d held replies left: %d bytes still taken", sent, used)
	}
}

// TestFullAtFirstProbe: two clients of one source both get a cookie while
// there is room for one more session; the second's first probe, finding
// it taken, is told why instead of going unanswered.
func TestFullAtFirstProbe(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, MaxSessionsPerSource: 1})
	if err != nil {
		t.Fatal(err)
	}
	one, two := netip.AddrPortFrom(alice.Addr(), 1), netip.AddrPortFrom(alice.Addr(), 2)
	t1, t2 := handshake(t, r, clk, one), handshake(t, r, clk, two)
	if h := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: t1, Nonce: 99, Seq: 1}, 64), one, clk.Now())); h.Type != wire.TypeReply {
		t.Fatalf("first client's probe: %+v", h)
	}
	h := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: t2, Nonce: 99, Seq: 1}, 64), two, clk.Now()))
	if h.Type != wire.TypeError || h.Code != wire.ErrorSourceSessions || h.Token != t2 || h.Seq != 1 {
		t.Fatalf("second client's probe: %+v, want %q for its token and seq", h, wire.ErrorSourceSessions)
	}
}

// TestAdmitOnlyOpenSessions: a stream connection is kept in by its open
// session's messages only: after the Close, the session's probes and a
// repeated Close do not admit it (the listener then times it out).
func TestAdmitOnlyOpenSessions(t *testing.T) {
	r, clk := newTest(t)
	o := r.handle(msg(t, wire.Header{Type: wire.TypeHello, Seq: 99}, 200), arrival{addr: alice, t2: clk.Now()})
	tok := decode(t, o.reply).Token
	if o.admit != transport.AdmitLarge {
		t.Fatalf("after a Hello: admit %v; want a cookie's (%v), no session", o.admit, transport.AdmitLarge)
	}
	for _, tt := range []struct {
		name string
		h    wire.Header
		want bool
	}{
		{"probe", wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1}, true},
		{"close", wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}, true},
		{"probe after close", wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 2}, false},
		{"close again", wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}, false},
	} {
		o := r.handle(msg(t, tt.h, 64), arrival{addr: alice, t2: clk.Now()})
		if admit := o.admit == transport.AdmitSession; admit != tt.want {
			t.Errorf("%s: admit %v, want %v", tt.name, admit, tt.want)
		}
	}
}

// TestClosedSessionsGo: a peer that keeps sending to a session that is
// closing (its one-way Close waits for probes that never come), closed, or
// past its longest duration does not keep it: it goes within two idle
// timeouts whatever arrives.
func TestClosedSessionsGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(tok uint64, seq uint64) wire.Header
	}{
		{"closing, Close repeated", func(tok, seq uint64) wire.Header {
			return wire.Header{Type: wire.TypeClose, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: 1 << 40}
		}},
		{"closed, Close repeated", func(tok, seq uint64) wire.Header {
			return wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99, Seq: 1}
		}},
		{"past its longest duration, probes", func(tok, seq uint64) wire.Header {
			return wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(int64(1000 * time.Hour))
			r, err := New(Config{Clock: clk, Secret: []byte("test secret"), IdleTimeout: 2 * time.Second, MaxDuration: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			tok := handshake(t, r, clk, alice)
			p := make([]byte, 64, 65536)
			_ = (&wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: 1}).Encode(p)
			r.Handle(p, alice, clk.Now())
			for seq := uint64(2); seq < 30; seq++ {
				clk.Advance(time.Second)
				b := make([]byte, wire.CloseOneWayLen)
				h := tc.send(tok, seq)
				_ = h.Encode(b)
				r.Handle(b, alice, clk.Now())
				r.Sweep(clk.Now())
			}
			if s := r.sessions[tok]; s != nil && !s.swept {
				t.Fatalf("after 28s of a peer sending to it, the session is still kept (closed %v, closing %v); want it gone within two idle timeouts", s.closed, s.closing.on)
			}
			if st := r.Counters(); st.Sessions != 0 {
				t.Fatalf("%d sessions open, want 0", st.Sessions)
			}
		})
	}
}

// TestRepeatedCloseCheap: a closed one-way session's results are encoded
// once; a Close repeated (by a client whose CloseAck was lost, or a peer's
// flood) is answered from them without encoding them again.
func TestRepeatedCloseCheap(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	for seq := uint64(1); seq <= 1000; seq++ {
		clk.Advance(time.Microsecond)
		p := make([]byte, 64, 65536)
		_ = (&wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: seq, T1: clk.Now() - int64(seq%50)*1000}).Encode(p)
		r.Handle(p, alice, clk.Now())
	}
	closeMsg := msg(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99, Seq: 1}, wire.CloseOneWayLen)
	buf := make([]byte, wire.CloseOneWayLen)
	first := decode(t, r.Handle(append(buf[:0], closeMsg...), alice, clk.Now()))
	if first.Type != wire.TypeCloseAck || first.Received != 1000 {
		t.Fatalf("CloseAck %+v, want one counting 1000", first)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if r.Handle(append(buf[:0], closeMsg...), alice, clk.Now()) == nil {
			t.Fatal("a repeated Close went unanswered")
		}
	})
	if allocs != 0 {
		t.Fatalf("a repeated Close allocates %.0f times: its results are encoded again", allocs)
	}
}

// TestHeldPerSource: one source cannot take every held reply's slot; another
// still gets its replies held.
func TestHeldPerSource(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, MaxHeld: 4 * minHeldShare})
	if err != nil {
		t.Fatal(err)
	}
	hold := func(addr netip.AddrPort, n int) {
		tok := handshake(t, r, clk, addr)
		for seq := uint64(1); seq <= uint64(n); seq++ {
			p := msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, HoldMicro: 1_000_000}, 64)
			r.Handle(p, addr, clk.Now())
		}
	}
	hold(alice, 4*minHeldShare) // asks for every slot
	if got := len(r.heldQ); got != minHeldShare {
		t.Fatalf("one source holds %d replies, want its share, %d", got, minHeldShare)
	}
	hold(bob, 10)
	if got := len(r.heldQ); got != minHeldShare+10 {
		t.Fatalf("after another source's 10: %d held, want %d", got, minHeldShare+10)
	}
	clk.Advance(2 * time.Second)
	r.Due(clk.Now(), func([]byte, netip.AddrPort) {})
	if r.heldBy.Of(quota.Source(alice)) != 0 || r.heldBy.Of(quota.Source(bob)) != 0 {
		t.Fatal("held replies sent, but their sources still count them")
	}
}

// TestHeldNoAlloc: once its buffer is reused, a held reply costs no
// allocation, in going into the queue of held replies or out of it.
func TestHeldNoAlloc(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	seq := uint64(0)
	sent := 0
	p := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		for range 3 {
			seq++
			clk.Advance(time.Microsecond)
			_ = (&wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, HoldMicro: uint32(1 + seq%5)}).Encode(p)
			if r.Handle(p, alice, clk.Now()) != nil {
				t.Fatalf("probe %d with a hold answered at once", seq)
			}
		}
		clk.Advance(10 * time.Microsecond)
		r.Due(clk.Now(), func([]byte, netip.AddrPort) { sent++ })
	})
	if allocs != 0 || sent != 3*101 {
		t.Fatalf("%.1f allocations per 3 held replies, %d sent; want none, and all %d sent", allocs, sent, 3*101)
	}
}
