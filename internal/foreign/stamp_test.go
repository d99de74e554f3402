package foreign

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

var _ client.Foreign = (*STAMP)(nil)

// reflectorUDP runs r on a loopback UDP socket until the test ends,
// dropping the requests and replies drop says to (numbered from 1), and
// returns its address and its counts.
type udpReflector struct {
	addr              netip.AddrPort
	mu                sync.Mutex
	requests, replies int // received; built
	droppedUp         int
	droppedDown       int
}

func serveSTAMP(t *testing.T, r *stamp.Reflector, dropReq, dropRep int) *udpReflector {
	t.Helper()
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	u := &udpReflector{addr: pc.LocalAddr().(*net.UDPAddr).AddrPort()}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		b := make([]byte, 1<<16)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			t2 := time.Now().UnixNano()
			u.mu.Lock()
			u.requests++
			drop := dropReq > 0 && u.requests%dropReq == 0
			if drop {
				u.droppedUp++
				u.mu.Unlock()
				continue
			}
			m, err := r.Reflect(b, n, from, t2, time.Now().UnixNano(), 64)
			if err != nil {
				u.mu.Unlock()
				continue
			}
			u.replies++
			drop = dropRep > 0 && u.replies%dropRep == 0
			if drop {
				u.droppedDown++
			}
			u.mu.Unlock()
			if !drop {
				_, _ = pc.WriteToUDPAddrPort(b[:m], from)
			}
		}
	}()
	return u
}

func dialSTAMP(t *testing.T, addr netip.AddrPort, cfg STAMPConfig) *STAMP {
	t.Helper()
	c, err := transport.Dial(context.Background(), transport.Target{Scheme: "udp", Host: addr.Addr().String(), Port: int(addr.Port())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return NewSTAMP(c, cfg)
}

func probe(t testing.TB, size int, token, seq uint64, t1 int64, flags wire.Flags) []byte {
	b := make([]byte, size)
	h := wire.Header{Type: wire.TypeProbe, Flags: flags, Token: token, Seq: seq, T1: t1}
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSTAMPLoopback(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  STAMPConfig
		size int
	}{
		{"stateless", STAMPConfig{SSID: 7}, 64},
		{"stateful", STAMPConfig{Stateful: true}, 1000},
		{"authenticated stateful", STAMPConfig{Key: []byte("shared"), Stateful: true, SSID: 2}, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			refl := stamp.NewReflector(stamp.ReflectorConfig{Key: c.cfg.Key, Stateful: c.cfg.Stateful, Err: stamp.NewErrorEstimate(true, 1000)})
			u := serveSTAMP(t, refl, 3, 0) // every third probe lost on the way up
			s := dialSTAMP(t, u.addr, c.cfg)
			if err := s.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 2048)
			var want uint64 // the reflector's count
			for seq := uint64(1); seq <= 9; seq++ {
				t1 := time.Now().UnixNano()
				if n, err := s.Write(probe(t, c.size, 0xabc, seq, t1, 0)); err != nil || n != c.size {
					t.Fatalf("Write = %d, %v; want %d", n, err, c.size)
				}
				if seq%3 == 0 {
					continue
				}
				want++
				n, err := s.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				if n != max(c.size, stamp.BaseLength(c.cfg.Key)) {
					t.Errorf("Read = %d bytes, want the probe's %d", n, c.size)
				}
				var h wire.Header
				if err := h.Decode(buf[:n]); err != nil {
					t.Fatal(err)
				}
				if h.Type != wire.TypeReply || h.Token != 0xabc || h.Seq != seq || h.T1 != t1 || h.T2 < t1 || h.T3 < h.T2 {
					t.Fatalf("reply %+v: want a Reply to token abc, seq %d, T1 %d <= T2 <= T3", h, seq, t1)
				}
				if wantRecv := map[bool]uint64{true: want}[c.cfg.Stateful]; h.Received != wantRecv {
					t.Errorf("reply to %d: Received %d, want %d", seq, h.Received, wantRecv)
				}
			}
			p, said := s.Peer(), s.PeerResults()
			if p.Protocol != "stamp" || !p.OneWay || p.Directions != c.cfg.Stateful || (said.Note == "") == !c.cfg.Stateful {
				t.Errorf("Peer() = %+v, PeerResults() = %+v", p, said)
			}
			if st := p.STAMP; st.Authenticated != (c.cfg.Key != nil) || st.Stateful != c.cfg.Stateful || st.SSID != c.cfg.SSID {
				t.Errorf("Peer().STAMP = %+v", st)
			}
			st := said.STAMP
			wantRenum := map[bool]uint64{true: 4}[c.cfg.Stateful] // replies to 4, 5, 7, 8
			if st.Renumbered != wantRenum || st.SenderTTL != 64 || !st.ErrorEstimate.Synchronized || st.ErrorEstimate.Error < time.Microsecond {
				t.Errorf("PeerResults().STAMP = %+v, want renumbered %d", st, wantRenum)
			}
		})
	}
}

