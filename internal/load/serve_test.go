package load

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a TCP connection on loopback.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func addr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// TestGrantLimits: 16 streams from one source, 64 in all; a released
// place is taken again; a stream of no time is refused, a long one cut
// to MaxDuration.
func TestGrantLimits(t *testing.T) {
	s := NewServer(ServerConfig{})
	var grants []*Grant
	for i := range MaxStreamsPerSource {
		g, err := s.Grant(addr("192.0.2.1:1000"), Down, time.Second)
		if err != nil {
			t.Fatalf("stream %d of one source: %v, want a grant", i+1, err)
		}
		grants = append(grants, g)
	}
	if _, err := s.Grant(addr("192.0.2.1:2000"), Up, time.Second); !errors.Is(err, ErrStreams) {
		t.Fatalf("stream %d of one source: %v, want ErrStreams", MaxStreamsPerSource+1, err)
	}
	// The same /64 is one source; another /64 another.
	for src := 2; len(grants) < MaxStreams; src++ {
		for range MaxStreamsPerSource {
			g, err := s.Grant(netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(src)}), 1), Up, time.Second)
			if err != nil {
				t.Fatalf("stream %d in all: %v, want a grant", len(grants)+1, err)
			}
			grants = append(grants, g)
		}
	}
	if _, err := s.Grant(addr("[2001:db8::1]:1"), Up, time.Second); !errors.Is(err, ErrStreams) {
		t.Fatalf("stream %d in all: %v, want ErrStreams", MaxStreams+1, err)
	}
	if c := s.Counters(); c.Streams != MaxStreams || c.Refused != 2 || c.Served != MaxStreams {
		t.Fatalf("Counters() = %+v, want %d streams, %d served, 2 refused", c, MaxStreams, MaxStreams)
	}
	grants[0].Release()
	grants[0].Release() // once only
	g, err := s.Grant(addr("[2001:db8::1]:1"), Up, time.Hour)
	if err != nil {
		t.Fatalf("after a release: %v, want a grant", err)
	}
	if g.Duration != MaxDuration {
		t.Errorf("a stream of an hour is granted %v, want %v", g.Duration, MaxDuration)
	}
	if _, err := s.Grant(addr("[2001:db8::1]:1"), Up, 0); !errors.Is(err, ErrDuration) {
		t.Errorf("a stream of no time: %v, want ErrDuration", err)
	}
	for _, g := range grants {
		g.Release()
	}
	g.Release()
	if c := s.Counters(); c.Streams != 0 {
		t.Fatalf("after every release, %d streams", c.Streams)
	}
}

// TestDownNotRead: a download whose client never reads is cut after the
// send timeout, long before its grant ends, and gives its place back.
func TestDownNotRead(t *testing.T) {
	s := NewServer(ServerConfig{SendTimeout: 100 * time.Millisecond})
	_, sc := tcpPair(t)
	g, err := s.Grant(addr("192.0.2.1:1"), Down, MaxDuration)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Serve(sc); !errors.Is(err, ErrStalled) {
		t.Fatalf("Serve of a download nobody reads = %v, want ErrStalled", err)
	}
	if c := s.Counters(); c.Streams != 0 || c.Sent == 0 {
		t.Fatalf("Counters() = %+v, want no stream left and the bytes that went", c)
	}
}

// TestUpForever: an upload that never stops is read until its grant ends,
// then Serve returns; the client's writes fail once the reflector closes.
func TestUpForever(t *testing.T) {
	s := NewServer(ServerConfig{})
	cc, sc := tcpPair(t)
	g, err := s.Grant(addr("192.0.2.1:1"), Up, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		for {
			_ = cc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := cc.Write(zeros[:]); err != nil {
				wrote <- err
				return
			}
		}
	}()
	if err := g.Serve(sc); err != nil {
		t.Fatalf("Serve of an upload that sends for ever = %v, want nil at the grant's end", err)
	}
	sc.Close()
	if err := <-wrote; errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the client's writes ended with %v, want the connection closed", err)
	}
	if c := s.Counters(); c.Streams != 0 || c.Received == 0 {
		t.Fatalf("Counters() = %+v, want no stream left and the bytes received", c)
	}
}

