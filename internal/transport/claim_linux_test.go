package transport

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/testsock"
)

// stale leaves a socket file of network at path that nothing is bound to.
func stale(t *testing.T, network, path string) {
	t.Helper()
	if network == "unix" {
		l, err := net.ListenUnix(network, &net.UnixAddr{Name: path, Net: network})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
		return
	}
	c, err := net.ListenUnixgram(network, &net.UnixAddr{Name: path, Net: network})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestClaimSocketPath: only a socket file that refuses connections is
// replaced; anything else is an error naming the path and what is there,
// and is left as it was.
func TestClaimSocketPath(t *testing.T) {
	tests := []struct {
		name    string
		network string
		make    func(t *testing.T, path string) any // what is at path; a live socket to check afterwards
		want    string                              // the error after the path; "": claimed
	}{
		{"free", "unix", func(*testing.T, string) any { return nil }, ""},
		{"stale stream socket", "unix", func(t *testing.T, p string) any { stale(t, "unix", p); return nil }, ""},
		{"stale datagram socket", "unixgram", func(t *testing.T, p string) any { stale(t, "unixgram", p); return nil }, ""},
		{"stale datagram socket for a stream", "unix", func(t *testing.T, p string) any { stale(t, "unixgram", p); return nil }, ""},
		{"live stream socket", "unix", func(t *testing.T, p string) any { return testsock.Stream(t, p) }, "a live process listens there (a Unix stream socket)"},
		{"live stream socket for a datagram one", "unixgram", func(t *testing.T, p string) any { return testsock.Stream(t, p) }, "a live process listens there (a Unix stream socket)"},
		{"live datagram socket", "unixgram", func(t *testing.T, p string) any { return testsock.Gram(t, p) }, "a live process listens there (a Unix datagram socket)"},
		{"live datagram socket for a stream one", "unix", func(t *testing.T, p string) any { return testsock.Gram(t, p) }, "a live process listens there (a Unix datagram socket)"},
		{"live stream socket, backlog full", "unix", func(t *testing.T, p string) any { return testsock.FullBacklog(t, p) },
			"a live process listens there (a Unix stream socket with a full backlog)"},
		{"live stream socket, backlog full, for a datagram one", "unixgram", func(t *testing.T, p string) any { return testsock.FullBacklog(t, p) },
			"a live process listens there (a Unix stream socket with a full backlog)"},
		{"regular file", "unix", func(t *testing.T, p string) any {
			if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "the path exists and is not a socket (a regular file)"},
		{"directory", "unixgram", func(t *testing.T, p string) any {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "the path exists and is not a socket (a directory)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(testsock.ShortDir(t), "s")
			live := tt.make(t, path)
			before, _ := os.Lstat(path)
			err := claimSocketPath(tt.network, path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("claimSocketPath(%s, %s) = %v, want nil", tt.network, path, err)
				}
				if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s is still there: %v", path, err)
				}
				return
			}
			if want := path + ": " + tt.want; err == nil || err.Error() != want {
				t.Fatalf("claimSocketPath(%s, %s) = %v, want %s", tt.network, path, err, want)
			}
			if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
				t.Fatalf("%s was not left as it was: %v", path, err)
			}
			testsock.StillWorks(t, path, live)
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		dir := filepath.Join(testsock.ShortDir(t), "none")
		path := filepath.Join(dir, "s")
		if err := claimSocketPath("unix", path); err == nil || err.Error() != path+": the directory "+dir+" does not exist" {
			t.Errorf("claimSocketPath(unix, %s) = %v, want the directory named", path, err)
		}
	})
	t.Run("too long", func(t *testing.T) {
		path := "/tmp/" + strings.Repeat("v", 120)
		if err := claimSocketPath("unix", path); err == nil || !strings.Contains(err.Error(), "longer than the 108") {
			t.Errorf("claimSocketPath(unix, %s) = %v, want it too long", path, err)
		}
	})
}

// TestRemoveOwnSocketFile: a listener removes its socket file as it
// closes, but not a file that has taken its place.
func TestRemoveOwnSocketFile(t *testing.T) {
	for _, network := range []string{"unix", "unixgram"} {
		listen := func(path string) (PacketConn, error) {
			if network == "unix" {
				return ListenStream(network, path)
			}
			return ListenUnixgram(path)
		}
		t.Run(network, func(t *testing.T) {
			path := filepath.Join(testsock.ShortDir(t), "s")
			pc, err := listen(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := pc.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s is still there after Close: %v", path, err)
			}
			// Another takes the path while the listener runs.
			if pc, err = listen(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			other, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			pc.Close()
			if _, err := os.Lstat(path); err != nil {
				t.Fatalf("closing the listener removed the socket file that took its place: %v", err)
			}
			if c, err := net.Dial("unix", path); err != nil {
				t.Errorf("the other listener no longer takes connections: %v", err)
			} else {
				c.Close()
			}
		})
	}
}
