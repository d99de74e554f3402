package foreign

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestTableExpiry: the handshakeTable gives back handshakes by reference, expires
// the oldest first and only once its timeout passed, skips those that
// ended, and bounds what is open.
func TestTableExpiry(t *testing.T) {
	const timeout = 100
	tb := newHandshakeTable(3)
	a, _ := tb.add(handshake{fd: 10, seq: 1, start: 0})
	b, _ := tb.add(handshake{fd: 11, seq: 2, start: 10})
	c, _ := tb.add(handshake{fd: 12, seq: 3, start: 20})
	if _, ok := tb.add(handshake{fd: 13, seq: 4, start: 30}); ok || !tb.full() {
		t.Fatalf("add to a handshakeTable of 3 holding 3: ok, want refused")
	}
	if h, ok := tb.expired(99, timeout); ok {
		t.Fatalf("expired(99) = %+v, want none (the oldest started at 0)", h)
	}
	if h, ok := tb.take(b); !ok || h.seq != 2 || h.fd != 11 {
		t.Fatalf("take(b) = %+v, %v, want seq 2 fd 11", h, ok)
	}
	if _, ok := tb.take(b); ok {
		t.Fatalf("take(b) again: ok, want gone")
	}
	if h, ok := tb.expired(100, timeout); !ok || h.seq != 1 {
		t.Fatalf("expired(100) = %+v, %v, want seq 1", h, ok)
	}
	if _, ok := tb.take(a); ok {
		t.Fatalf("take(a) after it expired: ok, want gone")
	}
	// b ended: the next to expire is c, at 120.
	if h, ok := tb.expired(119, timeout); ok {
		t.Fatalf("expired(119) = %+v, want none", h)
	}
	d, _ := tb.add(handshake{fd: 13, seq: 4, start: 115}) // a's slot again
	if d.idx != a.idx || d.gen == a.gen {
		t.Fatalf("add after a expired = %+v, want a's slot %d with a new generation (a: %+v)", d, a.idx, a)
	}
	if _, ok := tb.take(a); ok {
		t.Fatalf("take(a) with its slot reused: ok, want gone")
	}
	if h, ok := tb.expired(300, timeout); !ok || h.seq != 3 {
		t.Fatalf("expired(300) = %+v, %v, want seq 3", h, ok)
	}
	if _, ok := tb.take(c); ok {
		t.Fatalf("take(c) after it expired: ok, want gone")
	}
	if h, ok := tb.expired(300, timeout); !ok || h.seq != 4 {
		t.Fatalf("expired(300) again = %+v, %v, want seq 4", h, ok)
	}
	if h, ok := tb.expired(300, timeout); ok {
		t.Fatalf("expired(300) of an empty handshakeTable = %+v, want none", h)
	}
	if n := tb.open(); n != 0 {
		t.Fatalf("open() = %d, want 0", n)
	}
}

// TestTableCompacts: many handshakes that end out of order, with an old
// one open all along, neither fill the order ring nor lose the old one.
func TestTableCompacts(t *testing.T) {
	const timeout = 1000
	tb := newHandshakeTable(4)
	old, _ := tb.add(handshake{fd: 1, seq: 1, start: 0})
	for i := range 100 {
		r, ok := tb.add(handshake{fd: 100 + i, seq: uint64(2 + i), start: int64(1 + i)})
		if !ok {
			t.Fatalf("add %d with 2 open in a handshakeTable of 4: refused", i)
		}
		if h, ok := tb.take(r); !ok || h.fd != 100+i {
			t.Fatalf("take %d = %+v, %v", i, h, ok)
		}
	}
	if n := tb.open(); n != 1 {
		t.Fatalf("open() = %d, want 1", n)
	}
	if h, ok := tb.expired(timeout, timeout); !ok || h.seq != 1 {
		t.Fatalf("expired(%d) = %+v, %v, want the old one", timeout, h, ok)
	}
	if _, ok := tb.take(old); ok {
		t.Fatal("take(old) after it expired: ok, want gone")
	}
}

// TestTableDrain: drain gives every open handshake once.
func TestTableDrain(t *testing.T) {
	tb := newHandshakeTable(3)
	for i := range 3 {
		tb.add(handshake{fd: i})
	}
	r, _ := tb.take(handshakeRef{idx: 1, gen: 1}) // the second added: slots are taken from 0 up
	seen := map[int]bool{}
	for {
		h, ok := tb.drain()
		if !ok {
			break
		}
		seen[h.fd] = true
	}
	if len(seen) != 2 || seen[r.fd] {
		t.Fatalf("drained %v, want the 2 open (not fd %d)", seen, r.fd)
	}
}

// TestNewConnectErrors: a config it cannot use is refused with what is
// wrong.
func TestNewConnectErrors(t *testing.T) {
	v4 := netip.MustParseAddrPort("127.0.0.1:80")
	for _, tc := range []struct {
		name string
		cfg  ConnectConfig
		want string
	}{
		{"no address", ConnectConfig{}, "no address"},
		{"no port", ConnectConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0")}, "no port"},
		{"unspecified", ConnectConfig{Addr: netip.MustParseAddrPort("0.0.0.0:80")}, "not an address"},
		{"families", ConnectConfig{Addr: v4, Local: netip.MustParseAddrPort("[::1]:0")}, "different IP versions"},
		{"timeout", ConnectConfig{Addr: v4, Timeout: -time.Second}, "negative"},
		{"max open", ConnectConfig{Addr: v4, MaxOpen: -1}, "want 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewConnect(tc.cfg)
			if err == nil {
				c.Close()
				t.Fatalf("NewConnect(%+v) = nil error, want %q", tc.cfg, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("NewConnect(%+v) = %v, want %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// TestConnectAddr: the target's network is "connect", so that the client
// takes it for neither a stream nor a datagram socket.
func TestConnectAddr(t *testing.T) {
	a := connectAddr(netip.MustParseAddrPort("[::1]:443"))
	if a.Network() != "connect" || a.String() != "[::1]:443" {
		t.Fatalf("connectAddr = %s %s, want connect [::1]:443", a.Network(), a.String())
	}
}
