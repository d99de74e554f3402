package e2e

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Issue 15, what a user reads: signals, the end of a session, where the
// report goes, and notes that ask for nothing.

// TestClientInterruptHandshake: a client interrupted while its Hello waits
// for an answer says that nothing was measured, and exits 1, at once.
func TestClientInterruptHandshake(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	hello := make(chan struct{})
	go func() {
		var buf [65536]byte
		if _, _, err := pc.ReadFrom(buf[:]); err == nil {
			close(hello) // and never answer
		}
	}()
	p := startVolley(t, "client", pc.LocalAddr().String(), "--timeout", "10s")
	select {
	case <-hello:
	case <-time.After(20 * time.Second):
		t.Fatal("the client sent no Hello within 20s")
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, _ := p.wait(t, 30*time.Second)
	took := time.Since(sent)
	t.Logf("exit %d %v after SIGINT: %s", code, took.Round(time.Millisecond), strings.TrimSpace(p.stderr.String()))
	if want := "interrupted before the reflector at udp://" + pc.LocalAddr().String() + " answered: nothing was measured"; code != 1 || !strings.Contains(p.stderr.String(), want) {
		t.Errorf("exit %d, stderr %q: want 1 and %q", code, p.stderr.String(), want)
	}
	if took > slack {
		t.Errorf("the client took %v to end after SIGINT, want at most %v", took, slack)
	}
}

// lines sends each line r gives to the channel it returns (unless 1024
// wait there already), and copies them into buf; the channel is closed at
// the end of r, and finished after it.
func lines(r io.Reader, buf *syncBuffer, finished chan<- struct{}) <-chan string {
	ch := make(chan string, 1024)
	go func() {
		defer close(finished)
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			buf.WriteString(sc.Text() + "\n")
			select {
			case ch <- sc.Text():
			default: // nobody is waiting for it
			}
		}
	}()
	return ch
}

// syncBuffer is a buffer a goroutine writes and a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(v)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLine waits for a line from ch that contains want.
func waitLine(t *testing.T, ch <-chan string, want string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("the output ended without %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line with %q within %v", want, limit)
		}
	}
}

// live is a volley process started by startLive, its output read line by
// line as it comes.
type live struct {
	cmd                *exec.Cmd
	outLines, errLines <-chan string
	out, errOut        syncBuffer
	done               chan error // cmd.Wait's, once both pipes are read to their end
}

