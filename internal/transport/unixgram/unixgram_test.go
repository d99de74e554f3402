package unixgram

import (
	"errors"
	"fmt"
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
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprint("blocking=", blocking), func(t *testing.T) { testPeerTableBound(t, blocking) })
	}
}

func testPeerTableBound(t *testing.T, blocking bool) {
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
	if blocking {
		if err := l.SetBlockingReads(true); err != nil {
			t.Skipf("skipping: %v", err)
		}
	}
	l.max = 8
	buf := make([]byte, 64)
	type client struct {
		c    *Conn
		from netip.AddrPort
	}
	var last *client
	for i := range 3 * l.max {
		c, err := Dial(filepath.Join(dir, "g"))
		if err != nil {
			t.Skipf("skipping: no abstract Unix addresses here: %v", err)
		}
		if blocking {
			if err := c.SetBlockingReads(true); err != nil {
				t.Fatal(err)
			}
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

// TestBlockingEnds: a blocking read on either side ends at its deadline,
// at a deadline another goroutine moves into the past, and at Close.
func TestBlockingEnds(t *testing.T) {
	l, c := pair(t)
	if err := l.SetBlockingReads(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if err := c.SetBlockingReads(true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	l.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := l.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocking ReadFrom on a quiet socket = %v, want the deadline", err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocking Read on a quiet socket = %v, want the deadline", err)
	}
	for _, end := range []struct {
		name string
		read func() error
		do   func()
	}{
		{"client interrupted", func() error { _, err := c.Read(buf); return err }, func() { c.SetReadDeadline(time.Unix(1, 0)) }},
		{"reflector interrupted", func() error { _, _, err := l.ReadFrom(buf); return err }, func() { l.SetReadDeadline(time.Unix(1, 0)) }},
		{"client closed", func() error { _, err := c.Read(buf); return err }, func() { c.Close() }},
		{"reflector closed", func() error { _, _, err := l.ReadFrom(buf); return err }, func() { l.Close() }},
	} {
		c.SetReadDeadline(time.Time{})
		l.SetReadDeadline(time.Time{})
		done := make(chan error, 1)
		go func() { done <- end.read() }()
		time.Sleep(50 * time.Millisecond) // let it block
		end.do()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: the blocked read returned no error", end.name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the blocked read did not return", end.name)
		}
	}
}

// TestBlockingMoves: a listener moved into the kernel and back again and
// again (a reflector does at each busy spell) keeps one reader, whose
// poller entry was read once, and reads in both places.
func TestBlockingMoves(t *testing.T) {
	l, c := pair(t)
	buf := make([]byte, 64)
	var first *blockReader
	for i := range 4 {
		if err := l.SetBlockingReads(true); err != nil {
			t.Skipf("skipping: %v", err)
		}
		if first == nil {
			first = l.reader
		}
		if l.block.Load() != first {
			t.Fatalf("move %d: a new reader (its poller entry read again)", i)
		}
		for _, where := range []string{"kernel", "poller"} {
			l.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			if n, _, err := l.ReadFrom(buf); n != 1 || err != nil || buf[0] != byte(i) {
				t.Fatalf("move %d, in the %s: ReadFrom = %d, %v", i, where, n, err)
			}
			if err := l.SetBlockingReads(false); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pair returns a listener in a temporary directory and a client dialled
// to it, both closed when the test ends; it skips where Unix datagram
// sockets are not.
func pair(t *testing.T) (*PacketConn, *Conn) {
	t.Helper()
	dir := t.TempDir()
	l, err := Listen(filepath.Join(dir, "g"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := Dial(filepath.Join(dir, "g"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return l, c
}
