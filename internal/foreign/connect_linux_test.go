package foreign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/testenv"
	"github.com/volley-net/volley/internal/wire"
)

// connectProbe returns the volley probe seq of the session token, sent at t1.
func connectProbe(token, seq uint64, t1 int64) []byte {
	b := make([]byte, wire.HeaderLen)
	h := wire.Header{Type: wire.TypeProbe, Token: token, Seq: seq, T1: t1}
	if err := h.Encode(b); err != nil {
		panic(err)
	}
	return b
}

// acceptingListener returns the address of a loopback TCP listener that accepts
// every connection and closes it, and counts what it accepted.
func acceptingListener(t testing.TB) (netip.AddrPort, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).AddrPort(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// closedTCPPort returns a loopback port that nothing listens on: a
// listener's, closed.
func closedTCPPort(t testing.TB) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	ln.Close()
	return addr
}

// rawTCPListener returns the address of a loopback listener of the given
// backlog that accepts nothing: the kernel completes handshakes for it
// until its accept queue holds more than backlog connections. Nothing in
// the test process runs for a connection (a Go listener allocates for
// each, which counts in AllocsPerRun).
func rawTCPListener(t testing.TB, backlog int) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
}

// fullTCPListener returns the address of a listener that takes no more
// handshakes: its backlog is 0 and one connection, never accepted, fills
// its queue, so the kernel drops the SYNs that come after (it counts
// them in ListenOverflows) and the handshakes never complete.
func fullTCPListener(t testing.TB) netip.AddrPort {
	t.Helper()
	addr := rawTCPListener(t, 0)
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return addr
}

