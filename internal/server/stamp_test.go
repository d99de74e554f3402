package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// The STAMP listener's handling of one packet, without a socket: the
// limits, the modes, what a reply holds.

const stampT0 = int64(1_800_000_000) * 1e9

// newTestStamp returns a STAMP loop with no socket on a fake clock.
func newTestStamp(sc STAMPConfig, lim reflector.Config, stamped bool) (*stampServer, *clock.Fake) {
	clk := clock.NewFake(stampT0)
	lim.Clock = clk
	return newStampServer(nil, sc, lim, stamped), clk
}

// senderMsg returns a message holding a Session-Sender packet of seq, sent
// at t1, from addr with TTL ttl, padded to size (0: the base length).
func senderMsg(t *testing.T, key []byte, seq uint32, t1 int64, addr string, ttl uint8, size int) transport.Message {
	t.Helper()
	b := make([]byte, reflector.MaxMessage+1)
	n := max(size, stamp.BaseLength(key))
	if err := stamp.PutSender(b[:n], &stamp.Sender{Seq: seq, T1: stamp.FromUnixNano(t1), Err: 1, SSID: 7}, key); err != nil {
		t.Fatal(err)
	}
	return transport.Message{Buf: b, N: n, Addr: netip.MustParseAddrPort(addr), Path: transport.Path{TTL: ttl, OK: true}}
}