// TestDownRate: a download under a cap sends no more than the bucket's
// burst and the cap over the grant (the server's own clock: no timing
// threshold).
func TestDownRate(t *testing.T) {
	const bits = 8e6 // 1 MB/s
	s := NewServer(ServerConfig{MaxRate: bits})
	if s.RateLimit() != bits {
		t.Fatalf("RateLimit() = %d, want %v", s.RateLimit(), bits)
	}
	cc, sc := tcpPair(t)
	go func() { _, _ = io.Copy(io.Discard, cc) }()
	const d = 300 * time.Millisecond
	g, err := s.Grant(addr("192.0.2.1:1"), Down, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Serve(sc); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	burst := max(bits/8/100, float64(s.chunk))
	most := uint64(burst + bits/8*d.Seconds())
	if sent := s.Counters().Sent; sent == 0 || sent > most {
		t.Fatalf("sent %d bytes in %v at %v bit/s, want 1 to %d", sent, d, bits, most)
	}
}

// TestServeClientCloses: a client that closes ends its stream at once,
// either way, without an error.
func TestServeClientCloses(t *testing.T) {
	for _, dir := range []Direction{Up, Down} {
		t.Run(dir.String(), func(t *testing.T) {
			s := NewServer(ServerConfig{})
			cc, sc := tcpPair(t)
			cc.Close()
			g, err := s.Grant(addr("192.0.2.1:1"), dir, MaxDuration)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Serve(sc); err != nil {
				t.Fatalf("Serve after the client closed = %v, want nil", err)
			}
		})
	}
}

// TestDownWaitEndsOnClose: a download waiting for the rate (here most of
// a minute for its second chunk) ends at once when its connection is
// closed, as the listener's Close does: a server's shutdown never waits
// for the rate.
func TestDownWaitEndsOnClose(t *testing.T) {
	s := NewServer(ServerConfig{MaxRate: 160}) // 20 bytes/s: 51s a chunk
	cc, sc := tcpPair(t)
	g, err := s.Grant(addr("192.0.2.1:1"), Down, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(sc) }()
	if _, err := io.ReadFull(cc, make([]byte, minChunk)); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	if err := <-served; err == nil || errors.Is(err, ErrStalled) {
		t.Fatalf("Serve on a closed connection = %v, want the connection's error", err)
	}
	if c := s.Counters(); c.Streams != 0 || c.Sent != minChunk {
		t.Fatalf("Counters() = %+v, want no stream and one chunk sent", c)
	}
	// The chunk it waited for went back: the next chunk waits for its
	// own tokens only (the first chunk's were spent), not for those of
	// the chunk never sent too.
	one := time.Duration(float64(s.chunk) / s.rate * 1e9)
	if w := s.bucket.reserve(s.chunk, time.Now().UnixNano()); w > one {
		t.Fatalf("after a stream cut while waiting, the next chunk waits %v, want at most a chunk's %v", w, one)
	}
}

// TestServeGivesBack: streams whose connection is closed before they
// send (as after a LoadAck the listener could not send) leave no debt in
// the rate bucket for the others.
func TestServeGivesBack(t *testing.T) {
	s := NewServer(ServerConfig{MaxRate: 160}) // 20 bytes/s: 51s a chunk
	for i := range 10 {
		_, sc := tcpPair(t)
		sc.Close()
		g, err := s.Grant(addr("192.0.2.1:1"), Down, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Serve(sc); err == nil {
			t.Fatalf("stream %d: Serve on a closed connection = nil, want its error", i+1)
		}
	}
	if c := s.Counters(); c.Streams != 0 || c.Sent != 0 {
		t.Fatalf("Counters() = %+v, want no stream and nothing sent", c)
	}
	if w := s.bucket.reserve(s.chunk, time.Now().UnixNano()); w != 0 {
		t.Fatalf("after 10 streams that sent nothing, a chunk waits %v, want 0", w)
	}
}

// TestServerRate: ServerConfig.MaxRate as --max-load-rate takes it: 0 (or
// less) is no limit, a rate beyond HighestMaxRate is taken as it.
func TestServerRate(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want uint64
	}{{0, 0}, {-1, 0}, {DefaultMaxRate, 1e9}, {LowestMaxRate, 8e3}, {1e30, HighestMaxRate}} {
		s := NewServer(ServerConfig{MaxRate: tc.in})
		if got := s.RateLimit(); got != tc.want {
			t.Errorf("NewServer(MaxRate %v).RateLimit() = %d, want %d", tc.in, got, tc.want)
		}
		if unpaced := s.bucket.rate == 0; unpaced != (tc.want == 0) {
			t.Errorf("NewServer(MaxRate %v): the bucket's rate is %v, want none only for no limit", tc.in, s.bucket.rate)
		}
	}
}
