package reflector

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

var (
	alice = netip.MustParseAddrPort("192.0.2.1:4000")
	bob   = netip.MustParseAddrPort("[2001:db8::2]:5000")
)

func newTest(t testing.TB) (*Reflector, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, Secret: []byte("test secret"), IdleTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r, clk
}

func msg(t testing.TB, h wire.Header, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, b []byte) wire.Header {
	t.Helper()
	var h wire.Header
	if err := h.Decode(b); err != nil {
		t.Fatalf("Decode(reply %x) = %v", b, err)
	}
	return h
}

// handshake returns the token the reflector grants addr.
func handshake(t testing.TB, r *Reflector, clk *clock.Fake, addr netip.AddrPort) uint64 {
	t.Helper()
	hello := msg(t, wire.Header{Type: wire.TypeHello, Seq: 99}, 200)
	reply := r.Handle(hello, addr, clk.Now())
	c := decode(t, reply)
	if c.Type != wire.TypeCookie || c.Seq != 99 || c.Token == 0 {
		t.Fatalf("Handle(hello) = %+v, want a cookie echoing seq 99", c)
	}
	if len(reply) > len(hello) {
		t.Fatalf("cookie is %d bytes for a %d-byte hello: amplification", len(reply), len(hello))
	}
	return c.Token
}

func TestSession(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	if got := r.Counters().Sessions; got != 0 {
		t.Fatalf("sessions after hello = %d, want 0 (no state before the cookie returns)", got)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		flags := wire.Flags(0)
		if seq == 1 {
			flags = wire.FlagWarmup
		}
		probe := msg(t, wire.Header{Type: wire.TypeProbe, Flags: flags, Token: tok, Nonce: 99, Seq: seq, T1: 5}, 100)
		clk.Advance(time.Microsecond)
		t2 := clk.Now()
		reply := r.Handle(probe, alice, t2)
		if len(reply) != 100 {
			t.Fatalf("reply to a 100-byte probe is %d bytes", len(reply))
		}
		h := decode(t, reply)
		want := seq - 1 // the warm-up probe is not counted
		if h.Type != wire.TypeReply || h.Seq != seq || h.T1 != 5 || h.T2 != t2 || h.T3 < t2 || h.Received != want {
			t.Fatalf("reply %d = %+v, want seq %d T1 5 T2 %d count %d", seq, h, seq, t2, want)
		}
	}
	if got := r.Counters().Sessions; got != 1 {
		t.Fatalf("sessions = %d, want 1", got)
	}
	// The token from another address is refused.
	if reply := r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 4}, 64), bob, clk.Now()); reply != nil {
		t.Fatal("probe with alice's token from bob was answered")
	}
	ack := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99, Seq: 9}, 64), alice, clk.Now()))
	if ack.Type != wire.TypeCloseAck || ack.Received != 2 {
		t.Fatalf("close ack = %+v, want count 2", ack)
	}
	// A repeated close (the ack was lost) gets the same answer.
	ack = decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99, Seq: 9}, 64), alice, clk.Now()))
	if ack.Received != 2 {
		t.Fatalf("second close ack count = %d, want 2", ack.Received)
	}
	if reply := r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 5}, 64), alice, clk.Now()); reply != nil {
		t.Fatal("probe after close was answered")
	}
	st := r.Counters()
	if st.Sessions != 0 || st.SessionsOpened != 1 || st.Drops[DropAddress] != 1 || st.Drops[DropClosed] != 1 {
		t.Fatalf("stats = %+v, want 0 open, 1 opened, 1 address drop, 1 closed drop", st)
	}
	// Idle, it is ended, but its entry stays while its cookie lives, so
	// that the token cannot open it again; then it is forgotten.
	clk.Advance(11 * time.Second)
	r.Sweep(clk.Now())
	clk.Advance(2 * time.Duration(cookieEpoch))
	r.Sweep(clk.Now())
	if len(r.sessions) != 0 {
		t.Fatalf("%d sessions left after the idle timeout and the cookie's life", len(r.sessions))
	}
}

func TestCookieExpires(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	clk.Advance(3 * time.Duration(cookieEpoch))
	reply := r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1}, 64), alice, clk.Now())
	if reply == nil {
		t.Fatal("a probe with a stale cookie got no answer")
	}
	if h := decode(t, reply); h.Type != wire.TypeError || h.Code != wire.ErrorSession {
		t.Fatalf("a cookie three epochs old got %+v, want an ErrorSession", h)
	}
	if st := r.Counters(); st.Drops[DropToken] != 1 || st.SessionsOpened != 0 {
		t.Fatalf("token drops = %d, sessions opened %d; want 1 and 0", st.Drops[DropToken], st.SessionsOpened)
	}
}

