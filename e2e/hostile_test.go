package e2e

// Attacks on a running reflector (issue 14): each test plays a hostile or
// broken peer against the real server beside a legitimate client, on
// loopback, bounded in count and time.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// streamPeer is a hand-made stream client: it frames messages as volley
// does and can stop reading whenever it likes.
type streamPeer struct {
	t     *testing.T
	c     net.Conn
	token uint64
	nonce uint64
}

func dialStream(t *testing.T, network, addr string) *streamPeer {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &streamPeer{t: t, c: c}
}

func (p *streamPeer) send(h wire.Header, size int) error {
	b := make([]byte, 4+size)
	binary.BigEndian.PutUint32(b, uint32(size))
	if err := h.Encode(b[4:]); err != nil {
		p.t.Fatal(err)
	}
	p.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := p.c.Write(b)
	return err
}

func (p *streamPeer) recv() (wire.Header, error) {
	var hdr [4]byte
	p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(p.c, hdr[:]); err != nil {
		return wire.Header{}, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(p.c, b); err != nil {
		return wire.Header{}, err
	}
	var h wire.Header
	return h, h.Decode(b)
}

// handshake opens a session: Hello, Cookie.
func (p *streamPeer) handshake() wire.Header {
	p.t.Helper()
	p.nonce = uint64(time.Now().UnixNano())
	if err := p.send(wire.Header{Type: wire.TypeHello, Seq: p.nonce}, wire.HeaderLen); err != nil {
		p.t.Fatal(err)
	}
	h, err := p.recv()
	if err != nil {
		p.t.Fatalf("answer to a Hello: %v", err)
	}
	p.token = h.Token
	return h
}

// closedWithin reports whether the peer's connection is closed by the
// other end within d: a read ends with EOF or a reset (what was sent to
// it is read and dropped).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	for {
		_, err := c.Read(buf)
		if err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// legit runs a client against target at 200 probes/s for n probes; it
// fails the test unless every probe came back. How long they took is the
// business of bench/hostile.sh: the timeout here is generous, as CI's
// machines are busy.
func legit(t *testing.T, target string, n int) {
	t.Helper()
	r := volleyRun(t, "client", target, "--rate", "200", "-n", fmt.Sprint(n), "--timeout", "5s", "--format", "json")
	res := parseResult(t, r.stdout)
	if c := res.Summary.Counts; r.code != 0 || c.Received != uint64(n) {
		t.Fatalf("legitimate client of %s: exit %d, counts %+v: want all %d back (%s)", target, r.code, c, n, r.stderr)
	}
}

// stopWithin sends SIGTERM and fails the test unless the server exits
// within d (it waited for a stalled peer for ever before).
func stopWithin(t *testing.T, s *server, d time.Duration) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		s.cmd.Wait()
	case <-time.After(d):
		t.Fatalf("server still running %s after SIGTERM", d)
	}
}

// TestStalledStreamPeer (point 1): a TCP or Unix stream peer that asks
// for large held replies and never reads stalls no one: a legitimate
// client on the same listener loses nothing, the stalled peer's replies
// are dropped as a slow reader (or for memory), and SIGTERM still stops
// the server. (That its connection is closed after --send-timeout is
// stream's TestSlowReaderStallsNoOne: reading here to see it would
// unstall it.)
func TestStalledStreamPeer(t *testing.T) {
	dir, err := os.MkdirTemp("", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--unix", sock, "--send-timeout", "1s")
	srv.waitFor(t, "listening on unix")
	for _, tt := range []struct{ network, addr, target string }{
		{"tcp", srv.addr, "tcp://" + srv.addr},
		{"unix", sock, "unix://" + sock},
	} {
		t.Run(tt.network, func(t *testing.T) {
			p := dialStream(t, tt.network, tt.addr)
			if c := p.handshake(); c.Type != wire.TypeCookie {
				t.Fatalf("Hello answered with %+v", c)
			}
			// 300 probes, each asking for a 4 MiB reply held 10 ms:
			// 1.2 GB of replies for a peer that reads none of them.
			go func() {
				for seq := uint64(1); seq <= 300; seq++ {
					h := wire.Header{Type: wire.TypeProbe, Token: p.token, Nonce: p.nonce, Seq: seq, ReplySize: 4 << 20, HoldMicro: 10000}
					if p.send(h, wire.HeaderLen) != nil {
						return
					}
				}
			}()
			time.Sleep(200 * time.Millisecond)
			legit(t, tt.target, 400)
		})
	}
	stopWithin(t, srv, 5*time.Second)
	if out := srv.output(); !strings.Contains(out, "slow-reader") && !strings.Contains(out, "memory") {
		t.Errorf("the server's totals count no slow-reader or memory drops:\n%s", out)
	}
}

// TestStreamMemory (point 3): a frame's declared length buys nothing
// before the handshake (the connection is closed at once), and after it
// the buffer grows only as the bytes come; many connections each sending
// a small frame cost little and are closed after the handshake timeout.
func TestStreamMemory(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--handshake-timeout", "1s")
	srv.waitFor(t, "listening on tcp")
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 4<<20)
	for i := range 20 {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(append(hdr[:], make([]byte, 1000)...))
		if !closedWithin(c, 5*time.Second) {
			t.Fatalf("connection %d: a 4 MiB frame before the handshake did not close it", i)
		}
	}
	// Hellos from short-lived connections, as a churn attack sends.
	for range 100 {
		p := dialStream(t, "tcp", srv.addr)
		p.handshake()
		p.c.Close()
	}
	legit(t, "tcp://"+srv.addr, 200)
	stopWithin(t, srv, 5*time.Second)
}