// startLive starts `volley args...`; it is killed, by its PID, if still
// running at the test's end.
func startLive(t *testing.T, args ...string) *live {
	t.Helper()
	c := &live{cmd: exec.Command(volley, args...), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	c.outLines, c.errLines = lines(stdout, &c.out, outDone), lines(stderr, &c.errOut, errDone)
	go func() {
		// Wait only once the readers have read the pipes to their end.
		<-outDone
		<-errDone
		c.done <- c.cmd.Wait()
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// TestClientSecondSignal: with a frozen reflector, the first SIGINT leaves
// the client waiting for its probes in flight and the final count (up to
// --timeout, 20s here), and it says so; a second SIGINT ends it at once,
// with exit 130.
func TestClientSecondSignal(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	c := startLive(t, "client", srv.addr, "-t", "1m", "--timeout", "20s", "-i", "100ms")
	cmd, errLines, errOut, done := c.cmd, c.errLines, &c.errOut, c.done
	// The first interval line: the session is open and measuring.
	waitLine(t, c.outLines, "0.00-0.10s", 20*time.Second)
	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a probe is in flight to the frozen reflector
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitLine(t, errLines, "a second signal (Ctrl-C) quits at once", 10*time.Second)
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the client still ran 30s after a second SIGINT")
	}
	took := time.Since(sent)
	t.Logf("exit %d %v after the second SIGINT: %s", code, took.Round(time.Millisecond), strings.TrimSpace(errOut.String()))
	if code != 130 || !strings.Contains(errOut.String(), "quitting at once, without the report") {
		t.Errorf("exit %d, stderr %q: want 130 and why", code, errOut.String())
	}
	if took > slack {
		t.Errorf("the client took %v to end after the second SIGINT, want at most %v", took, slack)
	}
}

// TestLogToStdout: with --log -, the probe log has stdout to itself, and
// the report goes to stderr.
func TestLogToStdout(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	r := volleyRun(t, "client", srv.addr, "-n", "50", "-i", "100ms", "--log", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("stdout is not one CSV table: %v\n%s", err, r.stdout)
	}
	// A line per probe, and one more per late or duplicate reply (a
	// loaded machine makes some).
	if len(rows) < 51 || rows[0][0] != "flow" {
		t.Errorf("stdout has %d CSV rows:\n%s\nwant a header and 50 probes", len(rows), r.stdout)
	}
	if !strings.Contains(r.stderr, "--- udp://"+srv.addr+" summary") {
		t.Errorf("stderr has no report:\n%s", r.stderr)
	}
}

// TestDefaultRunAsksNothing: a default run's report has no note about
// the reflector's stamps (its replies have no room for them, and it did
// not ask); a run that asks for kernel stamps still gets it.
func TestDefaultRunAsksNothing(t *testing.T) {
	const note = "the reflector sent no stamps"
	r := volleyRun(t, "client", "-n", "50")
	if r.code != 0 || strings.Contains(r.stdout, note) {
		t.Errorf("default run: exit %d, report:\n%s\nwant 0 and no %q", r.code, r.stdout, note)
	}
	r = volleyRun(t, "client", "-n", "50", "--timestamps", "kernel")
	if r.code == 2 && strings.Contains(r.stderr, "--timestamps kernel") {
		t.Skipf("skipping: the kernel half: this socket takes no kernel stamps: %s", strings.TrimSpace(r.stderr))
	}
	if r.code != 0 || !strings.Contains(r.stdout, note) {
		t.Errorf("--timestamps kernel: exit %d, report:\n%s\nwant 0 and %q", r.code, r.stdout, note)
	}
}

// TestKeyedClientUnkeyedReflector: a client with a key against a
// reflector without one fails at the first answer, with the reason, not
// after its tries (3 x --timeout: 15s here).
func TestKeyedClientUnkeyedReflector(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	r := volleyRun(t, "client", srv.addr, "--key", "open sesame", "-n", "10", "--timeout", "5s")
	want := "authentication failed at udp://" + srv.addr + ": the reflector has no key"
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", r.code, r.stderr, want)
	}
	if r.took > 10*time.Second {
		t.Errorf("the client took %v to fail: want it to fail at the first answer, not after its tries", r.took)
	}
}

// TestThresholdColdProbes: without --warmup, --threshold leaves the
// first 10 probes alone, and the result and the header say so; with a
// warm-up it judges every measured probe.
func TestThresholdColdProbes(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	skip := func(args ...string) uint64 {
		t.Helper()
		r := volleyRun(t, append([]string{"client", srv.addr, "-n", "20", "--threshold", "10s", "--format", "json"}, args...)...)
		return parseResult(t, r.stdout).Config.ThresholdSkip
	}
	if got := skip(); got != 10 {
		t.Errorf("threshold_skip %v, want 10", got)
	}
	if got := skip("--warmup", "5"); got != 0 {
		t.Errorf("with --warmup: threshold_skip %v, want none", got)
	}
	r := volleyRun(t, "client", srv.addr, "-n", "20", "--threshold", "10s")
	if want := "stopping at an RTT above 10.0s after the first 10 probes"; !strings.Contains(r.stdout, want) {
		t.Errorf("report:\n%s\nwant %q", r.stdout, want)
	}
	if r := volleyRun(t, "client", "--help"); !strings.Contains(r.stdout, "the first 10 probes") {
		t.Errorf("--help does not say which probes --threshold leaves alone:\n%s", r.stdout)
	}
}

// TestIperfUnits: --format iperf picks its units by magnitude, as iperf 2
// does: a few small bouncebacks are not "0.00 MBytes".
func TestIperfUnits(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	r := volleyRun(t, "client", srv.addr, "--format", "iperf", "-n", "20", "-l", "100", "--burst", "10", "--period", "100ms", "-i", "100ms")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "0.00 MBytes") || !strings.Contains(r.stdout, "KBytes") || !strings.Contains(r.stdout, "Kbits/sec") {
		t.Errorf("iperf output:\n%s\nwant KBytes and Kbits/sec for 2000 bytes an interval", r.stdout)
	}
}

// TestWorkloadHeader: a --workload run's text header describes the mix.
func TestWorkloadHeader(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	path := filepath.Join(t.TempDir(), "mix.yaml")
	mix := "- {name: small, weight: 3, size: 100, reply_size: 500}\n- {name: big, weight: 1, size: 1400, reply_size: 64, hold: 1ms}\n"
	if err := os.WriteFile(path, []byte(mix), 0o644); err != nil {
		t.Fatal(err)
	}
	r := volleyRun(t, "client", srv.addr, "--workload", path, "--seed", "5", "-n", "40")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"a mix of 2 probe shapes drawn by weight (--workload, seed 5)",
		"\n  small: weight 3 (75%), 100-byte probes, 500-byte replies\n",
		"\n  big: weight 1 (25%), 1400-byte probes, 64-byte replies, held 1.00ms\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report:\n%s\nwant %q", r.stdout, want)
		}
	}
}

// TestDoubledSignal: one signal delivered twice at once (GNU timeout
// signals its child, then its process group) is not a second Ctrl-C: only
// a signal after volley said it is still finishing is. The run ends with
// its report.
func TestDoubledSignal(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	c := startLive(t, "client", srv.addr, "-t", "1m", "-i", "100ms")
	waitLine(t, c.outLines, "0.00-0.10s", 20*time.Second) // measuring
	// Two signals 10ms apart: far enough that the first was taken (a
	// pending signal would absorb the second), well before volley would
	// say it is still finishing (half a second).
	for i := range 2 {
		if i > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	err := <-c.done
	if code := c.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(c.out.String(), "summary") {
		t.Fatalf("exit %d (%v), want 0 and the report; stdout:\n%s\nstderr:\n%s", code, err, c.out.String(), c.errOut.String())
	}
}