// TestUnknownSession: a probe of a session the reflector does not know
// (after a restart) is answered with ErrorSession carrying its token and
// sequence number, no larger than the probe, and such answers are rate
// limited.
func TestUnknownSession(t *testing.T) {
	r, clk := newTest(t)
	answered := 0
	for i := range 1000 {
		in := msg(t, wire.Header{Type: wire.TypeProbe, Token: 777, Nonce: 5, Seq: uint64(i + 1)}, 64)
		reply := r.Handle(in, alice, clk.Now())
		if reply == nil {
			continue
		}
		answered++
		if len(reply) > len(in) {
			t.Fatalf("answer of %d bytes to a %d-byte probe", len(reply), len(in))
		}
		h := decode(t, reply)
		if h.Type != wire.TypeError || h.Code != wire.ErrorSession || h.Token != 777 || h.Seq != uint64(i+1) {
			t.Fatalf("answer %+v, want ErrorSession with the probe's token and seq", h)
		}
	}
	// At one instant the bucket holds its burst and no more.
	if answered == 0 || answered > unknownRate/10+1 {
		t.Fatalf("%d of 1000 unknown-session probes answered at one instant, want 1 to %d", answered, unknownRate/10+1)
	}
	if st := r.Counters(); st.Drops[DropToken] != 1000 || st.SessionsOpened != 0 {
		t.Fatalf("stats %+v, want 1000 token drops and no session", st)
	}
}

// TestReplayed: a probe older than the session's replay window is dropped
// as replayed; a copy of a recent one is answered as a duplicate.
func TestReplayed(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	probe := func(seq uint64) []byte {
		return r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}, 64), alice, clk.Now())
	}
	if probe(1) == nil || probe(seenWindow+1) == nil {
		t.Fatal("fresh probes were not answered")
	}
	if probe(seenWindow+1) == nil {
		t.Fatal("a duplicate inside the window was not answered")
	}
	if reply := probe(1); reply != nil {
		t.Fatalf("a probe a whole window old was answered: %x", reply)
	}
	st := r.Counters()
	if st.Drops[DropReplayed] != 1 || st.Duplicates != 1 || st.Dropped() != 1 {
		t.Fatalf("stats %+v, want one replayed drop and one duplicate", st)
	}
}

func TestDrops(t *testing.T) {
	good := msg(t, wire.Header{Type: wire.TypeProbe, Token: 12345, Seq: 1}, 64)
	mod := func(i int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[i] = v
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want DropReason
	}{
		{"short", good[:10], DropShort},
		{"magic", mod(0, 0), DropMagic},
		{"version", mod(2, 9), DropVersion},
		{"type", mod(3, 77), DropType},
		{"reply type", mod(3, byte(wire.TypeReply)), DropType},
		{"forged token", good, DropToken},
		{"oversize", make([]byte, MaxMessage+1), DropOversize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newTest(t)
			reply := r.Handle(tt.in, alice, clk.Now())
			if tt.want == DropToken {
				// Answered, so that a client whose reflector restarted
				// learns it: see TestUnknownSession.
				if h := decode(t, reply); h.Type != wire.TypeError || h.Code != wire.ErrorSession {
					t.Fatalf("Handle(%s) answered %+v, want ErrorSession", tt.name, h)
				}
			} else if reply != nil {
				t.Fatalf("Handle(%s) answered %x", tt.name, reply)
			}
			st := r.Counters()
			if st.Drops[tt.want] != 1 || st.Dropped() != 1 {
				t.Fatalf("drops = %v, want one %s", st.Drops, tt.want)
			}
		})
	}
}

// udpExchange returns a socket of its own to the reflector at addr (closed
// at the test's end), and a function that sends on it a message with
// header h (80 bytes) and returns the header of its answer; every
// exchange must be over within limit.
func udpExchange(t *testing.T, addr string, limit time.Duration) (net.Conn, func(h wire.Header) wire.Header) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(limit))
	buf := make([]byte, 128)
	return c, func(h wire.Header) wire.Header {
		t.Helper()
		if _, err := c.Write(msg(t, h, 80)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return decode(t, buf[:n])
	}
}