// fakeConn is a transport.Conn that answers each write with a stamp
// Reflector's reply, or with the bytes in next when set.
type fakeConn struct {
	transport.Conn
	r     *stamp.Reflector
	reply []byte
	n     int
	next  []byte
}

func (f *fakeConn) Write(b []byte) (int, error) {
	f.n = copy(f.reply, b)
	m, err := f.r.Reflect(f.reply, f.n, netip.AddrPort{}, 10, 20, 9)
	f.n = m
	return len(b), err
}

func (f *fakeConn) Read(b []byte) (int, error) {
	if f.next != nil {
		return copy(b, f.next), nil
	}
	return copy(b, f.reply[:f.n]), nil
}

func TestSTAMPNoAllocs(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k")} {
		f := &fakeConn{r: stamp.NewReflector(stamp.ReflectorConfig{Key: key, Stateful: true}), reply: make([]byte, 2048)}
		s := NewSTAMP(f, STAMPConfig{Key: key, Stateful: true})
		p := probe(t, 300, 1, 1, 5, 0)
		buf := make([]byte, 2048)
		var seq uint64 = 1
		a := testing.AllocsPerRun(1000, func() {
			seq++
			p[16+7] = byte(seq) // the Seq's low byte
			if _, err := s.Write(p); err != nil {
				panic(err)
			}
			if _, err := s.Read(buf); err != nil {
				panic(err)
			}
		})
		if a != 0 {
			t.Errorf("key %q: Write and Read: %v allocations per probe, want 0", key, a)
		}
	}
}

func TestSTAMPRejects(t *testing.T) {
	key := []byte("k")
	good := make([]byte, stamp.AuthBaseLen)
	if err := stamp.PutReflected(good, &stamp.Reflected{SSID: 5}, key); err != nil {
		t.Fatal(err)
	}
	otherSSID := make([]byte, stamp.AuthBaseLen)
	if err := stamp.PutReflected(otherSSID, &stamp.Reflected{SSID: 6}, key); err != nil {
		t.Fatal(err)
	}
	badMAC := bytes.Clone(good)
	badMAC[100] ^= 1
	for name, in := range map[string][]byte{
		"short":      good[:stamp.AuthBaseLen-1],
		"bad HMAC":   badMAC,
		"other SSID": otherSSID,
	} {
		s := NewSTAMP(&fakeConn{next: in}, STAMPConfig{Key: key, SSID: 5})
		buf := make([]byte, 100)
		n, err := s.Read(buf)
		var h wire.Header
		if err != nil || h.Decode(buf[:n]) == nil {
			t.Errorf("%s: Read = %d, %v, decoding as a volley message; want bytes that do not", name, n, err)
		}
		p := s.PeerResults()
		if p.STAMP.ErrorEstimate.Raw != 0 || p.STAMP.Renumbered != 0 {
			t.Errorf("%s: PeerResults() %+v counts a rejected reply", name, p.STAMP)
		}
		if hmac := strings.Contains(p.Note, "failed the HMAC check"); hmac != (name == "bad HMAC") {
			t.Errorf("%s: note %q says the HMAC failed: %v", name, p.Note, hmac)
		}
	}
	s := NewSTAMP(&fakeConn{next: good}, STAMPConfig{Key: key, SSID: 5})
	if n, err := s.Read(make([]byte, 200)); err != nil || n != stamp.AuthBaseLen {
		t.Errorf("good reply: Read = %d, %v; want %d", n, err, stamp.AuthBaseLen)
	}
	if _, err := s.Write(make([]byte, 64)); err == nil {
		t.Error("Write(zeros) = nil error, want one")
	}
	hello := probe(t, 64, 1, 1, 1, 0)
	hello[3] = byte(wire.TypeHello)
	if _, err := s.Write(hello); !errors.Is(err, ErrNotProbe) {
		t.Errorf("Write(Hello) error = %v, want ErrNotProbe", err)
	}
}

