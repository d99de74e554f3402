package foreign_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/foreign"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// An Echo is what the client takes as a foreign peer.
var _ client.Foreign = (*foreign.Echo)(nil)

// mirror is a connection to an echo service in memory: what is written
// is read back, once, from one slot (no allocation).
type mirror struct {
	buf  [2048]byte
	n    int
	full bool
}

func (m *mirror) Write(b []byte) (int, error) {
	m.n, m.full = copy(m.buf[:], b), true
	return len(b), nil
}

func (m *mirror) Read(b []byte) (int, error) {
	if !m.full {
		return 0, errors.New("mirror: nothing to read")
	}
	m.full = false
	return copy(b, m.buf[:m.n]), nil
}

func (m *mirror) SetReadDeadline(time.Time) error { return nil }
func (m *mirror) LocalAddr() net.Addr             { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (m *mirror) RemoteAddr() net.Addr            { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7} }
func (m *mirror) Close() error                    { return nil }

// probe returns a probe of size bytes of the session token, as the client
// sends it.
func probe(token, seq uint64, t1 int64, flags wire.Flags, size int) []byte {
	b := make([]byte, size)
	h := wire.Header{Type: wire.TypeProbe, Flags: flags, Token: token, Seq: seq, T1: t1, Nonce: 99, ReplySize: uint32(size)}
	if err := h.Encode(b); err != nil {
		panic(err)
	}
	for i := wire.HeaderLen; i < size; i++ {
		b[i] = byte(i)
	}
	return b
}

// TestEchoReply: an echoed probe is read as the reply to it, with its
// Token, Seq and T1, no times and no count of the service's own, its
// padding untouched, and only the warm-up flag kept.
func TestEchoReply(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags wire.Flags
		size  int
		want  wire.Flags
	}{
		{"plain", 0, 64, 0},
		{"warm-up", wire.FlagWarmup, 100, wire.FlagWarmup},
		{"asks for stamps and path", wire.FlagStamps | wire.FlagPath | wire.FlagNoQuickAck, 1200, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := foreign.NewEcho(&mirror{})
			p := probe(0xfeed, 7, 123456789, tt.flags, tt.size)
			if n, err := e.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v, want %d, nil", n, err, len(p))
			}
			b := make([]byte, 2048)
			n, err := e.Read(b)
			if err != nil || n != tt.size {
				t.Fatalf("Read = %d, %v, want %d, nil", n, err, tt.size)
			}
			var h wire.Header
			if err := h.Decode(b[:n]); err != nil {
				t.Fatal(err)
			}
			want := wire.Header{Type: wire.TypeReply, Flags: tt.want, Token: 0xfeed, Seq: 7, T1: 123456789}
			if h != want {
				t.Errorf("Read decodes to %+v, want %+v", h, want)
			}
			if !bytes.Equal(b[wire.HeaderLen:n], p[wire.HeaderLen:]) {
				t.Errorf("padding changed: %x, want %x", b[wire.HeaderLen:n], p[wire.HeaderLen:])
			}
		})
	}
}

// TestEchoNotAProbe: what comes back that is not a probe of this run is
// read as an empty message (an error to the client), and the adapter
// goes on.
func TestEchoNotAProbe(t *testing.T) {
	reply := make([]byte, 64)
	(&wire.Header{Type: wire.TypeReply, Token: 0xfeed, Seq: 1}).Encode(reply)
	hello := make([]byte, 64)
	(&wire.Header{Type: wire.TypeHello, Seq: 5}).Encode(hello)
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"garbage", []byte("not volley at all, longer than nothing but shorter than a header")},
		{"short", []byte{0x56, 0x4c}},
		{"a reply", reply},
		{"a hello", hello},
		{"another run's probe", probe(0xbeef, 1, 1, 0, 64)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &mirror{}
			e := foreign.NewEcho(m)
			if _, err := e.Write(probe(0xfeed, 1, 1, 0, 64)); err != nil {
				t.Fatal(err)
			}
			m.Write(tt.in) // what the service sent back instead
			b := make([]byte, 2048)
			if n, err := e.Read(b); n != 0 || err != nil {
				t.Errorf("Read(%q) = %d, %v, want 0, nil", tt.in, n, err)
			}
		})
	}
	// Before any probe was written, nothing is this run's.
	m := &mirror{}
	e := foreign.NewEcho(m)
	m.Write(probe(0, 1, 1, 0, 64))
	if n, err := e.Read(make([]byte, 128)); n != 0 || err != nil {
		t.Errorf("Read before any Write = %d, %v, want 0, nil", n, err)
	}
}