// serving runs r.Serve on conn on a goroutine of its own; stop ends it
// and waits for it (again: no more).
func serving(t *testing.T, r *Reflector, conn transport.PacketConn) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := r.Serve(ctx, conn); err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

func TestServe(t *testing.T) {
	conn, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{ReportInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var total Counters
	wg.Go(func() {
		var err error
		total, err = r.Serve(ctx, conn)
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	c, exchange := udpExchange(t, conn.LocalAddr().String(), 5*time.Second)
	cookie := exchange(wire.Header{Type: wire.TypeHello, Seq: 1})
	reply := exchange(wire.Header{Type: wire.TypeProbe, Token: cookie.Token, Nonce: 1, Seq: 1})
	if reply.Type != wire.TypeReply || reply.Received != 1 {
		t.Fatalf("reply = %+v, want count 1", reply)
	}
	if _, err := c.Write([]byte("garbage")); err != nil {
		t.Fatal(err)
	}
	ack := exchange(wire.Header{Type: wire.TypeClose, Token: cookie.Token})
	if ack.Received != 1 {
		t.Fatalf("close ack = %+v, want count 1", ack)
	}
	cancel()
	wg.Wait()
	conn.Close()
	if total.PacketsIn != 4 || total.PacketsOut != 3 || total.Drops[DropShort] != 1 {
		t.Fatalf("totals = %+v, want 4 in, 3 out, 1 short", total)
	}
}

func BenchmarkHandleProbe(b *testing.B) {
	r, clk := newTest(b)
	tok := handshake(b, r, clk, alice)
	probe := msg(b, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: 1}, 64)
	r.Handle(probe, alice, clk.Now())
	seq := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		msg := probe
		msg[3] = byte(wire.TypeProbe) // the reply overwrote the type
		seq++
		binary.BigEndian.PutUint64(msg[16:], seq) // a new probe each time
		clk.Advance(time.Microsecond)             // within the default rate limit
		if r.Handle(msg, alice, clk.Now()) == nil {
			b.Fatal("probe dropped")
		}
	}
}

func BenchmarkHandleForged(b *testing.B) {
	r, clk := newTest(b)
	probe := msg(b, wire.Header{Type: wire.TypeProbe, Token: 42, Seq: 1}, 64)
	b.ReportAllocs()
	for b.Loop() {
		r.Handle(probe, alice, clk.Now())
	}
}

func TestGrants(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, MaxSize: 200, MaxHold: 5 * time.Millisecond, MaxRate: 100})
	if err != nil {
		t.Fatal(err)
	}
	hello := msg(t, wire.Header{Type: wire.TypeHello, Seq: 1, ReplySize: 1000, HoldMicro: 9000}, 100)
	c := decode(t, r.Handle(hello, alice, clk.Now()))
	if c.ReplySize != 200 || c.HoldMicro != 5000 || c.RateLimit != 100 {
		t.Fatalf("cookie grants size %d, hold %dµs, rate %d; want 200, 5000, 100", c.ReplySize, c.HoldMicro, c.RateLimit)
	}
	// A 100-byte probe asking for a 150-byte reply, in a buffer with room,
	// whose tail holds an earlier datagram's bytes.
	buf := make([]byte, 1024)
	for i := range buf {
		buf[i] = 0xee
	}
	probe := buf[:100]
	_ = (&wire.Header{Type: wire.TypeProbe, Token: c.Token, Nonce: 1, Seq: 1, ReplySize: 150}).Encode(probe)
	clear(probe[wire.HeaderLen:])
	reply := r.Handle(probe, alice, clk.Now())
	if len(reply) != 150 || decode(t, reply).ReplySize != 150 {
		t.Fatalf("reply is %d bytes, want 150", len(reply))
	}
	for i, b := range reply[wire.HeaderLen:] {
		if b != 0 {
			t.Fatalf("reply byte %d = %#x: stale data from an earlier datagram", wire.HeaderLen+i, b)
		}
	}
	// Asking beyond the limit gets the limit.
	probe = buf[:64]
	_ = (&wire.Header{Type: wire.TypeProbe, Token: c.Token, Nonce: 1, Seq: 2, ReplySize: 60000}).Encode(probe)
	if reply := r.Handle(probe, alice, clk.Now()); len(reply) != 200 {
		t.Fatalf("reply to a 60000-byte ask is %d bytes, want the 200-byte limit", len(reply))
	}
}