func TestSTAMPStatefulReply(t *testing.T) {
	sv, clk := newTestStamp(STAMPConfig{}, reflector.Config{}, true)
	for i := range uint32(3) {
		m := senderMsg(t, nil, 100+i, clk.Now()-1000, "192.0.2.1:5000", 42, 0)
		m.Stamp = tstamp.Stamp{SW: clk.Now() - 500}
		if !sv.handle(&m, clk.Now()) {
			t.Fatalf("packet %d dropped: %v", i, sv.iv.Drops)
		}
		if m.N != stamp.BaseLen {
			t.Fatalf("reply of %d bytes to %d", m.N, stamp.BaseLen)
		}
		r, err := stamp.ParseReflected(m.Buf[:m.N], nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != i || r.SenderSeq != 100+i || r.SenderTTL != 42 || r.SSID != 7 || r.SenderErr != 1 {
			t.Errorf("reply %d: %+v", i, r)
		}
		if r.T2.UnixNano() > r.T3.UnixNano() || r.T2.UnixNano() < clk.Now()-501 || r.T2.UnixNano() > clk.Now()-499 {
			t.Errorf("reply %d: T2 %d (kernel stamp %d), T3 %d", i, r.T2.UnixNano(), clk.Now()-500, r.T3.UnixNano())
		}
		clk.Advance(time.Millisecond)
	}
	if sv.iv.PacketsIn != 3 || sv.iv.SessionsOpened != 1 || len(sv.sessions) != 1 {
		t.Errorf("counters %+v, sessions %d", sv.iv, len(sv.sessions))
	}
}

func TestSTAMPStatelessCopiesSeq(t *testing.T) {
	sv, clk := newTestStamp(STAMPConfig{Stateless: true}, reflector.Config{}, false)
	for _, seq := range []uint32{9, 4, 1 << 31} {
		m := senderMsg(t, nil, seq, clk.Now(), "192.0.2.1:5000", 64, 0)
		if !sv.handle(&m, clk.Now()) {
			t.Fatalf("seq %d dropped", seq)
		}
		r, err := stamp.ParseReflected(m.Buf[:m.N], nil)
		if err != nil || r.Seq != seq || r.SenderSeq != seq {
			t.Errorf("seq %d: %+v, %v", seq, r, err)
		}
		if r.T2.UnixNano() != clk.Now() {
			t.Errorf("T2 %d without kernel stamps, want the read's time %d", r.T2.UnixNano(), clk.Now())
		}
	}
}

func TestSTAMPAuthenticated(t *testing.T) {
	key := []byte("stamp key")
	sv, clk := newTestStamp(STAMPConfig{Key: key}, reflector.Config{}, false)
	good := senderMsg(t, key, 1, clk.Now(), "192.0.2.1:5000", 64, 0)
	if !sv.handle(&good, clk.Now()) {
		t.Fatalf("signed packet dropped: %v", sv.iv.Drops)
	}
	if _, err := stamp.ParseReflected(good.Buf[:good.N], key); err != nil || good.N != stamp.AuthBaseLen {
		t.Errorf("reply of %d bytes: %v", good.N, err)
	}
	bad := senderMsg(t, []byte("another key"), 2, clk.Now(), "192.0.2.1:5000", 64, 0)
	unsigned := senderMsg(t, nil, 3, clk.Now(), "192.0.2.1:5000", 64, 0)
	for _, m := range []transport.Message{bad, unsigned} {
		if sv.handle(&m, clk.Now()) {
			t.Errorf("a packet without the key's HMAC answered")
		}
	}
	if sv.iv.Drops[reflector.DropAuth] != 1 || sv.iv.Drops[reflector.DropShort] != 1 {
		t.Errorf("drops %v: want auth 1 (wrong key), short 1 (44 bytes in authenticated mode)", sv.iv.Drops)
	}
}

func TestSTAMPRate(t *testing.T) {
	sv, clk := newTestStamp(STAMPConfig{}, reflector.Config{MaxRate: 10}, false)
	answered := 0
	for i := range uint32(50) {
		m := senderMsg(t, nil, i, clk.Now(), "192.0.2.1:5000", 64, 0)
		if sv.handle(&m, clk.Now()) {
			answered++
		}
	}
	// The bucket holds 10 (a tenth of a second's worth, at least 10).
	if answered != 10 || sv.iv.Drops[reflector.DropRate] != 40 {
		t.Errorf("answered %d, dropped %v at one instant: want 10 and rate 40", answered, sv.iv.Drops)
	}
	clk.Advance(500 * time.Millisecond) // 5 more tokens
	answered = 0
	for i := range uint32(20) {
		m := senderMsg(t, nil, i, clk.Now(), "192.0.2.1:5000", 64, 0)
		if sv.handle(&m, clk.Now()) {
			answered++
		}
	}
	if answered != 5 {
		t.Errorf("answered %d half a second later: want 5", answered)
	}
	// Another session has a bucket of its own.
	m := senderMsg(t, nil, 0, clk.Now(), "192.0.2.2:5000", 64, 0)
	if !sv.handle(&m, clk.Now()) {
		t.Error("another session's packet dropped")
	}
}

func TestSTAMPTotalRate(t *testing.T) {
	sv, clk := newTestStamp(STAMPConfig{}, reflector.Config{MaxTotalRate: 10}, false)
	answered := 0
	for i := range 40 {
		m := senderMsg(t, nil, 0, clk.Now(), netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(1000+i)).String(), 64, 0)
		if sv.handle(&m, clk.Now()) {
			answered++
		}
	}
	if answered != 10 || sv.iv.Drops[reflector.DropRate] != 30 {
		t.Errorf("answered %d of 40 sessions' packets, drops %v: want 10, rate 30", answered, sv.iv.Drops)
	}
}