// TestEchoPeer: the round trip only, and why.
func TestEchoPeer(t *testing.T) {
	e := foreign.NewEcho(&mirror{})
	p := e.Peer()
	if p.Protocol != "echo" || p.OneWay || p.Directions || p.STAMP != nil {
		t.Errorf("Peer() = %+v, want the echo protocol, no one-way times, no directions", p)
	}
	if said := e.PeerResults(); said.Note != foreign.EchoNote || said.STAMP != nil || said.Connect != nil {
		t.Errorf("PeerResults() = %+v, want the note alone", said)
	}
	p.Protocol = "changed"
	if q := foreign.NewEcho(&mirror{}).Peer(); q.Protocol != "echo" {
		t.Errorf("a Peer changed by its caller changed the adapter's: %q", q.Protocol)
	}
}

// TestEchoAllocs: a probe's round trip through the adapter allocates
// nothing.
func TestEchoAllocs(t *testing.T) {
	e := foreign.NewEcho(&mirror{})
	p := probe(0xfeed, 1, 1, 0, 64)
	b := make([]byte, 2048)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := e.Write(p); err != nil {
			t.Fatal(err)
		}
		if n, err := e.Read(b); n != len(p) || err != nil {
			t.Fatalf("Read = %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per probe, want 0", allocs)
	}
}

// echoServer is an RFC 862 service on 127.0.0.1 for the test: it returns
// every datagram to its sender until the test ends.
func echoServer(t *testing.T) *net.UDPAddr {
	t.Helper()
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 65536)
		for {
			n, from, err := l.ReadFromUDPAddrPort(b)
			if err != nil {
				return // closed
			}
			l.WriteToUDPAddrPort(b[:n], from)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return l.LocalAddr().(*net.UDPAddr)
}

// TestEchoRun: a client run against an echo service on loopback gets
// every probe back and records the round trip, and nothing it cannot
// know: no up, down or response, no loss or duplicates by direction.
func TestEchoRun(t *testing.T) {
	addr := echoServer(t)
	ctx := context.Background()
	conn, err := transport.Dial(ctx, transport.Target{Scheme: "echo", Host: "127.0.0.1", Port: addr.Port})
	if err != nil {
		t.Fatal(err)
	}
	e := foreign.NewEcho(conn)
	defer e.Close()
	res, err := client.Run(ctx, client.Config{Count: 50, Size: 100, Window: 4, Timeout: 2 * time.Second, ReportInterval: -1}, e)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Summary.Counts
	if c.Sent != 50 || c.Received != 50 || c.Errors != 0 {
		t.Errorf("sent %d, received %d, errors %d, want 50, 50, 0", c.Sent, c.Received, c.Errors)
	}
	if res.Summary.RTT.Count != 50 || res.Summary.Up.Count != 0 || res.Summary.Down.Count != 0 || res.Summary.Response.Count != 0 {
		t.Errorf("rtt %d, up %d, down %d, response %d values, want 50, 0, 0, 0",
			res.Summary.RTT.Count, res.Summary.Up.Count, res.Summary.Down.Count, res.Summary.Response.Count)
	}
	if p := res.Config.Peer; p == nil || p.Protocol != "echo" || p.Directions || p.OneWay {
		t.Errorf("Config.Peer = %+v, want the echo peer", p)
	}
}

// TestEchoRunKey: a volley key means nothing to an echo service.
func TestEchoRunKey(t *testing.T) {
	_, err := client.Run(context.Background(), client.Config{Count: 1, Key: []byte("secret"), ReportInterval: -1}, foreign.NewEcho(&mirror{}))
	if !errors.Is(err, client.ErrForeignKey) {
		t.Errorf("Run with a key = %v, want %v", err, client.ErrForeignKey)
	}
}
