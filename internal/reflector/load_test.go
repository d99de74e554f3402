package reflector

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// serveStream runs a reflector for cfg on a stream listener (network
// "tcp" on loopback, or "unix" at a path) until the test ends, and
// returns its address.
func serveStream(t *testing.T, network string, cfg Config, lim transport.StreamLimits) string {
	t.Helper()
	a, _ := serveReflector(t, network, cfg, lim)
	return a
}

// serveReflector is serveStream, which also returns the reflector.
func serveReflector(t *testing.T, network string, cfg Config, lim transport.StreamLimits) (string, *Reflector) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "r.sock")
	}
	pc, err := transport.ListenStreamWith(network, addr, transport.ListenOptions{Socket: sockopt.Options{TOS: -1}, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Serve(ctx, pc)
	}()
	t.Cleanup(func() {
		cancel()
		pc.Close()
		<-done
	})
	return pc.LocalAddr().String(), r
}

// drops returns the messages r dropped for reason so far (under the lock
// a stream reflector counts under).
func drops(r *Reflector, reason DropReason) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.Drops[reason]
}

// waitMoved waits until s moved a byte, failing the test when the
// stream ends first or nothing comes within 10 s.
func waitMoved(t *testing.T, s *load.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.WaitMoved(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// rawClient is a stream connection to a reflector that speaks framed
// messages by hand.
type rawClient struct {
	t     *testing.T
	c     net.Conn
	nonce uint64
	token uint64
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawClient{t: t, c: c, nonce: 77}
}

func (rc *rawClient) send(h wire.Header) {
	rc.t.Helper()
	b := make([]byte, 4+wire.HeaderLen)
	binary.BigEndian.PutUint32(b, wire.HeaderLen)
	_ = h.Encode(b[4:])
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawClient) recv() wire.Header {
	rc.t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(rc.c, hdr[:]); err != nil {
		rc.t.Fatalf("read a frame: %v", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1024 {
		rc.t.Fatalf("a frame of %d bytes: bulk data where a message was due", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rc.c, b); err != nil {
		rc.t.Fatal(err)
	}
	var h wire.Header
	if err := h.Decode(b); err != nil {
		rc.t.Fatalf("Decode(%x) = %v", b, err)
	}
	return h
}

// hello opens a session on the connection, and keeps its token.
func (rc *rawClient) hello() {
	rc.t.Helper()
	rc.send(wire.Header{Type: wire.TypeHello, Seq: rc.nonce})
	c := rc.recv()
	if c.Type != wire.TypeCookie {
		rc.t.Fatalf("answer to a Hello: %+v, want a Cookie", c)
	}
	rc.token = c.Token
}

// load asks for a stream of d, down or not.
func (rc *rawClient) load(down bool, d time.Duration) wire.Header {
	rc.t.Helper()
	h := wire.Header{Type: wire.TypeLoad, Token: rc.token, Nonce: rc.nonce, Seq: 1, HoldMicro: uint32(d / time.Microsecond)}
	if down {
		h.Flags = wire.FlagLoadDown
	}
	rc.send(h)
	return rc.recv()
}

// waitStreams waits until s serves n streams, failing the test after
// 10 s.
func waitStreams(t *testing.T, s *load.Server, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); s.Counters().Streams != n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the load server serves %d streams after 10s, want %d", s.Counters().Streams, n)
		}
	}
}

// TestLoadOff: a reflector without load answers a TypeLoad with
// ErrorLoad and nothing else: the next frame on the connection is the
// answer to the next message, not bulk data.
func TestLoadOff(t *testing.T) {
	a, refl := serveReflector(t, "tcp", Config{}, transport.StreamLimits{})
	rc := dialRaw(t, a)
	rc.hello()
	if e := rc.load(true, time.Minute); e.Type != wire.TypeError || e.Code != wire.ErrorLoad {
		t.Fatalf("answer to a TypeLoad without load: %+v, want ErrorLoad", e)
	}
	if n := drops(refl, DropLoadOff); n != 1 {
		t.Fatalf("%d load-off drops after a refusal, want 1", n)
	}
	rc.nonce++
	rc.hello()

	s, err := (&load.Dialer{Network: "tcp", Address: a}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var r *load.Refused
	if err := s.Start(t.Context(), load.Up, time.Second); !errors.As(err, &r) || r.Code != wire.ErrorLoad {
		t.Fatalf("Start at a reflector without --allow-load = %v, want ErrorLoad", err)
	}
}

// TestLoadKey: with a key, a client without it, or with another, never
// gets past its Hello; one with it gets its stream.
func TestLoadKey(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{MaxRate: 80e6})
	a := serveStream(t, "tcp", Config{Key: []byte("right"), Load: srv}, transport.StreamLimits{})
	for _, key := range [][]byte{nil, []byte("wrong")} {
		var r *load.Refused
		if _, err := (&load.Dialer{Network: "tcp", Address: a, Key: key}).Dial(t.Context()); !errors.As(err, &r) || r.Code != wire.ErrorAuth {
			t.Errorf("Dial with key %q = %v, want ErrorAuth", key, err)
		}
	}
	// Unsigned, a TypeLoad gets nothing; the connection answers the
	// next Hello still (with its refusal).
	rc := dialRaw(t, a)
	rc.send(wire.Header{Type: wire.TypeLoad, Token: 1, Nonce: 2, Seq: 3, HoldMicro: 1e6})
	rc.send(wire.Header{Type: wire.TypeHello, Seq: 4})
	if e := rc.recv(); e.Type != wire.TypeError || e.Code != wire.ErrorAuth || e.Seq != 4 {
		t.Fatalf("after an unsigned TypeLoad and a Hello: %+v, want the Hello's ErrorAuth", e)
	}
	s, err := (&load.Dialer{Network: "tcp", Address: a, Key: []byte("right")}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), load.Down, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if g, rate := s.Granted(); g != 2*time.Second || rate != 80e6 {
		t.Errorf("Granted() = %v, %d; want 2s, 80e6", g, rate)
	}
	waitMoved(t, s)
	if err := s.Stop(); err != nil {
		t.Errorf("Stop = %v, want nil", err)
	}
	waitStreams(t, srv, 0) // the reflector saw the client go: all it sent is counted
	if s.Moved() == 0 || s.Moved() > srv.Counters().Sent {
		t.Errorf("Moved() = %d, the reflector sent %d: want 1 to that", s.Moved(), srv.Counters().Sent)
	}
}

// TestLoadStreamLimits: streams beyond the most from one source, or in
// all, are refused with ErrorLoadStreams; a stream that ends makes room.
func TestLoadStreamLimits(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{MaxRate: 8e6, MaxStreams: 3, MaxStreamsPerSource: 2})
	a, refl := serveReflector(t, "tcp", Config{Load: srv}, transport.StreamLimits{})
	from := func(ip string) *load.Dialer {
		return &load.Dialer{Network: "tcp", Address: a, Connect: func(ctx context.Context, network, address string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return d.DialContext(ctx, network, address)
		}}
	}
	start := func(d *load.Dialer) (*load.Stream, error) {
		t.Helper()
		s, err := d.Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Stop() })
		return s, s.Start(t.Context(), load.Down, time.Minute)
	}
	full := func(err error) bool {
		var r *load.Refused
		return errors.As(err, &r) && r.Code == wire.ErrorLoadStreams
	}
	a1, err := start(from("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(from("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := start(from("127.0.0.1")); !full(err) {
		t.Fatalf("a third stream from one source = %v, want ErrorLoadStreams", err)
	}
	if _, err := start(from("127.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if _, err := start(from("127.0.0.3")); !full(err) {
		t.Fatalf("a fourth stream in all = %v, want ErrorLoadStreams", err)
	}
	if n, c := drops(refl, DropLoadStreams), srv.Counters(); n != 2 || c.Refused != 2 {
		t.Fatalf("%d load-streams drops, %d refused; want 2 of each", n, c.Refused)
	}
	if err := a1.Stop(); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	waitStreams(t, srv, 2)
	if _, err := start(from("127.0.0.3")); err != nil {
		t.Fatalf("a stream after one ended = %v, want it granted", err)
	}
}

// TestLoadDownNotRead: a download whose client never reads is cut after
// the send timeout: its place and its goroutine are given back, and its
// connection closed.
func TestLoadDownNotRead(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{SendTimeout: 100 * time.Millisecond})
	a, refl := serveReflector(t, "tcp", Config{Load: srv}, transport.StreamLimits{SendTimeout: 100 * time.Millisecond})
	rc := dialRaw(t, a)
	rc.hello()
	if ack := rc.load(true, load.MaxDuration); ack.Type != wire.TypeLoadAck || ack.HoldMicro != uint32(load.MaxDuration/time.Microsecond) {
		t.Fatalf("answer: %+v, want a LoadAck of %v", ack, load.MaxDuration)
	}
	waitStreams(t, srv, 0)
	if _, err := io.Copy(io.Discard, rc.c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reading what was sent: %v, want the connection closed", err)
	}
	if n := drops(refl, DropLoadStalled); n != 1 {
		t.Fatalf("%d load-stalled drops, want 1", n)
	}
}

// TestLoadUpForever: an upload that never stops is read until its grant
// ends; then the reflector closes, and the client's writes fail.
func TestLoadUpForever(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{})
	a := serveStream(t, "tcp", Config{Load: srv}, transport.StreamLimits{})
	rc := dialRaw(t, a)
	rc.hello()
	if ack := rc.load(false, 200*time.Millisecond); ack.Type != wire.TypeLoadAck || ack.Flags&wire.FlagLoadDown != 0 {
		t.Fatalf("answer: %+v, want an up LoadAck", ack)
	}
	buf := make([]byte, 64<<10)
	for {
		_ = rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := rc.c.Write(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the upload's writes ended with %v, want the connection closed", err)
			}
			break
		}
	}
	waitStreams(t, srv, 0)
	if c := srv.Counters(); c.Received == 0 {
		t.Fatalf("Counters() = %+v, want bytes received", c)
	}
}