func TestSTAMPAllow(t *testing.T) {
	lim := reflector.Config{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	sv, clk := newTestStamp(STAMPConfig{}, lim, false)
	out := senderMsg(t, nil, 0, clk.Now(), "192.0.2.1:5000", 64, 0)
	in := senderMsg(t, nil, 0, clk.Now(), "[::ffff:10.1.2.3]:5000", 64, 0)
	if sv.handle(&out, clk.Now()) || !sv.handle(&in, clk.Now()) {
		t.Error("--allow 10.0.0.0/8: want 192.0.2.1 refused, 10.1.2.3 answered")
	}
	if sv.iv.Drops[reflector.DropRefused] != 1 || len(sv.sessions) != 1 {
		t.Errorf("drops %v, sessions %d: want refused 1, one session", sv.iv.Drops, len(sv.sessions))
	}
}

func TestSTAMPSessionBounds(t *testing.T) {
	lim := reflector.Config{MaxSessions: 3, MaxSessionsPerSource: 2, IdleTimeout: time.Second}
	sv, clk := newTestStamp(STAMPConfig{}, lim, false)
	try := func(addr string) bool {
		m := senderMsg(t, nil, 0, clk.Now(), addr, 64, 0)
		return sv.handle(&m, clk.Now())
	}
	got := []bool{try("192.0.2.1:1"), try("192.0.2.1:2"), try("192.0.2.1:3"), try("192.0.2.2:1"), try("192.0.2.3:1"), try("192.0.2.1:1")}
	want := []bool{true, true, false, true, false, true} // per source 2; 3 in all; a known session goes on
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("packet %d answered %v, want %v", i, got[i], want[i])
		}
	}
	if sv.iv.Drops[reflector.DropSessions] != 2 {
		t.Errorf("drops %v: want sessions 2", sv.iv.Drops)
	}
	clk.Advance(2 * time.Second)
	sv.sweep(clk.Now())
	if len(sv.sessions) != 0 || !try("192.0.2.3:1") || !try("192.0.2.1:3") {
		t.Errorf("after the idle timeout: %d sessions left, or new ones refused", len(sv.sessions))
	}
}

// TestSTAMPSessionSSIDs: a session is an address, a port and an SSID, as
// the stateful numbering counts them; one source that changes its SSID
// opens sessions within its own bound, and cannot fill the table for
// the others.
func TestSTAMPSessionSSIDs(t *testing.T) {
	lim := reflector.Config{MaxSessions: 3, MaxSessionsPerSource: 1, IdleTimeout: time.Second}
	sv, clk := newTestStamp(STAMPConfig{}, lim, false)
	try := func(addr string, ssid uint16) bool {
		m := senderMsg(t, nil, 0, clk.Now(), addr, 64, 0)
		binary.BigEndian.PutUint16(m.Buf[14:], ssid) // the SSID's offset, unauthenticated
		return sv.handle(&m, clk.Now())
	}
	got := []bool{try("192.0.2.1:1", 1), try("192.0.2.1:1", 2), try("192.0.2.1:1", 3), try("192.0.2.2:1", 1), try("192.0.2.3:1", 1)}
	want := []bool{true, false, false, true, true} // one session per source, whatever its SSIDs
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("packet %d answered %v, want %v", i, got[i], want[i])
		}
	}
	if len(sv.sessions) != 3 || sv.refl.Sessions() != 3 {
		t.Errorf("%d sessions, the numbering's table %d: want 3 each", len(sv.sessions), sv.refl.Sessions())
	}
}

func TestSTAMPNoAmplification(t *testing.T) {
	sv, clk := newTestStamp(STAMPConfig{}, reflector.Config{}, false)
	for _, size := range []int{44, 45, 100, 1500} {
		m := senderMsg(t, nil, 0, clk.Now(), "192.0.2.1:5000", 64, size)
		if sv.handle(&m, clk.Now()) && m.N > size {
			t.Errorf("a reply of %d bytes to %d", m.N, size)
		}
	}
	for _, n := range []int{0, 1, 43} {
		m := transport.Message{Buf: make([]byte, 100), N: n, Addr: netip.MustParseAddrPort("192.0.2.1:5000")}
		if sv.handle(&m, clk.Now()) {
			t.Errorf("a %d-byte packet answered", n)
		}
	}
	if sv.iv.Drops[reflector.DropShort] != 3 {
		t.Errorf("drops %v: want short 3", sv.iv.Drops)
	}
}