// testConnect returns a Connect of cfg (TOS left to the system), closed
// when the test ends.
func testConnect(t testing.TB, cfg ConnectConfig) *Connect {
	t.Helper()
	cfg.Options.TOS = -1
	c, err := NewConnect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readReplies reads c in steps of 50ms until done says so, for at most 10s,
// and returns the replies read.
func readReplies(t *testing.T, c *Connect, done func(replies []wire.Header) bool) []wire.Header {
	t.Helper()
	var replies []wire.Header
	buf := make([]byte, 2048)
	for end := time.Now().Add(10 * time.Second); !done(replies); {
		if time.Now().After(end) {
			t.Fatalf("after 10s: %d replies, peer %+v", len(replies), *c.PeerResults().Connect)
		}
		if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		var h wire.Header
		if err := h.Decode(buf[:n]); err != nil || n != wire.HeaderLen {
			t.Fatalf("Read gave %d bytes %x: %v", n, buf[:n], err)
		}
		replies = append(replies, h)
	}
	return replies
}

// TestConnectCompletes: handshakes with a listener come back as replies
// to their probes: same token, sequence number and T1, no T2 or T3.
func TestConnectCompletes(t *testing.T) {
	addr, accepted := acceptingListener(t)
	c := testConnect(t, ConnectConfig{Addr: addr})
	const token, probes = 0x5eed, 20
	for seq := uint64(1); seq <= probes; seq++ {
		if n, err := c.Write(connectProbe(token, seq, int64(1000+seq))); err != nil || n != wire.HeaderLen {
			t.Fatalf("Write(probe %d) = %d, %v", seq, n, err)
		}
	}
	replies := readReplies(t, c, func(r []wire.Header) bool { return len(r) == probes })
	seen := map[uint64]bool{}
	for _, h := range replies {
		if h.Type != wire.TypeReply || h.Token != token || h.T1 != int64(1000+h.Seq) || h.T2 != 0 || h.T3 != 0 || seen[h.Seq] {
			t.Fatalf("reply %+v: want a Reply of token %#x, T1 1000+seq, T2 and T3 0, once", h, token)
		}
		seen[h.Seq] = true
	}
	if p := *c.PeerResults().Connect; p.Refused+p.TimedOut+p.Failed != 0 {
		t.Fatalf("Peer().Connect = %+v, want all 0", p)
	}
	c.Close()
	for end := time.Now().Add(10 * time.Second); accepted() < probes && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := accepted(); n != probes {
		t.Fatalf("the listener accepted %d connections, want %d", n, probes)
	}
}

// TestConnectRefused: a closed port refuses every handshake: counted
// Refused, no reply.
func TestConnectRefused(t *testing.T) {
	c := testConnect(t, ConnectConfig{Addr: closedTCPPort(t)})
	const probes = 5
	for seq := uint64(1); seq <= probes; seq++ {
		if _, err := c.Write(connectProbe(1, seq, 1)); err != nil {
			t.Fatalf("Write(probe %d): %v", seq, err)
		}
	}
	replies := readReplies(t, c, func(r []wire.Header) bool { return len(r) > 0 || c.refused.Load() == probes })
	if len(replies) > 0 {
		t.Fatalf("a closed port gave replies %+v", replies)
	}
	if p := *c.PeerResults().Connect; p.Refused != probes || p.TimedOut+p.Failed != 0 {
		t.Fatalf("Peer().Connect = %+v, want %d refused", p, probes)
	}
}

// TestConnectRunTimedOut: a run whose handshakes all go unanswered loses
// every probe, and counts every one timed out, the last included (the
// client declared it lost a moment before the adapter's own clock said
// so).
func TestConnectRunTimedOut(t *testing.T) {
	c := testConnect(t, ConnectConfig{Addr: fullTCPListener(t), Timeout: 300 * time.Millisecond})
	res, err := client.Run(context.Background(), client.Config{Count: 4, Timeout: 300 * time.Millisecond}, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	p := res.PeerResults.Connect
	if c := res.Summary.Counts; c.Lost != 4 || p.TimedOut != c.Lost || p.Refused+p.Failed != 0 {
		t.Fatalf("lost %d, peer %+v: want 4 lost, each timed out", c.Lost, *p)
	}
}

// TestConnectTimesOut: handshakes that get no SYN-ACK are closed after
// the timeout and counted TimedOut, with no reply.
func TestConnectTimesOut(t *testing.T) {
	c := testConnect(t, ConnectConfig{Addr: fullTCPListener(t), Timeout: 100 * time.Millisecond})
	const probes = 3
	for seq := uint64(1); seq <= probes; seq++ {
		if _, err := c.Write(connectProbe(1, seq, 1)); err != nil {
			t.Fatalf("Write(probe %d): %v", seq, err)
		}
	}
	replies := readReplies(t, c, func(r []wire.Header) bool { return len(r) > 0 || c.timedOut.Load() == probes })
	if len(replies) > 0 {
		t.Fatalf("a full listener gave replies %+v", replies)
	}
	if p := *c.PeerResults().Connect; p.TimedOut != probes || p.Refused+p.Failed != 0 {
		t.Fatalf("Peer().Connect = %+v, want %d timed out", p, probes)
	}
	if n := c.sys.table.open(); n != 0 {
		t.Fatalf("%d handshakes still open after they timed out", n)
	}
}

// TestConnectMaxOpen: a probe past MaxOpen open handshakes fails with
// ErrTooManyOpen, and sends nothing.
func TestConnectMaxOpen(t *testing.T) {
	c := testConnect(t, ConnectConfig{Addr: fullTCPListener(t), Timeout: time.Minute, MaxOpen: 2})
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := c.Write(connectProbe(1, seq, 1)); err != nil {
			t.Fatalf("Write(probe %d): %v", seq, err)
		}
	}
	if _, err := c.Write(connectProbe(1, 3, 1)); !errors.Is(err, ErrTooManyOpen) {
		t.Fatalf("Write(probe 3) with 2 open of 2 = %v, want ErrTooManyOpen", err)
	}
	if _, err := c.Write(make([]byte, 10)); !errors.Is(err, wire.ErrShort) {
		t.Fatalf("Write(10 bytes) = %v, want wire.ErrShort", err)
	}
}

// TestConnectDeadlines: a deadline in the past ends a read at once; Close
// ends one that waits for ever, with net.ErrClosed.
func TestConnectDeadlines(t *testing.T) {
	c := testConnect(t, ConnectConfig{Addr: fullTCPListener(t)})
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, wire.HeaderLen)
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(connectProbe(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		_, err := c.Read(buf)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it wait (it returns the same if not)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-got; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read waiting at Close = %v, want net.ErrClosed", err)
	}
	if _, err := c.Write(connectProbe(1, 2, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v, want net.ErrClosed", err)
	}
}

// countFDs counts the process's open file descriptors.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("skipping: no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestConnectCloseReleases: Close closes every socket it opened, those of
// handshakes in flight too, and its epoll set.
func TestConnectCloseReleases(t *testing.T) {
	done := rawTCPListener(t, 64) // a Go listener's accepted sockets would count
	stuck := fullTCPListener(t)
	before := countFDs(t)
	for range 2 {
		a := testConnect(t, ConnectConfig{Addr: done})
		b := testConnect(t, ConnectConfig{Addr: stuck, Timeout: time.Minute})
		for seq := uint64(1); seq <= 5; seq++ {
			if _, err := a.Write(connectProbe(1, seq, 1)); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write(connectProbe(1, seq, 1)); err != nil {
				t.Fatal(err)
			}
		}
		readReplies(t, a, func(r []wire.Header) bool { return len(r) == 5 })
		if n := countFDs(t); n < before+5 {
			t.Fatalf("%d descriptors open with 5 handshakes in flight, want at least %d", n, before+5)
		}
		a.Close()
		b.Close()
		if n := countFDs(t); n != before {
			t.Fatalf("%d descriptors open after Close, want %d as before", n, before)
		}
	}
}

// TestConnectConcurrent: one goroutine writes probes while another reads
// the replies and a third asks for Peer, as an open-loop run does (go
// test -race checks it).
func TestConnectConcurrent(t *testing.T) {
	addr, _ := acceptingListener(t)
	c := testConnect(t, ConnectConfig{Addr: addr})
	const probes = 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := uint64(1); seq <= probes; seq++ {
			if _, err := c.Write(connectProbe(1, seq, 1)); err != nil {
				t.Errorf("Write(probe %d): %v", seq, err)
				return
			}
			c.Peer()
		}
	})
	replies := readReplies(t, c, func(r []wire.Header) bool { return len(r) == probes })
	wg.Wait()
	if len(replies) != probes {
		t.Fatalf("%d replies, want %d", len(replies), probes)
	}
}