func TestHold(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, MaxHeld: 2})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice)
	t2 := clk.Now()
	for seq, hold := range map[uint64]uint32{1: 3000, 2: 1000, 3: 2000} {
		p := msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, HoldMicro: hold}, 64)
		if reply := r.Handle(p, alice, t2); reply != nil {
			t.Fatalf("probe %d with a hold was answered at once", seq)
		}
	}
	if got := r.Counters().Drops[DropHoldFull]; got != 1 {
		t.Fatalf("hold-full drops = %d, want 1 (two held at most)", got)
	}
	var sent []wire.Header
	send := func(b []byte, to netip.AddrPort) {
		if to != alice {
			t.Errorf("held reply sent to %v", to)
		}
		sent = append(sent, decode(t, b))
	}
	clk.Advance(500 * time.Microsecond)
	r.Due(clk.Now(), send)
	if len(sent) != 0 {
		t.Fatalf("%d replies sent before their hold", len(sent))
	}
	clk.Advance(5 * time.Millisecond)
	r.Due(clk.Now(), send)
	if len(sent) != 2 || r.NextDue() != 0 {
		t.Fatalf("%d replies sent after the holds, next due %d; want 2 and none", len(sent), r.NextDue())
	}
	for i := 1; i < len(sent); i++ {
		if sent[i].HoldMicro < sent[i-1].HoldMicro {
			t.Errorf("held replies left out of order: %+v", sent)
		}
	}
	if h := sent[0]; h.T3-h.T2 < int64(h.HoldMicro)*1000 || h.T2 != t2 {
		t.Errorf("held reply T2 %d T3 %d for a %dµs hold", h.T2, h.T3, h.HoldMicro)
	}
}

// TestRateLimit: probes beyond a rate are dropped and counted, whether
// the rate is each session's or all sessions' together: a bucket of a
// tenth of a second's worth (at least 10), refilled at the rate.
func TestRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"session", Config{MaxRate: 100}},    // a bucket of 10 probes
		{"total", Config{MaxTotalRate: 100}}, // the same, for all sessions
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(int64(1000 * time.Hour))
			cfg := tc.cfg
			cfg.Clock = clk
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tok := handshake(t, r, clk, alice)
			answered := 0
			for seq := uint64(1); seq <= 20; seq++ {
				if r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}, 64), alice, clk.Now()) != nil {
					answered++
				}
			}
			if answered != 10 || r.Counters().Drops[DropRate] != 10 {
				t.Fatalf("answered %d of 20 at once, rate drops %d; want 10 and 10", answered, r.Counters().Drops[DropRate])
			}
			clk.Advance(50 * time.Millisecond) // five more tokens
			answered = 0
			for seq := uint64(21); seq <= 30; seq++ {
				if r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}, 64), alice, clk.Now()) != nil {
					answered++
				}
			}
			if answered != 5 {
				t.Fatalf("answered %d after 50ms at 100/s, want 5", answered)
			}
		})
	}
}

