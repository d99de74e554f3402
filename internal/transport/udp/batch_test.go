package udp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testenv"
)

// echoBatches sends n datagrams from a client to p, reads them with
// ReadBatch, writes them back with WriteBatch, and checks what the client
// gets: every datagram, whole, in order.
func echoBatches(t *testing.T, p *PacketConn, network, host string, n int) {
	t.Helper()
	to := p.LocalAddr().(*net.UDPAddr)
	if host != "" {
		to = &net.UDPAddr{IP: net.ParseIP(host), Port: to.Port}
	}
	c, err := net.DialUDP(network, nil, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		if _, err := fmt.Fprintf(c, "datagram %04d %s", i, bytes.Repeat([]byte{'x'}, i)); err != nil {
			t.Fatal(err)
		}
	}
	ms := make([]Message, MaxBatch)
	for i := range ms {
		ms[i].Buf = make([]byte, 2048)
	}
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	for got < n {
		k, err := p.ReadBatch(ms)
		if err != nil {
			t.Fatalf("ReadBatch after %d: %v", got, err)
		}
		for i := range k {
			if want := c.LocalAddr().(*net.UDPAddr).AddrPort(); ms[i].Addr.Port() != want.Port() || ms[i].Addr.Addr().Unmap() != want.Addr().Unmap() {
				t.Fatalf("datagram from %v, want %v", ms[i].Addr, want)
			}
		}
		if w, err := p.WriteBatch(ms[:k]); err != nil || w != k {
			t.Fatalf("WriteBatch = %d, %v; want %d", w, err, k)
		}
		got += k
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	for i := range n {
		m, err := c.Read(buf)
		if err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if want := fmt.Sprintf("datagram %04d %s", i, bytes.Repeat([]byte{'x'}, i)); string(buf[:m]) != want {
			t.Fatalf("echo %d = %q, want %q", i, buf[:m], want)
		}
	}
}

func TestBatchEcho(t *testing.T) {
	for _, tt := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}, {"udp", ":0"}} {
		t.Run(tt.addr, func(t *testing.T) {
			p := listenOrSkip(t, tt.addr)
			network, host := tt.network, ""
			if network == "udp" {
				network, host = "udp4", "127.0.0.1" // an IPv4 client of a dual-stack socket
			}
			echoBatches(t, p, network, host, 200)
		})
	}
}

func TestBatchDeadline(t *testing.T) {
	p, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	ms := []Message{{Buf: make([]byte, 64)}}
	if n, err := p.ReadBatch(ms); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadBatch on a quiet socket = %d, %v; want the deadline", n, err)
	}
}

// TestBatchAllocs: reading and writing batches allocates nothing.
func TestBatchAllocs(t *testing.T) {
	p, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.DialUDP("udp4", nil, p.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf = make([]byte, 128)
	}
	msg := make([]byte, 64)
	buf := make([]byte, 128)
	p.SetReadDeadline(time.Now().Add(10 * time.Second))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	allocs := testing.AllocsPerRun(200, func() {
		for range 4 {
			c.Write(msg)
		}
		n, err := p.ReadBatch(ms)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteBatch(ms[:n]); err != nil {
			t.Fatal(err)
		}
		for range n {
			c.Read(buf)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round of batches, want 0", allocs)
	}
}

// TestConnBatch: the client's connected socket sends and receives batches.
func TestConnBatch(t *testing.T) {
	p, c := pair(t)
	const n = 150
	out := make([]Message, n)
	for i := range out {
		out[i].Buf = []byte(fmt.Sprintf("probe %03d", i))
		out[i].N = len(out[i].Buf)
	}
	if sent, err := c.WriteBatch(out); sent != n || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", sent, err, n)
	}
	in := make([]Message, MaxBatch)
	for i := range in {
		in[i].Buf = make([]byte, 64)
	}
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for got := 0; got < n; {
		k, err := p.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		if w, err := p.WriteBatch(in[:k]); w != k || err != nil {
			t.Fatalf("echo WriteBatch = %d, %v", w, err)
		}
		got += k
	}
	for got := 0; got < n; {
		k, err := c.ReadBatch(in)
		if err != nil {
			t.Fatalf("client ReadBatch after %d: %v", got, err)
		}
		for i := range k {
			if want := fmt.Sprintf("probe %03d", got+i); string(in[i].Buf[:in[i].N]) != want {
				t.Fatalf("reply %d = %q, want %q", got+i, in[i].Buf[:in[i].N], want)
			}
		}
		got += k
	}
}

// TestBusyPoll: spinning reads get what arrives and stop at the deadline.
func TestBusyPoll(t *testing.T) {
	p, c := pair(t)
	if err := p.SetBusyPoll(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBusyPoll(true); err != nil {
		t.Fatal(err)
	}
	p.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	ms := []Message{{Buf: make([]byte, 64)}}
	if n, err := p.ReadBatch(ms); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("busy ReadBatch on a quiet socket = %d, %v; want the deadline", n, err)
	}
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 100 {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if n, err := p.ReadBatch(ms); n != 1 || err != nil || ms[0].Buf[0] != byte(i) {
			t.Fatalf("busy ReadBatch = %d, %v, %v", n, err, ms[0].Buf[:1])
		}
		if _, err := p.WriteBatch(ms[:1]); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != byte(i) {
			t.Fatalf("busy Read = %d, %v", n, err)
		}
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("busy Read on a quiet socket = %v, want the deadline", err)
	}
}

// listenOrSkip listens on addr, closed when the test ends; without IPv6
// loopback an address on ::1 skips the test, unless VOLLEY_REQUIRE says
// ipv6 (or all).
func listenOrSkip(t *testing.T, addr string) *PacketConn {
	t.Helper()
	p, err := Listen(addr)
	if err != nil {
		if strings.Contains(addr, "::1") {
			testenv.Require(t, "ipv6", fmt.Errorf("no IPv6 loopback: %w", err))
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pair returns a reflector's socket on loopback and a client's connected
// to it, closed when the test ends.
func pair(t *testing.T) (*PacketConn, *Conn) {
	t.Helper()
	p, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := Dial(t.Context(), p.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}
