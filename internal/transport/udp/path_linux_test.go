package udp

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/testenv"
)

// TestPath: a datagram sent with a TTL and a traffic class of its own
// arrives with both in its Path, over IPv4 and IPv6, at a listening and a
// connected socket.
func TestPath(t *testing.T) {
	for _, tc := range []struct {
		name, network, addr string
	}{
		{"ipv4", "udp4", "127.0.0.1:0"},
		{"ipv6", "udp6", "[::1]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(tc.addr)
			if err != nil && tc.name == "ipv6" {
				testenv.Require(t, "ipv6", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.EnablePath(); err != nil {
				t.Fatalf("EnablePath: %v", err)
			}
			c, err := DialWith(context.Background(), &net.Dialer{}, tc.network, l.LocalAddr().String(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.EnablePath(); err != nil {
				t.Fatalf("EnablePath (connected): %v", err)
			}
			const ttl, tclass = 17, 0xb9 // DSCP EF, ECN ECT(1)
			setPathOpts(t, c, tc.network, ttl, tclass)
			got := roundTrip(t, c, l)
			if !got.OK || got.TTL != ttl || got.TClass != tclass {
				t.Errorf("listener read path %+v, want TTL %d TClass %#x", got, ttl, tclass)
			}
			back := readReply(t, c, l)
			if !back.OK || back.TTL == 0 {
				t.Errorf("connected socket read path %+v, want one", back)
			}
		})
	}
}

// setPathOpts sets the TTL (hop limit) and traffic class c sends with.
func setPathOpts(t *testing.T, c *Conn, network string, ttl, tclass int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	rc.Control(func(fd uintptr) {
		if network == "udp6" {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tclass)
			}
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tclass)
		}
	})
	if serr != nil {
		t.Fatalf("set TTL and traffic class: %v", serr)
	}
}

// roundTrip sends a datagram from c to l and returns the path l read.
func roundTrip(t *testing.T, c *Conn, l *PacketConn) Path {
	t.Helper()
	if _, err := c.Write([]byte("path")); err != nil {
		t.Fatal(err)
	}
	l.SetReadDeadline(time.Now().Add(5 * time.Second))
	ms := []Message{{Buf: make([]byte, 64)}}
	if _, err := l.ReadBatch(ms); err != nil {
		t.Fatal(err)
	}
	if string(ms[0].Buf[:ms[0].N]) != "path" {
		t.Fatalf("read %q", ms[0].Buf[:ms[0].N])
	}
	return ms[0].Path
}

// readReply answers c from l and returns the path c read.
func readReply(t *testing.T, c *Conn, l *PacketConn) Path {
	t.Helper()
	if _, err := l.WriteTo([]byte("back"), c.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ms := []Message{{Buf: make([]byte, 64)}}
	if _, err := c.ReadBatch(ms); err != nil {
		t.Fatal(err)
	}
	return ms[0].Path
}

// TestPathNoAlloc: reading a datagram's path allocates nothing.
func TestPathNoAlloc(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.EnablePath(); err != nil {
		t.Fatal(err)
	}
	c, err := DialWith(context.Background(), &net.Dialer{}, "udp4", l.LocalAddr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms := []Message{{Buf: make([]byte, 64)}}
	msg := []byte("path")
	l.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got Path
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := l.ReadBatch(ms); err != nil {
			t.Fatal(err)
		}
		got = ms[0].Path
	})
	if allocs != 0 {
		t.Errorf("a write and a read with the path on allocate %v times, want 0", allocs)
	}
	if !got.OK {
		t.Errorf("last path read %+v, want one", got)
	}
}
