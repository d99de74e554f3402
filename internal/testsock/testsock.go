// Package testsock holds what tests of sockets share: short temporary
// paths for Unix socket files, sockets in odd states, checks that a socket
// still works, and the process's open descriptors. Only tests import it.
package testsock

import (
	"bytes"
	"net"
	"os"
	"testing"
	"time"
)

// ShortDir returns a new directory under /tmp, short enough for Unix
// socket paths (t.TempDir's can pass their 108-byte limit), removed when
// the test ends.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "v")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StillWorks checks that what is at path answers as it did: a stream
// listener (live) accepts, a datagram socket receives, a file ([]byte)
// holds what it held.
func StillWorks(t testing.TB, path string, live any) {
	t.Helper()
	switch l := live.(type) {
	case net.Listener:
		dl, _ := l.(interface{ SetDeadline(time.Time) error })
		// Take what waits (a filled backlog, a claim's own connections),
		// then a new connection.
		for dl != nil {
			dl.SetDeadline(time.Now().Add(100 * time.Millisecond))
			c, err := l.Accept()
			if err != nil {
				break
			}
			c.Close()
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("the listener at %s no longer takes connections: %v", path, err)
		}
		c.Close()
		if dl != nil {
			dl.SetDeadline(time.Now().Add(5 * time.Second))
		}
		if c, err := l.Accept(); err != nil {
			t.Fatalf("the listener at %s no longer accepts: %v", path, err)
		} else {
			c.Close()
		}
	case *net.UnixConn:
		c, err := net.Dial("unixgram", path)
		if err != nil {
			t.Fatalf("the datagram socket at %s is gone: %v", path, err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("still there?")); err != nil {
			t.Fatal(err)
		}
		l.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := l.Read(make([]byte, 64)); err != nil {
			t.Fatalf("the datagram socket at %s no longer receives: %v", path, err)
		}
	case []byte:
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, l) {
			t.Fatalf("the file at %s now holds %q (%v), want %q", path, b, err, l)
		}
	}
}

// Stream listens on a Unix stream socket at path until the test ends.
func Stream(t testing.TB, path string) any {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Gram binds a Unix datagram socket at path until the test ends.
func Gram(t testing.TB, path string) any {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