// TestIdleConnections (point 4): idle connections cannot lock others
// out. Those with no session make room for a new client at the
// per-source cap and are closed after the handshake timeout; those in a
// session and idle count until the idle timeout, and beyond the cap a
// client is told why (not "port unreachable"); another source still gets
// in.
func TestIdleConnections(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--max-conns-per-source", "8", "--handshake-timeout", "2s", "--idle-timeout", "3s")
	srv.waitFor(t, "listening on tcp")
	var silent []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	time.Sleep(1200 * time.Millisecond) // past the second a connection may wait unquestioned
	if r := volleyRun(t, "client", "tcp://"+srv.addr, "-n", "10"); r.code != 0 {
		t.Fatalf("a client at the per-source cap of silent connections: exit %d, stderr %q; want it let in", r.code, r.stderr)
	}
	for i, c := range silent {
		if !closedWithin(c, 10*time.Second) {
			t.Fatalf("silent connection %d still open after the handshake timeout", i)
		}
	}
	// Connections in a session, idle.
	for range 8 {
		p := dialStream(t, "tcp", srv.addr)
		if c := p.handshake(); c.Type != wire.TypeCookie {
			t.Fatalf("Hello answered with %+v", c)
		}
		if err := p.send(wire.Header{Type: wire.TypeProbe, Token: p.token, Nonce: p.nonce, Seq: 1}, wire.HeaderLen); err != nil {
			t.Fatal(err)
		}
		if h, err := p.recv(); err != nil || h.Type != wire.TypeReply {
			t.Fatalf("first probe answered with %+v, %v", h, err)
		}
	}
	r := volleyRun(t, "client", "tcp://"+srv.addr, "-n", "10")
	if r.code == 0 || !strings.Contains(r.stderr, "too many connections from your address") {
		t.Fatalf("a client beyond the per-source cap: exit %d, stderr %q; want the reason", r.code, r.stderr)
	}
	// Another source: the server listens on 127.0.0.1 only, so reach it
	// from 127.0.0.2 by binding there.
	if r := volleyRun(t, "client", "tcp://"+srv.addr, "--bind", "127.0.0.2", "-n", "10"); r.code != 0 {
		t.Fatalf("a client from another source: exit %d: %s", r.code, r.stderr)
	}
	time.Sleep(4 * time.Second) // past the idle timeout
	legit(t, "tcp://"+srv.addr, 50)
	stopWithin(t, srv, 5*time.Second)
}

// udpPeer is a hand-made UDP client that can replay what it sent.
type udpPeer struct {
	t       *testing.T
	c       *net.UDPConn
	in, out int // bytes sent and received
}

func dialUDP(t *testing.T, addr string) *udpPeer {
	t.Helper()
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpPeer{t: t, c: c}
}

