package server

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// portOf returns the port of a socket's address.
func portOf(t *testing.T, a net.Addr) int {
	t.Helper()
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// isClosed reports whether pc was closed: a read on it says so at once
// instead of timing out.
func isClosed(pc transport.PacketConn) bool {
	_ = pc.SetReadDeadline(time.Now().Add(-time.Second))
	_, _, err := pc.ReadFrom(make([]byte, 64))
	return errors.Is(err, net.ErrClosed)
}

// TestBindPort: with port 0, a port UDP got but TCP has in use is given
// up for another, free for both; with a port given, the clash is the
// error, naming the protocol and the port; either way nothing stays open
// after an error.
func TestBindPort(t *testing.T) {
	// A UDP port nothing uses, for --listen with a port.
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	given := c.LocalAddr().String()
	c.Close()
	inUse := func(port int) error {
		return &net.OpError{Op: "listen", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	tests := []struct {
		name   string
		listen string
		// fail is the error binding TCP on port gives, the try'th
		// time, first the port UDP got on the first try.
		fail     func(port, first, try int) error
		tries    int    // UDP opened this many times
		wantErr  string // "": success
		wantPort bool   // the error names the port
	}{
		{"port 0, free for both", "127.0.0.1:0", func(int, int, int) error { return nil }, 1, "", false},
		{"port 0, TCP has UDP's first port", "127.0.0.1:0", func(port, first, _ int) error {
			if port == first {
				return inUse(port)
			}
			return nil
		}, 2, "", false},
		{"port 0, TCP has the first three", "127.0.0.1:0", func(port, _, try int) error {
			if try <= 3 {
				return inUse(port)
			}
			return nil
		}, 4, "", false},
		{"port 0, TCP has every port", "127.0.0.1:0", func(port, _, _ int) error { return inUse(port) }, portTries,
			"no port was free for both UDP and TCP in 64 tries (--tcp=false serves UDP alone)", true},
		{"port 0, TCP fails otherwise", "127.0.0.1:0", func(port, _, _ int) error {
			return &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)}
		}, 1, "permission denied (--tcp=false serves UDP alone)", false},
		{"port given, TCP has it", given, func(port, _, _ int) error { return inUse(port) }, 1,
			"listen tcp " + given + ": bind: address already in use (--tcp=false serves UDP alone)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var udps [][]transport.PacketConn
			var tcps []transport.PacketConn
			// extra counts the tries a real port in use took: with tests
			// of other packages running, the port UDP picked may be one a
			// TCP connection holds, and bindPort rightly tries again.
			first, try, extra := 0, 0, 0
			openUDP := func(addr string) ([]transport.PacketConn, error) {
				pcs, err := transport.ListenUDPWith(context.Background(), addr, 2, sockopt.Options{TOS: -1})
				if err == nil {
					udps = append(udps, pcs)
				}
				return pcs, err
			}
			openTCP := func(addr string) (transport.PacketConn, error) {
				try++
				_, p, _ := net.SplitHostPort(addr)
				port, _ := strconv.Atoi(p)
				if first == 0 {
					first = port
				}
				if err := tt.fail(port, first, try); err != nil {
					return nil, err
				}
				l, err := transport.ListenStream("tcp", addr)
				if err == nil {
					tcps = append(tcps, l)
				} else if errors.Is(err, syscall.EADDRINUSE) {
					extra++
				}
				return l, err
			}
			pcs, tl, err := bindPort(tt.listen, openUDP, openTCP)
			if want := min(tt.tries+extra, portTries); len(udps) != want {
				t.Errorf("UDP opened %d times, want %d (%d for ports really in use)", len(udps), want, extra)
			}
			for i, set := range udps {
				for _, pc := range set {
					if last := i == len(udps)-1 && err == nil; isClosed(pc) == last {
						t.Errorf("try %d: UDP socket %s closed %v, want %v", i+1, pc.LocalAddr(), !last, last)
					}
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "tcp") {
					t.Fatalf("bindPort(%s) = %v, want an error ending %q", tt.listen, err, tt.wantErr)
				}
				if tt.wantPort && !strings.Contains(err.Error(), ":"+strconv.Itoa(portOf(t, udps[len(udps)-1][0].LocalAddr()))) {
					t.Errorf("bindPort(%s) = %v, want the port in the error", tt.listen, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("bindPort(%s) = %v", tt.listen, err)
			}
			defer func() {
				tl.Close()
				for _, pc := range pcs {
					pc.Close()
				}
			}()
			p := portOf(t, pcs[0].LocalAddr())
			for _, pc := range pcs[1:] {
				if q := portOf(t, pc.LocalAddr()); q != p {
					t.Errorf("UDP workers on ports %d and %d, want one", p, q)
				}
			}
			if q := portOf(t, tl.LocalAddr()); q != p || len(tcps) != 1 || tcps[0] != tl {
				t.Errorf("UDP on port %d, TCP on %d (%d TCP listeners made), want one on the same port", p, q, len(tcps))
			}
			if tt.tries > 1 && p == first {
				t.Errorf("got port %d again, which TCP has in use", p)
			}
		})
	}
}

// TestOpenCloses: a set-up step that fails leaves nothing the steps
// before it opened: no socket file, no log file, the port free.
func TestOpenCloses(t *testing.T) {
	dir, err := os.MkdirTemp("", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock, logPath := filepath.Join(dir, "u.sock"), filepath.Join(dir, "log.csv")
	setup := Setup{Listen: "127.0.0.1:0", Workers: 1, UDP: sockopt.Options{TOS: -1}, TCP: true,
		Stream: transport.ListenOptions{Socket: sockopt.Options{TOS: -1}}, UnixPath: sock,
		GramPath: filepath.Join(dir, "missing", "g.sock"), LogPath: logPath}
	ss, err := Open(context.Background(), setup)
	if err == nil {
		ss.Close()
		t.Fatal("Open with --unixgram in a missing directory succeeded")
	}
	if want := "--unixgram " + setup.GramPath + ": the directory " + filepath.Dir(setup.GramPath) + " does not exist"; err.Error() != want {
		t.Errorf("Open: %v, want %s", err, want)
	}
	for _, f := range []string{sock, logPath} {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is there after a failed set-up: %v", f, err)
		}
	}
	// All of it, once it can be.
	setup.GramPath = filepath.Join(dir, "g.sock")
	ss, err = Open(context.Background(), setup)
	if err != nil {
		t.Fatal(err)
	}
	if ss.TCP == nil || ss.Unix == nil || ss.Unixgram == nil || ss.Log == nil || portOf(t, ss.TCP.LocalAddr()) != portOf(t, ss.UDP[0].LocalAddr()) {
		t.Errorf("Open opened %+v", ss)
	}
	ss.Close()
	for _, f := range []string{sock, setup.GramPath} {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is there after close: %v", f, err)
		}
	}
}