// TestConnectAllocs: a probe's handshake and its reply allocate nothing.
func TestConnectAllocs(t *testing.T) {
	const runs = 200
	c := testConnect(t, ConnectConfig{Addr: rawTCPListener(t, 2*runs), Options: sockopt.Options{TTL: 64}})
	msg := make([]byte, wire.HeaderLen)
	h := wire.Header{Type: wire.TypeProbe, Token: 1, T1: 1}
	buf := make([]byte, 2048)
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	allocs := testing.AllocsPerRun(runs, func() {
		seq++
		h.Seq = seq
		_ = h.Encode(msg)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Write+Read allocate %.1f times, want 0", allocs)
	}
}

// sourcesListener returns a loopback listener on network and address, and the
// addresses of the connections it accepts, as they come.
func sourcesListener(t *testing.T, network, address string) (netip.AddrPort, <-chan netip.AddrPort) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		if network == "tcp6" {
			testenv.Require(t, "ipv6", fmt.Errorf("no IPv6 loopback: %w", err))
		}
		t.Fatal(err)
	}
	from := make(chan netip.AddrPort, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			from <- c.RemoteAddr().(*net.TCPAddr).AddrPort()
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).AddrPort(), from
}

// TestConnectBind: --bind's address is the handshakes' source, with a
// port of the kernel's or the one given; and IPv6 works as IPv4 does.
func TestConnectBind(t *testing.T) {
	free := closedTCPPort(t).Port()
	for _, tc := range []struct {
		name, network, listen, bind string
	}{
		{"address", "tcp4", "127.0.0.1:0", "127.0.0.2:0"},
		{"port", "tcp4", "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", free)},
		{"ipv6", "tcp6", "[::1]:0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, from := sourcesListener(t, tc.network, tc.listen)
			cfg := ConnectConfig{Addr: addr}
			if tc.bind != "" {
				cfg.Local = netip.MustParseAddrPort(tc.bind)
			}
			c := testConnect(t, cfg)
			if _, err := c.Write(connectProbe(1, 1, 1)); err != nil {
				t.Fatal(err)
			}
			replies := readReplies(t, c, func(r []wire.Header) bool { return len(r) == 1 })
			src := <-from
			switch {
			case replies[0].Seq != 1:
				t.Fatalf("reply %+v, want seq 1", replies[0])
			case cfg.Local.Addr().IsValid() && src.Addr() != cfg.Local.Addr():
				t.Fatalf("connection from %s, want from %s", src, cfg.Local.Addr())
			case cfg.Local.Port() != 0 && src.Port() != cfg.Local.Port():
				t.Fatalf("connection from %s, want from port %d", src, cfg.Local.Port())
			case !cfg.Local.Addr().IsValid() && src.Addr() != addr.Addr():
				t.Fatalf("connection from %s, want from %s", src, addr.Addr())
			}
			if la := c.LocalAddr().String(); tc.bind != "" && la != tc.bind {
				t.Fatalf("LocalAddr() = %s, want %s", la, tc.bind)
			}
		})
	}
}