func TestOneWay(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	var reports []OneWayReport
	r, err := New(Config{Clock: clk, ReportEvery: 3, OnOneWay: func(rep OneWayReport) { reports = append(reports, rep) }})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice)
	t1 := clk.Now()
	for i, seq := range []uint64{1, 2, 2, 4, 3, 6} {
		clk.Advance(time.Microsecond)
		p := msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: seq, T1: t1 + int64(i)*1000}, 64)
		if reply := r.Handle(p, alice, clk.Now()); reply != nil {
			t.Fatalf("one-way probe %d was answered", seq)
		}
	}
	// Every probe arrived 1µs after its send stamp; report windows of 3.
	if len(reports) != 1 || reports[0].Received != 3 || reports[0].Lost != 1 || reports[0].Max != time.Microsecond {
		t.Fatalf("reports %+v, want one window: 3 received, 1 lost (seq 3 was late), 1µs", reports)
	}
	buf := make([]byte, 65536)
	closeMsg := buf[:wire.CloseOneWayLen] // a client's Close makes room for the results
	_ = (&wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}).Encode(closeMsg)
	ack := r.Handle(closeMsg, alice, clk.Now())
	if decode(t, ack).Type != wire.TypeCloseAck || len(ack) <= wire.HeaderLen {
		t.Fatalf("close ack of %d bytes, want results after the header", len(ack))
	}
	var res wire.OneWayResults
	if err := res.Decode(ack[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	snap := stats.Snapshot(res.Delay)
	if res.Received != 5 || res.Duplicates != 1 || res.Reordered != 1 || snap.Count != 5 || snap.Max != 1000 {
		t.Fatalf("results %+v, delay count %d max %d; want 5 received, 1 dup, 1 reordered, 1µs", res, snap.Count, snap.Max)
	}
	// IPDV between consecutive probes as they came: 1 then 2 only (4, 3
	// and 6 each came after a probe not one below), so one value, of 0
	// (every delay was 1µs).
	if !res.HasIPDV {
		t.Fatalf("results %+v without the IPDV", res)
	}
	ipdv := stats.Snapshot(res.IPDV)
	if ipdv.Count != 1 || ipdv.Max != 0 {
		t.Fatalf("ipdv count %d max %d, want one value of 0", ipdv.Count, ipdv.Max)
	}
}

// TestOneWayStragglers: a probe the Close overtook is counted, not dropped
// as closed: the reflector keeps the CloseAck until the probes the Close
// says were sent have come, or until the client's next Close.
func TestOneWayStragglers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		late     []uint64 // the probes that come after the first Close
		received uint64   // what the results say
	}{
		{"last probe behind the close", []uint64{5}, 5},
		{"two behind, out of order", []uint64{5, 3}, 5},
		{"one lost: the next close ends the wait", nil, 4},
		{"one lost, the wait longer than the idle timeout", nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newTest(t)
			tok := handshake(t, r, clk, alice)
			late := map[uint64]bool{}
			for _, seq := range tc.late {
				late[seq] = true
			}
			probe := func(seq uint64) []byte {
				clk.Advance(time.Microsecond)
				p := make([]byte, 64, 65536) // as Serve reads: room for a CloseAck
				_ = (&wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: seq, T1: clk.Now()}).Encode(p)
				return r.Handle(p, alice, clk.Now())
			}
			for seq := uint64(1); seq <= 5; seq++ {
				if seq == 4 && tc.late == nil {
					continue // lost
				}
				if !late[seq] && probe(seq) != nil {
					t.Fatalf("one-way probe %d was answered", seq)
				}
			}
			closeMsg := func(flags wire.Flags, seq uint64) []byte {
				b := make([]byte, wire.CloseOneWayLen)
				_ = (&wire.Header{Type: wire.TypeClose, Flags: flags, Token: tok, Nonce: 99, Seq: seq, T1: 7}).Encode(b)
				return b
			}
			if ack := r.Handle(closeMsg(wire.FlagOneWay, 5), alice, clk.Now()); ack != nil {
				t.Fatalf("Close with 5 sent and fewer received: answered %+v at once, want the CloseAck to wait", decode(t, ack))
			}
			// The client's Close again, as if the first were lost: still waiting.
			if ack := r.Handle(closeMsg(wire.FlagOneWay, 5), alice, clk.Now()); ack != nil {
				t.Fatalf("a copy of the Close was answered while probes are missing")
			}
			var ack []byte
			for i, seq := range tc.late {
				ack = probe(seq)
				if (ack != nil) != (i == len(tc.late)-1) {
					t.Fatalf("late probe %d answered %v, want the CloseAck with the last one only", seq, ack != nil)
				}
			}
			if tc.late == nil {
				if strings.Contains(tc.name, "idle") {
					clk.Advance(11 * time.Second) // newTest's idle timeout is 10s
					r.Sweep(clk.Now())
					clk.Advance(5 * time.Second)
					r.Sweep(clk.Now())
				}
				ack = r.Handle(closeMsg(0, 2), alice, clk.Now()) // the client's timeout ran out
			}
			h := decode(t, ack)
			if h.Type != wire.TypeCloseAck || h.Seq != 5 && tc.late != nil || h.T1 != 7 || len(ack) <= wire.HeaderLen {
				t.Fatalf("CloseAck %+v of %d bytes, want one echoing the Close, with the results", h, len(ack))
			}
			var res wire.OneWayResults
			if err := res.Decode(ack[wire.HeaderLen:]); err != nil {
				t.Fatal(err)
			}
			if res.Received != tc.received {
				t.Fatalf("results say %d received, want %d", res.Received, tc.received)
			}
			if got := r.Counters().Drops[DropClosed]; got != 0 {
				t.Fatalf("%d probes dropped as closed, want 0", got)
			}
			if probe(6) != nil || r.Counters().Drops[DropClosed] != 1 {
				t.Fatalf("a probe after the CloseAck: want it dropped as closed")
			}
		})
	}
}