// FuzzSTAMPHandle: any datagram is answered with no more bytes than it
// had, or dropped and counted; never a panic.
func FuzzSTAMPHandle(f *testing.F) {
	key := []byte("k")
	for _, k := range [][]byte{nil, key} {
		b := make([]byte, stamp.BaseLength(k)+8)
		_ = stamp.PutSender(b, &stamp.Sender{Seq: 1, SSID: 2}, k)
		f.Add(b, k != nil)
	}
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, pkt []byte, keyed bool) {
		sc := STAMPConfig{}
		if keyed {
			sc.Key = key
		}
		sv, clk := newTestStamp(sc, reflector.Config{}, false)
		m := transport.Message{Buf: make([]byte, len(pkt)), N: len(pkt), Addr: netip.MustParseAddrPort("192.0.2.1:5000")}
		copy(m.Buf, pkt)
		ok := sv.handle(&m, clk.Now())
		if ok && m.N > len(pkt) {
			t.Fatalf("a reply of %d bytes to %d", m.N, len(pkt))
		}
		if !ok && sv.iv.Dropped() != 1 {
			t.Fatalf("dropped, counted %v", sv.iv.Drops)
		}
	})
}

func TestSTAMPHandleAllocs(t *testing.T) {
	for _, stateful := range []bool{true, false} {
		sv, clk := newTestStamp(STAMPConfig{Stateless: !stateful, Key: []byte("k")}, reflector.Config{}, true)
		m := senderMsg(t, []byte("k"), 0, clk.Now(), "192.0.2.1:5000", 64, 0)
		req := append([]byte(nil), m.Buf[:m.N]...)
		n := m.N
		sv.handle(&m, clk.Now()) // opens the session
		allocs := testing.AllocsPerRun(100, func() {
			copy(m.Buf, req)
			m.N = n
			if !sv.handle(&m, clk.Now()) {
				t.Fatalf("dropped: %v", sv.iv.Drops)
			}
			clk.Advance(time.Millisecond)
		})
		if allocs != 0 {
			t.Errorf("stateful %v: %v allocations per packet", stateful, allocs)
		}
	}
}

func TestCheckStampPort(t *testing.T) {
	for _, c := range []struct {
		listen, stamp string
		clash         bool
	}{
		{":7766", ":7766", true},
		{"127.0.0.1:7766", ":7766", true},
		{"127.0.0.1:7766", "127.0.0.1:7766", true},
		{"[::]:862", "127.0.0.1:862", true},
		{"127.0.0.1:7766", "127.0.0.2:7766", false},
		{":7766", ":862", false},
		{"127.0.0.1:0", "127.0.0.1:0", false},
	} {
		err := checkStampPort(c.listen, c.stamp)
		if (err != nil) != c.clash || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("--listen %s --stamp %s: %v, want a clash %v", c.listen, c.stamp, err, c.clash)
		}
	}
}

// TestStatsSumSTAMP: the STAMP listener's intervals, the last worker's,
// are emitted apart from the volley workers' sum.
func TestStatsSumSTAMP(t *testing.T) {
	var volley, st []reflector.Counters
	agg := &statsSum{workers: 2, stamp: true, emit: func(v, s reflector.Counters) {
		volley, st = append(volley, v), append(st, s)
	}}
	agg.add(1, reflector.Counters{PacketsIn: 7})
	agg.add(0, reflector.Counters{PacketsIn: 3})
	if len(volley) != 1 || volley[0].PacketsIn != 3 || st[0].PacketsIn != 7 {
		t.Errorf("emitted volley %+v, STAMP %+v: want 3 and 7 apart", volley, st)
	}
}

