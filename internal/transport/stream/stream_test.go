package stream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testsock"
)

// pipe returns the two framed ends of a TCP connection on loopback.
func pipe(t *testing.T) (*Conn, *Conn) { return pipeOn(t, "tcp") }

// pipeOn is pipe over network: "tcp", or "unix" (a socket in a temporary
// directory).
func pipeOn(t *testing.T, network string) (*Conn, *Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	a, err := Dial(network, ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b := <-done
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, NewConn(b)
}

// busyPipe is pipe with b busy-polling when busy.
func busyPipe(t *testing.T, busy bool) (*Conn, *Conn) {
	t.Helper()
	a, b := pipe(t)
	if err := b.SetBusyPoll(busy); err != nil {
		t.Skipf("skipping: %v", err)
	}
	return a, b
}

// readModes are the ways a Conn reads: in the poller, spinning, and
// waiting in the kernel.
var readModes = []string{"poller", "busy", "blocking", "blocking unix"}

// modePipe is pipe with b reading as mode says.
func modePipe(t *testing.T, mode string) (*Conn, *Conn) {
	t.Helper()
	network, blocking := "tcp", mode == "blocking"
	if mode == "blocking unix" {
		// A Unix stream socket's reads wait in ppoll, not in read.
		network, blocking = "unix", true
	}
	if !blocking {
		return busyPipe(t, mode == "busy")
	}
	a, b := pipeOn(t, network)
	if err := b.SetBlockingReads(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	return a, b
}

func TestFraming(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode, func(t *testing.T) { testFraming(t, mode) })
	}
}

func testFraming(t *testing.T, mode string) {
	a, b := modePipe(t, mode)
	sizes := []int{64, 100, 1, 70000, 512 << 10}
	go func() {
		for i, n := range sizes {
			a.Write(bytes.Repeat([]byte{byte('a' + i)}, n))
		}
	}()
	buf := make([]byte, MaxMessage)
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, n := range sizes {
		got, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got != n || buf[0] != byte('a'+i) || buf[n-1] != byte('a'+i) {
			t.Fatalf("message %d: %d bytes starting %q, want %d of %q", i, got, buf[0], n, byte('a'+i))
		}
	}
}

// TestReadAcrossDeadline: a message cut by the read deadline is finished
// by the next Read, and the framing holds.
func TestReadAcrossDeadline(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode, func(t *testing.T) { testReadAcrossDeadline(t, mode) })
	}
}

func testReadAcrossDeadline(t *testing.T, mode string) {
	a, b := modePipe(t, mode)
	msg := bytes.Repeat([]byte("0123456789"), 100)
	frame := append([]byte{0, 0, 0x03, 0xe8}, msg...) // 1000 bytes
	a.Conn.Write(frame[:3])                           // part of the header
	buf := make([]byte, 2000)
	b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := b.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of a partial header = %v, want the deadline", err)
	}
	a.Conn.Write(frame[3:400]) // the rest of the header, part of the body
	b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := b.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of a partial body = %v, want the deadline", err)
	}
	a.Conn.Write(frame[400:])
	a.Write([]byte("next"))
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	other := make([]byte, 2000) // a different buffer: the part read before is kept
	n, err := b.Read(other)
	if err != nil || !bytes.Equal(other[:n], msg) {
		t.Fatalf("Read = %d, %v; want the whole message", n, err)
	}
	if n, err := b.Read(other); err != nil || string(other[:n]) != "next" {
		t.Fatalf("then Read = %q, %v; want \"next\"", other[:n], err)
	}
}

// TestBusyEnds: a busy read ends when the peer leaves (EOF) and when its
// own connection is closed, instead of spinning on.
func TestBusyEnds(t *testing.T) {
	a, b := busyPipe(t, true)
	buf := make([]byte, 100)
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.Close()
	}()
	if _, err := b.Read(buf); !errors.Is(err, io.EOF) {
		t.Errorf("busy Read after the peer left = %v, want EOF", err)
	}
	_, c := busyPipe(t, true)
	testsock.CloseEndsRead(t, func() error { _, err := c.Read(buf); return err }, func() { c.Close() })
}

func TestTooLarge(t *testing.T) {
	a, b := pipe(t)
	a.Write(make([]byte, 300))
	a.Write([]byte("after"))
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	small := make([]byte, 100)
	if _, err := b.Read(small); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read into a small buffer = %v, want ErrTooLarge", err)
	}
	if n, err := b.Read(small); err != nil || string(small[:n]) != "after" {
		t.Fatalf("the next message = %q, %v; want \"after\"", small[:n], err)
	}
	a.Conn.Write([]byte{0xff, 0xff, 0xff, 0xff}) // a 4 GiB frame: not volley
	if _, err := b.Read(small); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read of a 4 GiB frame = %v, want ErrTooLarge", err)
	}
}

// TestListener: messages from several connections, TCP and Unix, come out
// of one ReadFrom with each connection's address, and WriteTo answers the
// right one.
func TestListener(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "s")
			}
			l, err := Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var cs []*Conn
			for range 3 {
				c, err := Dial(network, l.LocalAddr().String(), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				cs = append(cs, c)
			}
			for i, c := range cs {
				c.Write([]byte{byte(i)})
			}
			l.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 64)
			seen := map[netip.AddrPort]bool{}
			for range cs {
				n, from, err := l.ReadFrom(buf)
				if err != nil || n != 1 {
					t.Fatalf("ReadFrom = %d, %v", n, err)
				}
				seen[from] = true
				if _, err := l.WriteTo([]byte{buf[0] + 10}, from); err != nil {
					t.Fatal(err)
				}
			}
			if len(seen) != 3 {
				t.Fatalf("%d addresses for 3 connections", len(seen))
			}
			for i, c := range cs {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := c.Read(buf); err != nil || n != 1 || buf[0] != byte(i+10) {
					t.Fatalf("connection %d got %v, %v; want its own answer %d", i, buf[:n], err, i+10)
				}
			}
			l.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, _, err := l.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("ReadFrom on a quiet listener = %v, want the deadline", err)
			}
		})
	}
}