func TestKeyAllowSessions(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, Key: []byte("shared"), MaxSessions: 1,
		Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	good, bad := wire.NewSigner([]byte("shared")), wire.NewSigner([]byte("wrong"))
	signed := func(s *wire.Signer, h wire.Header, size int) []byte {
		h.Flags |= wire.FlagAuth
		b := make([]byte, size, 1024)
		_ = h.Encode(b)
		s.Sign(b)
		return b
	}
	// Wrong key: the Hello is refused, with a reason, no larger than it.
	e := decode(t, r.Handle(signed(bad, wire.Header{Type: wire.TypeHello, Seq: 5}, 80), alice, clk.Now()))
	if e.Type != wire.TypeError || e.Code != wire.ErrorAuth || e.Seq != 5 {
		t.Fatalf("answer to a wrongly signed hello = %+v, want an auth error", e)
	}
	// Right key: a signed cookie, then signed replies.
	reply := r.Handle(signed(good, wire.Header{Type: wire.TypeHello, Seq: 6}, 80), alice, clk.Now())
	if err := good.Verify(reply); err != nil || len(reply) > 80 {
		t.Fatalf("cookie of %d bytes: %v", len(reply), err)
	}
	tok := decode(t, reply).Token
	reply = r.Handle(signed(good, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 6, Seq: 1}, 100), alice, clk.Now())
	if err := good.Verify(reply); err != nil || decode(t, reply).Received != 1 {
		t.Fatalf("signed probe's reply: %v", err)
	}
	// Unsigned, or tampered: dropped.
	if r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 6, Seq: 2}, 100), alice, clk.Now()) != nil {
		t.Fatal("an unsigned probe was answered")
	}
	p := signed(good, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 6, Seq: 3}, 100)
	p[70] ^= 1
	if r.Handle(p, alice, clk.Now()) != nil {
		t.Fatal("a tampered probe was answered")
	}
	// Outside --allow: refused. Beyond one session: refused.
	e = decode(t, r.Handle(signed(good, wire.Header{Type: wire.TypeHello, Seq: 7}, 80), bob, clk.Now()))
	if e.Code != wire.ErrorRefused {
		t.Fatalf("hello from outside --allow: %+v", e)
	}
	carol := netip.MustParseAddrPort("192.0.2.3:1")
	e = decode(t, r.Handle(signed(good, wire.Header{Type: wire.TypeHello, Seq: 8}, 80), carol, clk.Now()))
	if e.Code != wire.ErrorSessions {
		t.Fatalf("hello beyond --max-sessions: %+v", e)
	}
	st := r.Counters()
	if st.Drops[DropAuth] != 3 || st.Drops[DropRefused] != 1 || st.Drops[DropSessions] != 1 {
		t.Fatalf("drops %v", st.Drops)
	}
}

func TestDuplicatesNotCounted(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	for _, seq := range []uint64{1, 2, 2, 3, 1} {
		reply := r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}, 64), alice, clk.Now())
		if reply == nil {
			t.Fatalf("probe %d (a duplicate is answered too) got no reply", seq)
		}
	}
	ack := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}, 64), alice, clk.Now()))
	if ack.Received != 3 || r.Counters().Duplicates != 2 {
		t.Fatalf("count %d, duplicates %d; want 3 probes and 2 duplicates", ack.Received, r.Counters().Duplicates)
	}
}

// TestReorderedFlag: a reply says whether its probe came after a later
// one of the session, and only then; a probe cannot set it for itself.
func TestReorderedFlag(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	for _, tt := range []struct {
		seq  uint64
		want bool
	}{{1, false}, {3, false}, {2, true}, {3, false}, {4, false}, {2, false}} {
		// Every probe asks for the flag, as a forged one would.
		p := msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagReordered, Token: tok, Nonce: 99, Seq: tt.seq}, 64)
		h := decode(t, r.Handle(p, alice, clk.Now()))
		if got := h.Flags&wire.FlagReordered != 0; got != tt.want {
			t.Errorf("reply to probe %d: reordered %v, want %v (duplicates are not reordered)", tt.seq, got, tt.want)
		}
	}
}

