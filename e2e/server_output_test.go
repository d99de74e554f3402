package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServerLogStreams: the server's --log has a client's lines while the
// server still runs (it wrote them only at exit when they came to less
// than its 64 KiB buffer), and the same lines, once each, after it stops.
func TestServerLogStreams(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "server.csv")
	srv := startServer(t, "127.0.0.1:0", "-q", "--log", logFile)
	const n = 20
	if r := volleyRun(t, "client", srv.addr, "-n", fmt.Sprint(n), "--format", "json"); r.code != 0 {
		t.Fatalf("client: exit %d, %s", r.code, r.stderr)
	}
	lines := func() []string {
		b, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	// Each interval (a second) flushes; a loaded machine may take longer.
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = lines(); len(got) >= 1+n {
			break
		}
	}
	if len(got) != 1+n || !strings.HasPrefix(got[0], "peer,session,seq,") {
		t.Fatalf("log while the server runs: %d lines, want a header and %d:\n%s", len(got), n, strings.Join(got, "\n"))
	}
	select {
	case <-srv.done: // its stdout closed
		t.Fatal("the server exited before its log was read")
	default:
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	if after := lines(); len(after) != len(got) {
		t.Errorf("log after the server stopped: %d lines, want the %d it had", len(after), len(got))
	}
}

// intervalLine matches a server's interval line ("0.00-1.00s in …").
var intervalLine = regexp.MustCompile(`(?m)^\d+\.\d\d-\d+\.\d\ds in `)

// TestServerIdleLines: an idle server prints no interval lines (it
// printed "0 pkt/s" every interval; now one line a minute, which the
// test is too short to see), and a busy one prints them.
func TestServerIdleLines(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "20ms")
	// Many intervals go by; how many does not matter.
	time.Sleep(time.Second)
	srv.mu.Lock()
	idle := srv.out.String()
	srv.mu.Unlock()
	if lines := intervalLine.FindAllString(idle, -1); len(lines) > 0 {
		t.Errorf("an idle server printed %d interval lines, want none:\n%s", len(lines), idle)
	}
	if r := volleyRun(t, "client", srv.addr, "-n", "50", "--format", "json"); r.code != 0 {
		t.Fatalf("client: exit %d, %s", r.code, r.stderr)
	}
	// The line comes at the end of its interval; a loaded machine may
	// take a while to get there.
	busy := false
	for deadline := time.Now().Add(30 * time.Second); !busy && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		srv.mu.Lock()
		busy = intervalLine.MatchString(srv.out.String())
		srv.mu.Unlock()
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	if !busy {
		t.Errorf("a server that answered a client printed no interval line within 30s:\n%s", srv.output())
	}
}
