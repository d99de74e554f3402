package e2e

import (
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/result"
)

// TestPathLoopback: on loopback, --ecn ect1 with --tos 184 (EF) reaches
// the reflector as DSCP 46 and ECT(1), and no hop changes the TTL either
// way.
func TestPathLoopback(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--tcp=false")
	r := volleyRun(t, "client", srv.addr, "-n", "20", "--window", "2", "--ecn", "ect1", "--tos", "184", "--format", "json")
	if r.code != 0 {
		t.Fatalf("client exit %d: %s", r.code, r.stderr)
	}
	p := parseResult(t, r.stdout).Path
	if p == nil {
		t.Fatalf("no path in the result:\n%s", r.stdout)
	}
	want := result.PathMark{TTL: p.Sent.TTL, DSCP: 46, ECN: result.ECT1}
	if p.Sent != want || p.Up.First != want || p.Up.Last != want || p.Up.Hops != 0 || p.Up.Packets != 20 {
		t.Errorf("path up %+v, sent %+v; want %+v sent and seen by all 20, 0 hops", p.Up, p.Sent, want)
	}
	if p.Down.Packets != 20 || p.Down.Hops != 0 || !p.Down.InitialInferred {
		t.Errorf("path down %+v (%s); want all 20 seen, 0 hops from an inferred initial TTL", p.Down, p.DownNote)
	}
	if len(p.Events) != 0 {
		t.Errorf("events %+v on loopback, want none", p.Events)
	}
	text := volleyRun(t, "client", srv.addr, "-n", "20", "--window", "2", "--ecn", "ect1", "--tos", "184")
	if line := pathLine(text.stdout, "path up:"); !strings.Contains(line, "DSCP 46 (EF) kept, ECN ECT(1) kept") || !strings.Contains(line, "(0 hops)") {
		t.Errorf("text report's up line %q; want EF and ECT(1) kept, 0 hops\n%s", line, text.stdout)
	}
}

