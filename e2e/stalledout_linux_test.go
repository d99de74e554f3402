package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// TestServerStalledOutput: a server whose stdout nobody reads (a pipe left
// full, a terminal scrolled back and paused) keeps answering: its interval
// lines wait or merge, its one-way reports wait or are counted, its
// workers do not. Before, the first line the pipe had no room for froze
// every worker, and clients saw the reflector go silent.
func TestServerStalledOutput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The smallest pipe the kernel makes (a page): a few dozen interval
	// lines fill it.
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatalf("F_SETPIPE_SZ: %v", err)
	}
	cmd := exec.Command(volley, "server", "--listen", "127.0.0.1:0", "-i", "10ms")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill() // its totals could wait for ever on the pipe
		cmd.Wait()
	})
	line, err := bufio.NewReader(r).ReadString('\n') // the last read of the pipe
	if err != nil {
		t.Fatalf("the server said nothing: %v", err)
	}
	m := regexp.MustCompile(`listening on udp://(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q: want listening on udp://", line)
	}
	// 100 interval lines a second fill the pipe in well under a second;
	// the load runs 3.
	load := volleyRun(t, "client", m[1], "-t", "3s", "--rate", "500", "-q", "--format", "json")
	if load.code != 0 {
		t.Fatalf("the load's client: exit %d: %s", load.code, load.stderr)
	}
	// A one-way session's report line is told by a worker: it must not
	// wait on the pipe either, and the session's results still come.
	oneway := volleyRun(t, "client", m[1], "--oneway", "-t", "1s", "--rate", "200", "-q", "--format", "json")
	if oneway.code != 0 {
		t.Fatalf("a one-way client after the pipe filled: exit %d: %s", oneway.code, oneway.stderr)
	}
	after := volleyRun(t, "client", m[1], "-n", "100", "-q", "--format", "json")
	if after.code != 0 {
		t.Fatalf("a client after the pipe filled: exit %d: %s", after.code, after.stderr)
	}
	if c := parseResult(t, after.stdout).Summary.Counts; c.Received != 100 {
		t.Errorf("a client after the pipe filled: %+v, want all 100 answered", c)
	}
	if c := parseResult(t, load.stdout).Summary.Counts; c.Received == 0 || c.Lost > c.Sent/10 {
		t.Errorf("the load: %+v, want it answered while the pipe filled", c)
	}
}