func (p *udpPeer) send(b []byte) {
	p.out += len(b)
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// answers reads what comes within d, up to max answers, and returns their
// headers.
func (p *udpPeer) answers(d time.Duration, max int) []wire.Header {
	var hs []wire.Header
	buf := make([]byte, 65536)
	p.c.SetReadDeadline(time.Now().Add(d))
	for len(hs) < max {
		n, err := p.c.Read(buf)
		if err != nil {
			return hs
		}
		p.in += n
		var h wire.Header
		if h.Decode(buf[:n]) == nil {
			hs = append(hs, h)
		}
	}
	return hs
}

func encode(t *testing.T, h wire.Header, size int) []byte {
	b := make([]byte, size)
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplay (point 5): a captured probe that asked for large replies,
// replayed after its session's Close and after the idle sweep, opens
// nothing and earns no more than it brings; a replayed Close earns no
// more than itself.
func TestReplay(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--idle-timeout", "1s")
	p := dialUDP(t, srv.addr)
	nonce := uint64(42)
	p.send(encode(t, wire.Header{Type: wire.TypeHello, Seq: nonce, ReplySize: 65000}, wire.HeaderLen))
	hs := p.answers(time.Second, 1)
	if len(hs) != 1 || hs[0].Type != wire.TypeCookie {
		t.Fatalf("answers to a Hello: %+v", hs)
	}
	tok := hs[0].Token
	probe := encode(t, wire.Header{Type: wire.TypeProbe, Token: tok, Nonce: nonce, Seq: 1, ReplySize: 65000}, wire.HeaderLen)
	closeMsg := encode(t, wire.Header{Type: wire.TypeClose, Token: tok, Nonce: nonce}, wire.HeaderLen)
	p.send(probe)
	if hs := p.answers(time.Second, 1); len(hs) != 1 || hs[0].Type != wire.TypeReply {
		t.Fatalf("answers to the first probe: %+v", hs)
	}
	// The legitimate exchange is done: from here, count only the replays.
	p.in, p.out = 0, 0
	p.send(probe) // a copy within the session
	p.send(closeMsg)
	p.send(closeMsg)
	p.send(probe) // after the Close
	p.answers(500*time.Millisecond, 100)
	time.Sleep(2 * time.Second) // past the idle timeout: swept
	for range 5 {
		p.send(probe)
		p.send(closeMsg)
	}
	for _, h := range p.answers(time.Second, 100) {
		if h.Type == wire.TypeReply && h.Seq == 1 && h.ReplySize > wire.HeaderLen {
			t.Fatalf("a replay earned a %d-byte reply", h.ReplySize)
		}
	}
	if p.in > p.out {
		t.Fatalf("replays: %d bytes out, %d bytes back: amplification", p.out, p.in)
	}
	stopWithin(t, srv, 5*time.Second)
	if out := srv.output(); !strings.Contains(out, "sessions opened 1,") {
		t.Errorf("replays opened sessions:\n%s", out)
	}
}

// TestSessionsPerSource (point 6): one address cannot take every session;
// beyond its share it is told why, and another address gets a session.
func TestSessionsPerSource(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--max-sessions-per-source", "8")
	for i := range 12 {
		p := dialUDP(t, srv.addr)
		p.send(encode(t, wire.Header{Type: wire.TypeHello, Seq: uint64(i)}, wire.HeaderLen))
		hs := p.answers(5*time.Second, 1)
		if len(hs) != 1 {
			t.Fatalf("hello %d: %d answers", i, len(hs))
		}
		if i < 8 {
			if hs[0].Type != wire.TypeCookie {
				t.Fatalf("hello %d: %+v, want a cookie", i, hs[0])
			}
			// Open the session and keep it.
			p.send(encode(t, wire.Header{Type: wire.TypeProbe, Token: hs[0].Token, Nonce: uint64(i), Seq: 1}, wire.HeaderLen))
			if hs := p.answers(5*time.Second, 1); len(hs) != 1 || hs[0].Type != wire.TypeReply {
				t.Fatalf("probe %d: %+v, want a reply", i, hs)
			}
			continue
		}
		if hs[0].Type != wire.TypeError || hs[0].Code != wire.ErrorSourceSessions {
			t.Fatalf("hello %d beyond the share: %+v, want %q", i, hs[0], wire.ErrorSourceSessions)
		}
	}
	r := volleyRun(t, "client", srv.addr, "-n", "5")
	if r.code == 0 || !strings.Contains(r.stderr, "too many sessions from your address") {
		t.Fatalf("client beyond the share: exit %d, stderr %q; want the reason", r.code, r.stderr)
	}
	if r := volleyRun(t, "client", srv.addr, "--bind", "127.0.0.2", "-n", "5"); r.code != 0 {
		t.Fatalf("client from another address: exit %d: %s", r.code, r.stderr)
	}
	stopWithin(t, srv, 5*time.Second)
}

// TestStalledGramPeer (point 1, Unix datagrams): a peer whose socket is
// full (it reads nothing) costs only its own replies: a legitimate client
// of the same socket loses nothing, and SIGTERM still stops the server.
func TestStalledGramPeer(t *testing.T) {
	dir, err := os.MkdirTemp("", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	gram := filepath.Join(dir, "g")
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--unixgram", gram)
	srv.waitFor(t, "listening on unixgram")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: fmt.Sprintf("@volley-stalled-%d", os.Getpid()), Net: "unixgram"})
	if err != nil {
		t.Skipf("skipping: no abstract Unix addresses here: %v", err)
	}
	defer c.Close()
	c.SetReadBuffer(4096)
	to := &net.UnixAddr{Name: gram, Net: "unixgram"}
	send := func(h wire.Header) {
		if _, err := c.WriteToUnix(encode(t, h, wire.HeaderLen), to); err != nil {
			t.Fatal(err)
		}
	}
	send(wire.Header{Type: wire.TypeHello, Seq: 7})
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := c.ReadFromUnix(buf)
	var cookie wire.Header
	if err != nil || cookie.Decode(buf[:n]) != nil || cookie.Type != wire.TypeCookie {
		t.Fatalf("answer to a Hello: %v %+v", err, cookie)
	}
	// Probes asking for 60000-byte replies, read by no one, through the
	// legitimate client's run.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(1); seq <= 20000; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			send(wire.Header{Type: wire.TypeProbe, Token: cookie.Token, Nonce: 7, Seq: seq, ReplySize: 60000})
			if seq%100 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	legit(t, "unixgram://"+gram, 200)
	close(stop)
	<-done
	stopWithin(t, srv, 5*time.Second)
	if out := srv.output(); !strings.Contains(out, "slow-reader") {
		t.Errorf("the server's totals count no slow-reader drops:\n%s", out)
	}
}