// pathLine returns the line of out that begins with prefix ("" if none).
func pathLine(out, prefix string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestPathVeth: between two network namespaces joined by a veth pair
// (made here, as root), a relay in the client's namespace rewrites the
// marks of one direction only (DSCP to AF11, ECN to not-ECT, one hop
// off the TTL), as a remarking router would: this kernel's tc has no
// classifier for pedit or skbedit to do it with. The report says which
// direction was remarked and bleached, and that the other was not; over
// IPv4 and IPv6. Up is rewritten from the first probe, which the report
// compares with what was sent; down from the 21st datagram (the Cookie
// the first), which the report shows as an event: the reflector's own
// marks are not known to the client, only their change.
func TestPathVeth(t *testing.T) {
	nsA, nsB := pathNamespaces(t)
	for _, fam := range []struct{ name, a, b, network string }{
		{"ipv4", "10.214.0.1", "10.214.0.2", "udp4"},
		{"ipv6", "fd14::1", "fd14::2", "udp6"},
	} {
		t.Run(fam.name, func(t *testing.T) {
			srv := startServerCmd(t, exec.Command("ip", "netns", "exec", nsB, volley, "server", "--listen", net.JoinHostPort(fam.b, "0"), "-q", "--tcp=false", "--tos", "186"))
			defer srv.stop(t, syscall.SIGINT)
			for _, dir := range []string{"up", "down"} {
				t.Run(dir, func(t *testing.T) {
					from := 0
					if dir == "down" {
						from = 20
					}
					relay := startMarkRelay(t, nsA, fam.network, fam.a, srv.addr, dir, from)
					r := volleyRunIn(t, nsA, "client", relay, "-n", "60", "--window", "2", "--tos", "184", "--ecn", "ect0", "-i", "0")
					if r.code != 0 {
						t.Fatalf("client exit %d: %s", r.code, r.stderr)
					}
					up, down := pathLine(r.stdout, "path up:"), pathLine(r.stdout, "path down:")
					t.Logf("%s\n%s\n%s", up, down, pathLine(r.stdout, "path event"))
					switch dir {
					case "up":
						if !strings.Contains(up, "DSCP 46 (EF) → 10 (AF11) (remarked), ECN ECT(0) → not-ECT (bleached), TTL 64 → 63 (1 hop)") {
							t.Errorf("up line %q: want it remarked, bleached and a hop down\n%s", up, r.stdout)
						}
						if !strings.Contains(down, "DSCP 46 (EF), ECN ECT(0), TTL 64 (0 hops from an initial 64, inferred); no change during the run") {
							t.Errorf("down line %q: want what the reflector sent, unchanged\n%s", down, r.stdout)
						}
					case "down":
						if !strings.Contains(up, "DSCP 46 (EF) kept, ECN ECT(0) kept, TTL 64 → 64 (0 hops); no change during the run") {
							t.Errorf("up line %q: want EF and ECT(0) kept, no change\n%s", up, r.stdout)
						}
						if !strings.Contains(down, "; 1 change during the run") {
							t.Errorf("down line %q: want one change\n%s", down, r.stdout)
						}
						ev := pathLine(r.stdout, "path event")
						if !strings.Contains(ev, "down: DSCP 46 (EF) → 10 (AF11) (remarked), ECN ECT(0) → not-ECT (bleached), TTL 64 → 63 (+1 hop)") {
							t.Errorf("event %q: want the down direction remarked and bleached\n%s", ev, r.stdout)
						}
					}
					if strings.Count(r.stdout, "path event") > 1 {
						t.Errorf("more than one path event:\n%s", r.stdout)
					}
				})
			}
		})
	}
}

// pathNamespaces makes two network namespaces joined by a veth pair, with
// 10.214.0.1 and fd14::1 in the first, 10.214.0.2 and fd14::2 in the
// second (see vethNamespaces).
func pathNamespaces(t *testing.T) (string, string) { return vethNamespaces(t, "vlp", 214) }

// startMarkRelay starts a UDP relay in namespace ns, on addr, to the
// reflector at server, and returns its address. It forwards each datagram
// with the marks it came with (traffic class, TTL or hop limit), except
// in direction dir ("up": probes, "down": replies) from the datagram
// numbered from on (from 0): those leave as DSCP 10 (AF11), not-ECT, with
// one hop less.
func startMarkRelay(t *testing.T, ns, network, addr, server, dir string, from int) string {
	t.Helper()
	front, back, err := socketsIn(ns, network, addr)
	if err != nil {
		t.Fatalf("relay sockets in %s: %v", ns, err)
	}
	to, err := net.ResolveUDPAddr(network, server)
	if err != nil {
		t.Fatal(err)
	}
	v6 := network == "udp6"
	for _, c := range []*net.UDPConn{front, back} {
		if err := recvMarks(c, v6); err != nil {
			t.Fatalf("relay: %v", err)
		}
	}
	var client atomic.Pointer[net.UDPAddr]
	var wg sync.WaitGroup
	forward := func(in, out *net.UDPConn, rewrite bool, dest func(*net.UDPAddr) *net.UDPAddr) {
		buf, oob := make([]byte, 65536), make([]byte, 256)
		for n := 0; ; n++ {
			k, oobn, _, src, err := in.ReadMsgUDP(buf, oob)
			if err != nil {
				return // closed
			}
			to := dest(src)
			if to == nil {
				continue
			}
			ttl, tclass := marksOf(oob[:oobn])
			if rewrite && n >= from {
				ttl, tclass = ttl-1, 10<<2
			}
			if _, _, err := out.WriteMsgUDP(buf[:k], marksCmsg(v6, ttl, tclass), to); err != nil {
				t.Errorf("relay: %v", err)
				return
			}
		}
	}
	wg.Go(func() {
		forward(front, back, dir == "up", func(src *net.UDPAddr) *net.UDPAddr {
			client.Store(src)
			return to
		})
	})
	wg.Go(func() {
		forward(back, front, dir == "down", func(*net.UDPAddr) *net.UDPAddr { return client.Load() })
	})
	t.Cleanup(func() {
		front.Close()
		back.Close()
		wg.Wait()
	})
	return front.LocalAddr().String()
}

// socketsIn opens two UDP sockets on addr in network namespace ns: from a
// thread of their own that enters ns and ends with its goroutine, so that
// no other goroutine runs in ns. A socket stays in the namespace it was
// made in.
func socketsIn(ns, network, addr string) (front, back *net.UDPConn, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, ferr := os.Open("/run/netns/" + ns)
		if ferr != nil {
			err = ferr
			return
		}
		defer f.Close()
		if err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			return
		}
		la := &net.UDPAddr{IP: net.ParseIP(addr)}
		if front, err = net.ListenUDP(network, la); err != nil {
			return
		}
		if back, err = net.ListenUDP(network, la); err != nil {
			front.Close()
		}
	}()
	<-done
	return front, back, err
}

// recvMarks has c's reads bring each datagram's traffic class and TTL.
func recvMarks(c *net.UDPConn, v6 bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	opts := [][2]int{{unix.IPPROTO_IP, unix.IP_RECVTOS}, {unix.IPPROTO_IP, unix.IP_RECVTTL}}
	if v6 {
		opts = [][2]int{{unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS}, {unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT}}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for _, o := range opts {
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), o[0], o[1], 1)
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// marksOf reads the TTL (hop limit) and traffic class in a datagram's
// control messages.
func marksOf(oob []byte) (ttl, tclass int) {
	msgs, _ := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		if len(m.Data) == 0 {
			continue
		}
		v := int(m.Data[0])
		if len(m.Data) >= 4 {
			v = int(int32(binary.NativeEndian.Uint32(m.Data)))
		}
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS:
			tclass = int(m.Data[0])
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL,
			m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT:
			ttl = v
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS:
			tclass = v
		}
	}
	return ttl, tclass
}

// marksCmsg is the control messages that send a datagram with ttl and
// tclass.
func marksCmsg(v6 bool, ttl, tclass int) []byte {
	level, tosType, ttlType := int32(unix.IPPROTO_IP), int32(unix.IP_TOS), int32(unix.IP_TTL)
	if v6 {
		level, tosType, ttlType = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, unix.IPV6_HOPLIMIT
	}
	return append(cmsgInt(level, tosType, tclass), cmsgInt(level, ttlType, ttl)...)
}

// cmsgInt is one control message carrying an int.
func cmsgInt(level, typ int32, v int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(v))
	return b
}