func TestDurationAndTotalRate(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk, Secret: []byte("test secret"), MaxDuration: time.Second, MaxTotalRate: 100})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice)
	answered := 0
	for seq := uint64(1); seq <= 20; seq++ {
		if r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq}, 64), alice, clk.Now()) != nil {
			answered++
		}
	}
	if answered != 10 {
		t.Fatalf("answered %d of 20 at once under a total of 100/s, want 10", answered)
	}
	clk.Advance(2 * time.Second)
	e := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Seq: 21}, 64), alice, clk.Now()))
	if e.Type != wire.TypeError || e.Code != wire.ErrorDuration || e.Token != tok {
		t.Fatalf("probe after the longest duration got %+v, want ErrorDuration", e)
	}
	if st := r.Counters(); st.Drops[DropRate] != 10 || st.Drops[DropDuration] != 1 {
		t.Fatalf("drops %v", st.Drops)
	}
}

// TestHoldScheduler drives the goroutine that sends held replies, one
// step at a time, on a fake clock: each reply leaves when its hold is
// over, a reply held for sooner than the one waited for wakes it, and the
// response time leaves out exactly the hold asked for, whatever the wait
// overshot.
func TestHoldScheduler(t *testing.T) {
	r, clk := newTest(t)
	tok := handshake(t, r, clk, alice)
	var late time.Duration // how far each wait overshoots
	var during func()      // called in the first wait, once
	r.alarm.Sleep = func(d time.Duration) {
		clk.Advance(d + late)
		if f := during; f != nil {
			during = nil
			f()
		}
	}
	type out struct {
		seq    uint64
		t2, t3 int64
	}
	var sent []out
	send := func(b []byte, to netip.AddrPort, rep sentReply) { // as Serve's
		h := decode(t, b)
		sent = append(sent, out{h.Seq, h.T2, h.T3})
		r.sent(&rep, 0)
	}
	probe := func(seq uint64, hold time.Duration) int64 {
		t2 := clk.Now()
		p := msg(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: 99, Seq: seq, HoldMicro: uint32(hold / time.Microsecond)}, 64)
		if r.Handle(p, alice, t2) != nil {
			t.Fatalf("probe %d with a %v hold answered at once", seq, hold)
		}
		return t2
	}
	never := func() bool { return false }
	response := func() stats.Snapshot {
		s, err := r.resp.total.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// On time: sent when due, a response time of 0.
	t2 := probe(1, 100*time.Microsecond)
	r.holdStep(send, never)
	if len(sent) != 1 || sent[0].t3 != t2+int64(100*time.Microsecond) || sent[0].t2 != t2 {
		t.Fatalf("sent %+v, want probe 1's reply at T2+100µs (T2 %d)", sent, t2)
	}
	if s := response(); s.Count != 1 || s.Max != 0 {
		t.Fatalf("response times %+v, want one of 0", s)
	}

	// A 5ms hold waited for; a 1ms hold comes during the wait: it wakes
	// the scheduler, and leaves first, on time.
	sent = nil
	t5 := probe(2, 5*time.Millisecond)
	var t1 int64
	during = func() { t1 = probe(3, time.Millisecond) }
	r.holdStep(send, never)
	if len(sent) != 1 {
		t.Fatalf("sent %+v after a wait, want one reply", sent)
	}
	r.holdStep(send, never)
	if len(sent) != 2 || sent[0].seq != 3 || sent[0].t3 != t1+int64(time.Millisecond) || sent[1].seq != 2 || sent[1].t3 != t5+int64(5*time.Millisecond) {
		t.Fatalf("sent %+v; want seq 3 at T2+1ms (%d), then seq 2 at T2+5ms (%d)", sent, t1+int64(time.Millisecond), t5+int64(5*time.Millisecond))
	}

	// Late by 7µs (a busy machine): the response time is those 7µs, the
	// asked hold left out exactly; so is a hold the reflector cut to its
	// most (its reply says which it applied).
	sent, late = nil, 7*time.Microsecond
	probe(4, 300*time.Microsecond)
	r.holdStep(send, never)
	if s := response(); s.Count != 4 || s.Min != 0 || s.Max != int64(late) {
		t.Fatalf("response times %+v, want 3 of 0 then one of %v", s, late)
	}
	if len(sent) != 1 || sent[0].t3-sent[0].t2 != int64(300*time.Microsecond+late) {
		t.Fatalf("sent %+v, want T3-T2 = 307µs", sent)
	}
}

