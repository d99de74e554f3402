package stamp

import (
	"errors"
	"net/netip"
	"testing"
)

// request returns a Session-Sender packet of n bytes (a TLV of Extra
// Padding after the base when there is room for one).
func request(t testing.TB, n int, s Sender, key []byte) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := PutSender(b, &s, key); err != nil {
		t.Fatal(err)
	}
	if base := BaseLength(key); n > base {
		PutPadding(b[base:])
	}
	return b
}

func reflectSeq(t *testing.T, r *Reflector, from netip.AddrPort, ssid uint16, seq uint32, now int64) (uint32, error) {
	t.Helper()
	b := request(t, BaseLen, Sender{Seq: seq, SSID: ssid}, nil)
	m, err := r.Reflect(b, len(b), from, now, now, 64)
	if err != nil {
		return 0, err
	}
	p, err := ParseReflected(b[:m], nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.SenderSeq != seq || p.SSID != ssid {
		t.Fatalf("reply's sender seq %d, SSID %d; want %d, %d", p.SenderSeq, p.SSID, seq, ssid)
	}
	return p.Seq, nil
}

func TestStateless(t *testing.T) {
	r := NewReflector(ReflectorConfig{})
	a := netip.MustParseAddrPort("192.0.2.1:5000")
	for _, seq := range []uint32{7, 3, 1 << 31} {
		got, err := reflectSeq(t, r, a, 1, seq, 1)
		if err != nil || got != seq {
			t.Errorf("stateless reply to seq %d: seq %d, %v; want the sender's", seq, got, err)
		}
	}
	if n := r.Sessions(); n != 0 {
		t.Errorf("stateless Sessions() = %d, want 0", n)
	}
}

func TestStateful(t *testing.T) {
	const idle = 1000
	r := NewReflector(ReflectorConfig{Stateful: true, MaxSessions: 2, Idle: idle})
	a := netip.MustParseAddrPort("192.0.2.1:5000")
	b := netip.MustParseAddrPort("192.0.2.1:5001")
	c := netip.MustParseAddrPort("[2001:db8::1]:5000")
	step := func(from netip.AddrPort, ssid uint16, seq uint32, now int64, want uint32, wantErr error) {
		t.Helper()
		got, err := reflectSeq(t, r, from, ssid, seq, now)
		if !errors.Is(err, wantErr) || (err == nil && got != want) {
			t.Fatalf("Reflect(%v ssid %d seq %d at %d) = seq %d, %v; want %d, %v", from, ssid, seq, now, got, err, want, wantErr)
		}
	}
	// The sender's numbers skip (probes lost on the way up); the
	// reflector's count what it received.
	step(a, 1, 0, 0, 0, nil)
	step(a, 1, 5, 10, 1, nil)
	step(a, 1, 9, 20, 2, nil)
	// Another port, and the same address with another SSID: other sessions.
	step(b, 1, 0, 30, 0, nil)
	step(a, 2, 0, 40, 0, ErrFull) // table of 2 full, none idle: dropped
	step(b, 1, 1, 50, 1, nil)
	// a has been silent longer than idle: its place goes to c, and a
	// coming back is a new session.
	step(c, 1, 0, 20+idle+1, 0, nil)
	if n := r.Sessions(); n != 2 {
		t.Errorf("Sessions() = %d, want 2", n)
	}
	step(b, 1, 2, 20+idle+2, 2, nil)
	step(a, 1, 10, 20+idle+3, 0, ErrFull) // b and c heard within idle
	// c, heard before b, is the first to be idle: a takes its place; b
	// keeps its own and its count; c is then refused.
	step(a, 1, 10, 21+2*idle+1, 0, nil)
	step(b, 1, 3, 21+2*idle+2, 3, nil)
	step(c, 1, 1, 21+2*idle+3, 0, ErrFull)
}

func TestReflectErrors(t *testing.T) {
	key := []byte("k")
	from := netip.MustParseAddrPort("127.0.0.1:1")
	for _, c := range []struct {
		name string
		cfg  ReflectorConfig
		b    []byte
		n    int
		want error
	}{
		{"short", ReflectorConfig{}, make([]byte, BaseLen), BaseLen - 1, ErrShort},
		{"n past b", ReflectorConfig{}, make([]byte, BaseLen-1), BaseLen, ErrShort},
		{"negative n", ReflectorConfig{}, make([]byte, BaseLen), -1, ErrShort},
		{"auth short", ReflectorConfig{Key: key}, make([]byte, BaseLen), BaseLen, ErrShort},
		{"auth bad", ReflectorConfig{Key: key}, make([]byte, AuthBaseLen), AuthBaseLen, ErrAuth},
	} {
		m, err := NewReflector(c.cfg).Reflect(c.b, c.n, from, 1, 2, 3)
		if m != 0 || !errors.Is(err, c.want) {
			t.Errorf("%s: Reflect = %d, %v; want 0, %v", c.name, m, err, c.want)
		}
	}
}

func TestReflectKeepsSize(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("key")} {
		for _, n := range []int{BaseLength(key), BaseLength(key) + 3, BaseLength(key) + 4, 1400} {
			b := request(t, n, Sender{Seq: 1}, key)
			m, err := NewReflector(ReflectorConfig{Key: key}).Reflect(b, n, netip.AddrPort{}, 1, 2, 3)
			if err != nil || m != n {
				t.Errorf("Reflect(%d bytes, key %q) = %d, %v; want %d", n, key, m, err, n)
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	key := []byte("a key")
	plain := request(t, 200, Sender{Seq: 1, T1: 5}, nil)
	auth := request(t, 200, Sender{Seq: 1, T1: 5}, key)
	reply := make([]byte, 200)
	stateless := NewReflector(ReflectorConfig{})
	stateful := NewReflector(ReflectorConfig{Stateful: true, MaxSessions: 4, Idle: 1})
	var port uint16
	var now int64
	lo := netip.MustParseAddr("::1")
	for name, f := range map[string]func(){
		"ParseSender":       func() { _, _ = ParseSender(plain, nil) },
		"ParseSender auth":  func() { _, _ = ParseSender(auth, key) },
		"PutSender auth":    func() { _ = PutSender(auth, &Sender{Seq: 2}, key) },
		"PutReflected auth": func() { _ = PutReflected(reply, &Reflected{Seq: 2}, key) },
		"ParseReflected auth": func() {
			_ = PutReflected(reply, &Reflected{Seq: 2}, key)
			_, _ = ParseReflected(reply, key)
		},
		"Reflect stateless": func() {
			_ = PutSender(plain, &Sender{Seq: 2}, nil)
			_, _ = stateless.Reflect(plain, len(plain), netip.AddrPort{}, 1, 2, 3)
		},
		// New sessions all the time, each taking an idle one's place.
		"Reflect stateful churn": func() {
			port++
			now += 10
			_ = PutSender(plain, &Sender{Seq: 2}, nil)
			from := netip.AddrPortFrom(lo, port)
			if _, err := stateful.Reflect(plain, len(plain), from, now, now, 3); err != nil {
				panic(err)
			}
		},
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, a)
		}
	}
}
