package unixgram

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPeerTableBound: peers beyond the bound push out the one heard from
// least recently, so the table never grows past it, and the peers heard
// from lately can still be answered (on Linux, where clients bind
// abstract addresses).
func TestPeerTableBound(t *testing.T) {
	dir, err := os.MkdirTemp("", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := Listen(filepath.Join(dir, "g"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	defer l.Close()
	l.max = 8
	buf := make([]byte, 64)
	type client struct {
		c    *net.UnixConn
		from netip.AddrPort
	}
	var last *client
	for i := range 3 * l.max {
		c, err := Dial(filepath.Join(dir, "g"))
		if err != nil {
			t.Skipf("skipping: no abstract Unix addresses here: %v", err)
		}
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		l.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := l.ReadFrom(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("ReadFrom = %d %v %v, want peer %d's byte", n, buf[:n], err, i)
		}
		if got := len(l.peers); got > l.max || l.lru.Len() != got || len(l.ids) != got {
			t.Fatalf("after %d peers: %d peers, %d in the LRU, %d ids; want at most %d, all equal", i+1, got, l.lru.Len(), len(l.ids), l.max)
		}
		if last != nil {
			last.c.Close()
		}
		last = &client{c: c, from: from}
	}
	defer last.c.Close()
	if _, err := l.WriteTo([]byte{42}, last.from); err != nil {
		t.Fatalf("WriteTo the latest peer = %v", err)
	}
	last.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := last.c.Read(buf); err != nil || n != 1 || buf[0] != 42 {
		t.Fatalf("the latest peer read %v, %v; want its answer", buf[:n], err)
	}
}