// TestCookieClockID: a reflector whose clock has an identity tells it in
// its Cookies; without one, the Cookie is as before (T3 its send time, no
// flag), and a probe that sets the flag gets its reply's T3 all the same.
func TestCookieClockID(t *testing.T) {
	r, clk := newTest(t)
	hello := func() wire.Header {
		return decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeHello, Seq: 5}, wire.HeaderLen), alice, clk.Now()))
	}
	if c := hello(); c.Flags&wire.FlagClockID != 0 || c.T3 != clk.Now() || wire.ClockIDOf(&c) != 0 {
		t.Fatalf("cookie %+v from a clock without identity: want no flag and T3 its send time %d", c, clk.Now())
	}
	clk.SetIdentity(0xfeedface)
	c := hello()
	if got := wire.ClockIDOf(&c); got != 0xfeedface {
		t.Fatalf("cookie %+v carries clock identity %#x, want 0xfeedface", c, got)
	}
	p := decode(t, r.Handle(msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagClockID, Token: c.Token, Nonce: 5, Seq: 1}, wire.HeaderLen), alice, clk.Now()))
	if p.Type != wire.TypeReply || p.T3 != clk.Now() {
		t.Fatalf("reply %+v to a probe flagged FlagClockID: want T3 %d, its send time", p, clk.Now())
	}
}

// busyConn is a packet socket that says it busy-polls, and records the
// read deadlines set on it.
type busyConn struct {
	transport.PacketConn
	mu        sync.Mutex
	deadlines []time.Time
}

func (c *busyConn) BusyPolling() bool { return true }

func (c *busyConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadlines = append(c.deadlines, t)
	c.mu.Unlock()
	return c.PacketConn.SetReadDeadline(t)
}

// TestServeBusyPollHolds: on a busy-polling socket, whose spinning reader
// leaves no CPU to another goroutine, held replies go from the read loop,
// which sets its read deadline to the next one due (on other sockets a
// goroutine of their own sends them).
func TestServeBusyPollHolds(t *testing.T) {
	pc, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn := &busyConn{PacketConn: pc}
	r, err := New(Config{ReportInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stop := serving(t, r, conn)
	_, exchange := udpExchange(t, pc.LocalAddr().String(), 30*time.Second)
	cookie := exchange(wire.Header{Type: wire.TypeHello, Seq: 1})
	start := time.Now()
	reply := exchange(wire.Header{Type: wire.TypeProbe, Token: cookie.Token, Nonce: 1, Seq: 1, HoldMicro: 200_000})
	stop()
	pc.Close()
	if reply.Type != wire.TypeReply || reply.Seq != 1 {
		t.Fatalf("reply = %+v, want the held reply to probe 1", reply)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	for _, d := range conn.deadlines {
		// Before the report tick an hour away: the held reply's time.
		if d.After(start) && d.Before(start.Add(30*time.Minute)) {
			return
		}
	}
	t.Fatalf("read deadlines %v: none at the held reply's time", conn.deadlines)
}

// TestOneWayBelowZero: one-way delays below zero (a client whose clock is
// ahead of the reflector's) come back in the CloseAck's results whole:
// their percentiles below zero, not counted as zero.
func TestOneWayBelowZero(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	r, err := New(Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice)
	for seq := uint64(1); seq <= 10; seq++ {
		clk.Advance(time.Microsecond)
		// The client's clock is 5 ms ahead: each delay is -5 ms plus
		// seq µs.
		t1 := clk.Now() + int64(5*time.Millisecond) - int64(seq)*int64(time.Microsecond)
		p := msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagOneWay, Token: tok, Nonce: 99, Seq: seq, T1: t1}, 64)
		r.Handle(p, alice, clk.Now())
	}
	closeMsg := make([]byte, wire.CloseOneWayLen)
	_ = (&wire.Header{Type: wire.TypeClose, Token: tok, Nonce: 99}).Encode(closeMsg)
	ack := r.Handle(closeMsg, alice, clk.Now())
	var res wire.OneWayResults
	if err := res.Decode(ack[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	d, err := stats.FromSnapshot(stats.Snapshot(res.Delay))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Summary([]float64{50})
	want := -5*time.Millisecond + 5*time.Microsecond // the 5th of -4.999 to -4.990 ms
	if s.Count != 10 || s.Percentiles[0].Value > want+want/-1000 || s.Percentiles[0].Value < want-want/-1000 {
		t.Fatalf("delays %+v: want 10, p50 %v within 0.1%%", s, want)
	}
}

// TestOnewayCost: what a one-way session takes of the memory budget
// covers its histograms.
func TestOnewayCost(t *testing.T) {
	o := newOneway()
	if n := o.delay.Bytes() + o.ipdv.Bytes(); n > onewayCost {
		t.Fatalf("a one-way session's histograms take %d bytes, onewayCost is %d", n, onewayCost)
	}
}
