package quota

import (
	"net/netip"
	"testing"
)

var (
	a = Source(netip.MustParseAddrPort("192.0.2.1:1"))
	b = Source(netip.MustParseAddrPort("[2001:db8::1]:2"))
)

func TestSource(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"192.0.2.1:80", "192.0.2.1/32"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1/32"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::/64"},
		{"[fd76:6c00:0:3e8::7]:0", "fd76:6c00:0:3e8::/64"}, // a Unix peer of user 1000
	} {
		if got := Source(netip.MustParseAddrPort(tt.addr)).String(); got != tt.want {
			t.Errorf("Source(%s) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}

func TestCounter(t *testing.T) {
	c := NewCounter(3, 2)
	for i, tt := range []struct {
		src  netip.Prefix
		want Refusal
	}{{a, OK}, {a, OK}, {a, PerSource}, {b, OK}, {b, Total}} {
		if got := c.Take(tt.src); got != tt.want {
			t.Fatalf("Take %d (%s) = %v, want %v", i, tt.src, got, tt.want)
		}
	}
	c.Give(a)
	if got := c.Take(b); got != OK || c.Of(a) != 1 || c.Of(b) != 2 {
		t.Fatalf("after a gave one back: Take(b) = %v, a holds %d, b %d; want OK, 1, 2", got, c.Of(a), c.Of(b))
	}
}

func TestMemory(t *testing.T) {
	m := NewMemory(100, 60)
	if m.Take(a, 50) != OK || m.Take(a, 20) != PerSource || m.Take(b, 51) != Total || m.Take(b, 40) != OK {
		t.Fatal("takes within and beyond the limits answered wrong")
	}
	if now, peak := m.Used(); now != 90 || peak != 90 {
		t.Fatalf("Used = %d, %d; want 90, 90", now, peak)
	}
	m.Give(a, 50)
	if now, peak := m.Used(); now != 40 || peak != 90 {
		t.Fatalf("Used after a gave back = %d, %d; want 40 and the peak 90", now, peak)
	}
	if now, peak := m.Used(); now != 40 || peak != 40 {
		t.Fatalf("Used again = %d, %d; the peak resets to now", now, peak)
	}
	var none *Memory
	if none.Take(a, 1<<40) != OK {
		t.Fatal("a nil budget refused")
	}
}