func TestSTAMPPeerNotes(t *testing.T) {
	for _, c := range []struct {
		cfg  STAMPConfig
		dirs bool
		note string
	}{
		{STAMPConfig{}, false, "--stamp-stateful"},
		{STAMPConfig{Stateful: true, Warmup: true}, false, "--warmup 0"},
		{STAMPConfig{Stateful: true}, true, ""},
	} {
		s := NewSTAMP(nil, c.cfg)
		p, said := s.Peer(), s.PeerResults()
		if p.Directions != c.dirs || (c.note == "") != (said.Note == "") || !strings.Contains(said.Note, c.note) {
			t.Errorf("%+v: Peer() directions %v, note %q; want %v and a note with %q", c.cfg, p.Directions, said.Note, c.dirs, c.note)
		}
		if said.STAMP.ErrorEstimate != (result.ErrorEstimate{}) {
			t.Errorf("%+v: error estimate %+v before any reply, want zero", c.cfg, said.STAMP.ErrorEstimate)
		}
	}
	// A stateless run whose reflector numbers its replies says so.
	f := &fakeConn{r: stamp.NewReflector(stamp.ReflectorConfig{Stateful: true}), reply: make([]byte, 2048)}
	s := NewSTAMP(f, STAMPConfig{Warmup: true})
	buf := make([]byte, 2048)
	for _, seq := range []uint64{1, 3} {
		if _, err := s.Write(probe(t, 64, 1, seq, 1, wire.FlagWarmup)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if p := s.PeerResults(); p.STAMP.Renumbered != 1 || !strings.Contains(p.Note, "1 of 2 replies carried the reflector's own numbers") {
		t.Errorf("PeerResults() renumbered %d, note %q; want 1 and a note saying the reflector seems stateful", p.STAMP.Renumbered, p.Note)
	}
}

func TestSTAMPPacketSize(t *testing.T) {
	for _, c := range []struct {
		key              []byte
		size, probe, out int
	}{
		{nil, 0, 64, 64}, {nil, 0, 44, 44}, {nil, 0, 45, 48}, {nil, 0, 47, 48}, {nil, 0, 48, 48},
		{[]byte("k"), 0, 64, 112}, {[]byte("k"), 0, 113, 116}, {[]byte("k"), 0, 1500, 1500},
		{nil, 44, 64, 44}, {nil, 100, 64, 100}, {[]byte("k"), 112, 200, 112}, // Size set: every packet its size
	} {
		s := NewSTAMP(nil, STAMPConfig{Key: c.key, Size: c.size})
		if got := s.packetSize(c.probe); got != c.out {
			t.Errorf("packetSize(%d, key %q) = %d, want %d", c.probe, c.key, got, c.out)
		}
	}
}

func TestUnwrap(t *testing.T) {
	for _, c := range []struct {
		near uint64
		v    uint32
		want uint64
	}{
		{0, 0, 0}, {5, 3, 3}, {5, 9, 9}, {1<<32 + 5, 3, 1<<32 + 3},
		{1<<32 + 5, 0xffffffff, 0xffffffff}, {1 << 32, 2, 1<<32 + 2}, {3, 0xfffffffe, 0xfffffffe},
	} {
		if got := unwrap(c.near, c.v); got != c.want {
			t.Errorf("unwrap(%#x, %#x) = %#x, want %#x", c.near, c.v, got, c.want)
		}
	}
}

// TestSTAMPRun runs the client against a STAMP reflector that drops every
// 7th request and every 11th reply: the loss the result reports, and with
// a stateful reflector its split by direction, are the drops exactly.
func TestSTAMPRun(t *testing.T) {
	for _, stateful := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateless", true: "stateful"}[stateful], func(t *testing.T) {
			refl := stamp.NewReflector(stamp.ReflectorConfig{Stateful: stateful})
			u := serveSTAMP(t, refl, 7, 11)
			s := dialSTAMP(t, u.addr, STAMPConfig{Stateful: stateful, SSID: 1})
			cfg := client.Config{Rate: 500, Count: 300, Timeout: 2 * time.Second, ReportInterval: -1}
			res, err := client.Run(context.Background(), cfg, s)
			if err != nil {
				t.Fatal(err)
			}
			u.mu.Lock()
			up, down, reqs := u.droppedUp, u.droppedDown, u.requests
			u.mu.Unlock()
			c := res.Summary.Counts
			if reqs != 300 || up != 300/7 || down != (300-300/7)/11 {
				t.Fatalf("reflector saw %d requests, dropped %d up and %d down; want 300, %d, %d", reqs, up, down, 300/7, (300-300/7)/11)
			}
			if c.Sent != 300 || c.Lost != uint64(up+down) {
				t.Errorf("sent %d, lost %d; want 300, %d (dropped %d up, %d down)", c.Sent, c.Lost, up+down, up, down)
			}
			if stateful && (c.LostUp != uint64(up) || c.LostDown != uint64(down)) {
				t.Errorf("lost up %d, down %d; want %d, %d", c.LostUp, c.LostDown, up, down)
			}
			if !stateful && (c.LostUp != 0 || c.LostDown != 0) {
				t.Errorf("stateless: lost up %d, down %d; want 0, 0 (not split)", c.LostUp, c.LostDown)
			}
			p, said := res.Config.Peer, res.PeerResults
			if p == nil || p.STAMP == nil || p.Directions != stateful || said == nil || said.STAMP == nil || said.STAMP.SenderTTL != 64 {
				t.Fatalf("result's peer %+v, what it said %+v", p, said)
			}
			if !stateful && !strings.Contains(said.Note, "--stamp-stateful") {
				t.Errorf("stateless note %q: want it to say --stamp-stateful", said.Note)
			}
			if stateful && said.STAMP.Renumbered == 0 {
				t.Errorf("stateful run: renumbered 0, want the replies after the first drop up")
			}
			if got := uint64(res.Summary.Up.Count); got != c.Received || res.Summary.RTT.Count != res.Summary.Up.Count || res.Summary.Down.Count != res.Summary.Up.Count {
				t.Errorf("delays of %d, %d up, %d down; want each reply's (%d)", res.Summary.RTT.Count, res.Summary.Up.Count, res.Summary.Down.Count, c.Received)
			}
		})
	}
}
