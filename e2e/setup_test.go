//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testsock"
)

// setupRun runs `volley server args...`, which is to fail while it sets
// up. It waits at most 15 s for the server to exit, or 2 s once it has
// printed a line: then the server is taken to be up and is killed, by
// its PID (this test started it).
func setupRun(t *testing.T, args ...string) run {
	t.Helper()
	cmd := exec.Command(volley, append([]string{"server"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printed := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		lines := bufio.NewReader(stdout)
		first := true
		for {
			line, err := lines.ReadString('\n')
			out.WriteString(line)
			if first && line != "" {
				close(printed)
				first = false
			}
			if err != nil {
				return
			}
		}
	}()
	timeout := time.After(15 * time.Second)
	select {
	case <-read:
	case <-printed:
		select {
		case <-read:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
		}
	case <-timeout:
		cmd.Process.Kill()
	}
	<-read
	err = cmd.Wait()
	r := run{stdout: out.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkSetupFails checks that the server exited non-zero without saying
// it listens, with one line on stderr that has each of want.
func checkSetupFails(t *testing.T, r run, want ...string) {
	t.Helper()
	ok := r.code > 0 && !strings.Contains(r.stdout, "listening") && strings.Count(r.stderr, "\n") == 1
	for _, w := range want {
		ok = ok && strings.Contains(r.stderr, w)
	}
	if !ok {
		t.Errorf("exit %d, stdout %q, stderr %q: want an error exit, no listening line, one line on stderr with %q", r.code, r.stdout, r.stderr, want)
	}
}

// TestSetupFails: a server that cannot set up what it is asked for says
// what failed and exits non-zero, without a "listening" line first (a
// script waiting for one would take the server to be up).
func TestSetupFails(t *testing.T) {
	dir := testsock.ShortDir(t)
	// TCP has a port that UDP has free; UDP has one.
	var tcpHeld net.Listener
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.ListenPacket("udp", l.Addr().String()); err == nil {
			c.Close()
			tcpHeld = l
			break
		}
		l.Close()
	}
	if tcpHeld == nil {
		t.Fatal("found no TCP port free for UDP")
	}
	defer tcpHeld.Close()
	udpHeld, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udpHeld.Close()
	live := filepath.Join(dir, "live.sock")
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"TCP port in use", []string{"--listen", tcpHeld.Addr().String()},
			[]string{"listen tcp " + tcpHeld.Addr().String() + ": bind: address already in use"}},
		{"UDP port in use", []string{"--listen", udpHeld.LocalAddr().String()},
			[]string{"volley: listen udp " + udpHeld.LocalAddr().String() + ": bind: address already in use\n"}},
		{"live --unix socket", []string{"--unix", live, "--log", filepath.Join(dir, "log.csv")},
			[]string{"--unix " + live + ": a live process listens there"}},
		{"--unix in a missing directory", []string{"--unix", filepath.Join(dir, "none", "v.sock")},
			[]string{"--unix " + filepath.Join(dir, "none", "v.sock") + ": the directory " + filepath.Join(dir, "none") + " does not exist"}},
		{"--unixgram in a missing directory", []string{"--unixgram", filepath.Join(dir, "none", "g.sock")},
			[]string{"--unixgram " + filepath.Join(dir, "none", "g.sock") + ": the directory " + filepath.Join(dir, "none") + " does not exist"}},
		{"--log in a missing directory", []string{"--log", filepath.Join(dir, "none", "log.csv")},
			[]string{"--log " + filepath.Join(dir, "none", "log.csv") + ": the directory " + filepath.Join(dir, "none") + " does not exist"}},
		{"--log on a directory", []string{"--log", dir}, []string{"--log " + dir + ": is a directory"}},
		{"absent D-Bus bus", []string{"--dbus", "unix:path=" + filepath.Join(dir, "nobus")},
			[]string{"--dbus unix:path=" + filepath.Join(dir, "nobus") + ": "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args[0] != "--listen" {
				args = append([]string{"--listen", "127.0.0.1:0"}, args...)
			}
			checkSetupFails(t, setupRun(t, args...), tt.want...)
		})
	}
	// A set-up that failed made no log file.
	if _, err := os.Lstat(filepath.Join(dir, "log.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a log file was made: %v", err)
	}
}

// TestUnixSocketInUse: --unix and --unixgram replace a socket file only
// when connecting to it is refused (nothing is bound to it). A live
// socket of either type, one with a full backlog, or a file that is not a
// socket is an error naming the path and what is there, and is left
// working; and the server removes on exit only the socket files it made.
func TestUnixSocketInUse(t *testing.T) {
	listenStream := func(t *testing.T, p string) any { return testsock.Stream(t, p) }
	listenGram := func(t *testing.T, p string) any { return testsock.Gram(t, p) }
	tests := []struct {
		name string
		flag string
		make func(t *testing.T, path string) any // what is at path
		want string                              // after the path
	}{
		{"live stream socket at --unixgram", "--unixgram", listenStream, "a live process listens there (a Unix stream socket)"},
		{"live datagram socket at --unix", "--unix", listenGram, "a live process listens there (a Unix datagram socket)"},
		{"live datagram socket at --unixgram", "--unixgram", listenGram, "a live process listens there (a Unix datagram socket)"},
		{"full backlog at --unix", "--unix", func(t *testing.T, p string) any { return testsock.FullBacklog(t, p).(*net.UnixListener) },
			"a live process listens there (a Unix stream socket with a full backlog)"},
		{"regular file at --unix", "--unix", func(t *testing.T, p string) any {
			if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []byte("keep me")
		}, "the path exists and is not a socket (a regular file)"},
		{"regular file at --unixgram", "--unixgram", func(t *testing.T, p string) any {
			if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []byte("keep me")
		}, "the path exists and is not a socket (a regular file)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(testsock.ShortDir(t), "s")
			live := tt.make(t, path)
			checkSetupFails(t, setupRun(t, "--listen", "127.0.0.1:0", tt.flag, path), tt.flag+" "+path+": "+tt.want)
			testsock.StillWorks(t, path, live)
		})
	}

	t.Run("stale socket files are replaced", func(t *testing.T) {
		dir := testsock.ShortDir(t)
		sock, gram := filepath.Join(dir, "u.sock"), filepath.Join(dir, "g.sock")
		// Socket files nothing is bound to, as a crashed server leaves
		// them; each of the other type, which is no matter.
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: gram, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
		srv := startServer(t, "127.0.0.1:0", "-q", "--tcp=false", "--unix", sock, "--unixgram", gram)
		for _, target := range []string{"unix://" + sock, "unixgram://" + gram} {
			if r := volleyRun(t, "client", target, "-n", "20", "--format", "json"); r.code != 0 {
				t.Errorf("%s: exit %d: %s", target, r.code, r.stderr)
			} else if c := parseResult(t, r.stdout).Summary.Counts; c.Received != 20 {
				t.Errorf("%s: counts %+v", target, c)
			}
		}
		if err := srv.stop(t, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{sock, gram} {
			if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s is still there after the server stopped: %v", f, err)
			}
		}
	})

	t.Run("files that took the sockets' place are kept", func(t *testing.T) {
		dir := testsock.ShortDir(t)
		sock, gram := filepath.Join(dir, "u.sock"), filepath.Join(dir, "g.sock")
		srv := startServer(t, "127.0.0.1:0", "-q", "--tcp=false", "--unix", sock, "--unixgram", gram)
		srv.waitFor(t, "listening on unixgram://")
		// Another process takes both paths while the server runs.
		var others []any
		for _, p := range []string{sock, gram} {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		others = append(others, listenGram(t, sock), listenStream(t, gram))
		if err := srv.stop(t, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		for i, p := range []string{sock, gram} {
			if _, err := os.Lstat(p); err != nil {
				t.Fatalf("the server removed %s, which another process had made: %v", p, err)
			}
			testsock.StillWorks(t, p, others[i])
		}
	})
}

// TestListenAnyPort: servers with --listen HOST:0, on an address where
// TCP has a third of the ephemeral ports in use (UDP none), each come up
// on a port free for both, and answer on it. Before, a server there got a
// port free for UDP alone one time in three, said it listened, and exited
// (as one in ten did on a busy machine).
func TestListenAnyPort(t *testing.T) {
	const host = "127.0.14.11" // loopback, used by nothing else, so that holding its ports troubles no one
	lo, hi := ephemeralPorts()
	// Raw sockets: thousands of them, opened and closed faster than
	// through package net (and its race detector).
	var held []int
	defer func() {
		for _, fd := range held {
			syscall.Close(fd)
		}
	}()
	ip := [4]byte(net.ParseIP(host).To4())
	for p := lo; p <= hi; p += 3 {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			break // out of descriptors: enough
		}
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: p, Addr: ip})
		if err == nil {
			err = syscall.Listen(fd, 1)
		}
		if err != nil {
			syscall.Close(fd)
			if len(held) == 0 && !errors.Is(err, syscall.EADDRINUSE) {
				require(t, "loopback address "+host, err)
			}
			continue
		}
		held = append(held, fd)
	}
	if len(held) < (hi-lo)/6 {
		t.Fatalf("held %d TCP ports on %s, want a third of %d to %d", len(held), host, lo, hi)
	}
	// Twelve servers, all up at once: each picks its port while the
	// others hold theirs.
	var srvs []*server
	for range 12 {
		srv := startServer(t, host+":0", "-q")
		srv.waitFor(t, "listening on tcp://"+srv.addr)
		// The server's own TCP listener answers on its port.
		c, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connect to tcp://%s: %v", srv.addr, err)
		}
		c.Close()
		srvs = append(srvs, srv)
	}
	for _, srv := range srvs {
		if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("server at %s: %v (it exited)", srv.addr, err)
		}
	}
	for _, srv := range srvs {
		<-srv.done
		if err := srv.cmd.Wait(); err != nil {
			t.Errorf("server at %s: exit after SIGTERM: %v, want 0", srv.addr, err)
		}
	}
}