// TestServeSTAMP: Serve runs the STAMP listener beside the volley one; its
// counters are in each interval's STAMP and in STAMPCounters, not in the
// volley reflector's.
func TestServeSTAMP(t *testing.T) {
	ss, err := Open(context.Background(), Setup{Listen: "127.0.0.1:0", Workers: 1, UDP: sockopt.Options{TOS: -1}, STAMP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := make(intervals, 1)
	done := make(chan error, 1)
	var total reflector.Counters
	go func() {
		var err error
		total, err = ss.Serve(ctx, Config{Reflector: reflector.Config{ReportInterval: 100 * time.Millisecond}, Intervals: true}, h)
		done <- err
	}()
	c, err := net.Dial("udp", ss.STAMP.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := make([]byte, stamp.BaseLen)
	if err := stamp.PutSender(req, &stamp.Sender{Seq: 3}, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{[]byte("short"), req} {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	rep := make([]byte, 100)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(rep)
	if err != nil || n != stamp.BaseLen {
		t.Fatalf("reply of %d bytes: %v", n, err)
	}
	var seen reflector.Counters
	for iv := range h {
		if iv.STAMP == nil {
			t.Fatal("an interval without the STAMP listener's counters")
		}
		seen = seen.Add(*iv.STAMP)
		if iv.Counts.PacketsIn != 0 {
			t.Errorf("the volley reflector counted %d packets", iv.Counts.PacketsIn)
		}
		if seen.PacketsIn == 2 {
			break
		}
	}
	if seen.PacketsOut != 1 || seen.Drops[reflector.DropShort] != 1 {
		t.Errorf("STAMP intervals: %+v, want 1 answered, 1 short", seen)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if st := ss.STAMPCounters(); st.PacketsIn != 2 || st.PacketsOut != 1 || total.PacketsIn != 0 {
		t.Errorf("totals: STAMP %+v, volley %+v", st, total)
	}
}

// TestServeSTAMPKernelStamps: with kernel stamps on (the default), the
// listener keeps answering past what its receive buffer would hold of the
// transmit stamps its sends leave on the socket: it drains them. With a
// 64 KiB buffer, a few hundred stamps filled it and the socket went deaf.
func TestServeSTAMPKernelStamps(t *testing.T) {
	ss, err := Open(context.Background(), Setup{Listen: "127.0.0.1:0", Workers: 1,
		UDP: sockopt.Options{TOS: -1, Buffer: 64 << 10}, STAMP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if used, err := ss.EnableStamps(tstamp.Auto); err != nil || used == "user" {
		t.Skipf("skipping: no kernel stamps on this socket (%q, %v)", used, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ss.Serve(ctx, Config{Reflector: reflector.Config{ReportInterval: -1}}, nil)
		done <- err
	}()
	c, err := net.Dial("udp", ss.STAMP.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, rep := make([]byte, stamp.BaseLen), make([]byte, 100)
	const n = 3000
	for i := range uint32(n) {
		if err := stamp.PutSender(req, &stamp.Sender{Seq: i}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(rep); err != nil {
			t.Fatalf("no reply to request %d of %d: %v", i+1, n, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if st := ss.STAMPCounters(); st.PacketsOut != n {
		t.Errorf("answered %d, want %d", st.PacketsOut, n)
	}
}

// TestSTAMPErrorEstimate: replies carry the host clock's error estimate,
// whose multiplier is never 0 (RFC 4656), or the one configured.
func TestSTAMPErrorEstimate(t *testing.T) {
	if e := clockError(); e.Multiplier() == 0 {
		t.Errorf("the host clock's error estimate %#04x has a zero multiplier", uint16(e))
	}
	sv, clk := newTestStamp(STAMPConfig{Err: 0x8203}, reflector.Config{}, false)
	m := senderMsg(t, nil, 0, clk.Now(), "192.0.2.1:5000", 64, 0)
	if !sv.handle(&m, clk.Now()) {
		t.Fatal("dropped")
	}
	if r, err := stamp.ParseReflected(m.Buf[:m.N], nil); err != nil || r.Err != 0x8203 {
		t.Errorf("reply's error estimate %#04x (%v), want 0x8203", uint16(r.Err), err)
	}
}