// TestLoadUnix: a stream over a Unix socket; an upload counts the bytes
// written there (no TCP_INFO).
func TestLoadUnix(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{})
	a := serveStream(t, "unix", Config{Load: srv}, transport.StreamLimits{})
	s, err := (&load.Dialer{Network: "unix", Address: a}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), load.Up, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitMoved(t, s)
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	waitStreams(t, srv, 0)
}

// TestLoadMalformed: a TypeLoad that is cut, carries a wrong token, asks
// for no time or for hours, or comes over datagrams, never panics and
// gets nothing, or a grant within MaxDuration.
func TestLoadMalformed(t *testing.T) {
	clk := clock.NewFake(int64(1000 * time.Hour))
	srv := load.NewServer(load.ServerConfig{})
	r, err := New(Config{Clock: clk, Secret: []byte("s"), Load: srv})
	if err != nil {
		t.Fatal(err)
	}
	tok := handshake(t, r, clk, alice) // nonce 99
	good := wire.Header{Type: wire.TypeLoad, Token: tok, Nonce: 99, Seq: 1, HoldMicro: math.MaxUint32}
	// Over a datagram (Handle), even a good one gets nothing.
	if reply := r.Handle(msg(t, good, wire.HeaderLen), alice, clk.Now()); reply != nil {
		t.Fatalf("a TypeLoad over datagrams got %x", reply)
	}
	h := newStreamHandler(r)
	for _, tc := range []struct {
		name string
		m    []byte
	}{
		{"cut", msg(t, good, wire.HeaderLen)[:40]},
		{"wrong token", msg(t, wire.Header{Type: wire.TypeLoad, Token: tok + 1, Nonce: 99, HoldMicro: 1e6}, wire.HeaderLen)},
		{"wrong nonce", msg(t, wire.Header{Type: wire.TypeLoad, Token: tok, Nonce: 98, HoldMicro: 1e6}, wire.HeaderLen)},
		{"no time", msg(t, wire.Header{Type: wire.TypeLoad, Token: tok, Nonce: 99}, wire.HeaderLen)},
	} {
		if reply, _, admit := h.Handle(tc.m, alice, 0); reply != nil || admit == transport.AdmitTake {
			t.Errorf("%s: Handle = %x, %v; want nothing", tc.name, reply, admit)
		}
	}
	reply, _, admit := h.Handle(msg(t, good, wire.HeaderLen), alice, 0)
	ack := decode(t, reply)
	if admit != transport.AdmitTake || ack.Type != wire.TypeLoadAck || ack.HoldMicro != uint32(load.MaxDuration/time.Microsecond) || len(reply) != wire.HeaderLen {
		t.Fatalf("hours asked: %+v, %v; want a header's LoadAck of %v and AdmitTake", ack, admit, load.MaxDuration)
	}
	if n := srv.Counters().Streams; n != 1 {
		t.Fatalf("%d streams granted, want 1", n)
	}
	h.Gone(alice) // a connection that never got to Take
	if n := srv.Counters().Streams; n != 0 {
		t.Fatalf("%d streams after the connection went, want 0", n)
	}
}
