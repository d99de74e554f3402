// Package e2e runs the real volley binary: it is built once, then servers
// and clients run as processes on loopback.
//
// The tests that measure run one at a time. Those that mostly wait (on
// timeouts, on a peer stopped or stalled on purpose) and load the machine
// little call t.Parallel: they run after the others, up to go test's
// -parallel (GOMAXPROCS) at a time, which keeps the package well inside
// go test's 10-minute default. Tests that fill buffers or churn memory
// (TestStalledStreamPeer), or whose timeouts or bounds run from a
// process's start (TestIdleConnections, TestWindDownSilentReflector,
// TestClientStalledWrite: a race-built binary starts slowly on a loaded
// machine), stay serial.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testenv"
	"github.com/volley-net/volley/internal/testrelay"
	"github.com/volley-net/volley/internal/wire"
)

var volley string // path of the built binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "volley-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	volley = filepath.Join(dir, "volley")
	build := exec.Command("go", "build", "-race", "-o", volley, "../cmd/volley")
	if out, err := build.CombinedOutput(); err != nil {
		// -race needs cgo; fall back to a plain build.
		build = exec.Command("go", "build", "-o", volley, "../cmd/volley")
		if out2, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build volley: %v\n%s\n%s", err, out, out2)
			os.Exit(1)
		}
	}
	before := runtime.NumGoroutine()
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		code = checkLeaks(before)
	}
	os.Exit(code)
}

// TestSources reads every Go file of the module. The binary under test is
// built by a command, which go test's cache cannot see; files a test reads
// (once the tests run: not in TestMain) are in its cache key, so a change
// anywhere in the module reruns these tests instead of reporting a stale
// pass.
func TestSources(t *testing.T) {
	n := 0
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "go.mod") || strings.HasSuffix(path, "go.sum")) {
			if _, err := os.ReadFile(path); err == nil {
				n++
			}
		}
		return nil
	})
	if n < 50 {
		t.Fatalf("read %d source files of the module, want them all", n)
	}
}

// checkLeaks fails the run when goroutines the tests started (relays,
// output readers) are still running a few seconds after they ended.
func checkLeaks(before int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutines leaked: %d at start, %d at the end\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0
}

// require skips the test when a system component is missing, unless
// VOLLEY_REQUIRE names it (CI sets it), in which case the test fails.
func require(t *testing.T, component string, missing error) {
	t.Helper()
	testenv.Require(t, component, missing)
}

// server is a running `volley server`.
type server struct {
	cmd  *exec.Cmd
	addr string // host:port it listens on
	mu   sync.Mutex
	out  bytes.Buffer // stdout after the first line
	done chan struct{}
}

func (s *server) output() string {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startServer runs `volley server --listen listen args...` and waits for
// the address on its first line.
func startServer(t *testing.T, listen string, args ...string) *server {
	t.Helper()
	return startServerCmd(t, exec.Command(volley, append([]string{"server", "--listen", listen}, args...)...))
}

// startServerCmd runs cmd, a `volley server` (in a network namespace, say),
// and waits for the address on its first line.
func startServerCmd(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	lines := bufio.NewReader(stdout)
	first := make(chan string, 1)
	go func() {
		line, _ := lines.ReadString('\n')
		first <- line
		var buf [4096]byte
		for {
			n, err := lines.Read(buf[:])
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				close(s.done)
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	select {
	case line := <-first:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on udp://")
		if !ok {
			t.Fatalf("server's first line = %q, want listening on udp://ADDRESS", line)
		}
		s.addr = addr
	case <-time.After(20 * time.Second):
		t.Fatal("server printed no address within 20s")
	}
	return s
}

// stop sends sig to the server and waits for it to exit.
func (s *server) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	<-s.done
	return s.cmd.Wait()
}

type run struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// volleyRun runs volley with args, for at most a minute.
func volleyRun(t *testing.T, args ...string) run {
	t.Helper()
	return volleyRunIn(t, "", args...)
}

// volleyRunIn is volleyRun in the network namespace ns ("": this one).
func volleyRunIn(t *testing.T, ns string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, volley, args...)
	if ns != "" {
		cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, volley}, args...)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("volley %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("volley %s did not finish within a minute", strings.Join(args, " "))
	}
	return r
}

// checkCounts checks the invariants every result holds.
func checkCounts(t *testing.T, res *result.Result) {
	t.Helper()
	c := res.Summary.Counts
	if c.Sent != c.Received+c.Lost || c.Lost != c.LostUp+c.LostDown {
		t.Errorf("summary counts %+v: want sent = received + lost, lost = up + down", c)
	}
	if c.Duplicates != c.DuplicatesUp+c.DuplicatesDown || c.InFlight != 0 {
		t.Errorf("summary counts %+v: want duplicates = up + down, none in flight", c)
	}
	var sent, recv, inFlight uint64
	for i, iv := range res.Intervals {
		n := iv.Counts
		sent += n.Sent
		recv += n.Received
		inFlight += n.InFlight
		// Each line is of the probes sent in it: they were answered,
		// lost, or (reported early) in flight. A one-way run's client
		// knows only what it sent.
		if !res.Config.OneWay && (n.Sent != n.Received+n.Lost+n.InFlight || n.Lost != n.LostUp+n.LostDown ||
			n.Duplicates != n.DuplicatesUp+n.DuplicatesDown) {
			t.Errorf("interval %d counts %+v: want sent = received + lost + in flight, lost = up + down, duplicates = up + down", i, n)
		}
	}
	if len(res.Intervals) > 0 && (sent != c.Sent || (!res.Config.OneWay && recv+inFlight < c.Received) || recv > c.Received) {
		t.Errorf("intervals add up to %d sent, %d received, %d in flight; summary says %d sent, %d received", sent, recv, inFlight, c.Sent, c.Received)
	}
}

func TestClientServer(t *testing.T) {
	for _, tt := range []struct{ name, listen string }{{"ipv4", "127.0.0.1:0"}, {"ipv6", "[::1]:0"}} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "ipv6" {
				c, err := net.ListenPacket("udp6", "[::1]:0")
				require(t, "ipv6", err)
				c.Close()
			}
			srv := startServer(t, tt.listen, "-i", "100ms")
			// A long timeout: nothing is lost on loopback, but at a load
			// average of 14 a reply once came after the default 1s, late.
			r := volleyRun(t, "client", "udp://"+srv.addr, "-n", "2000", "--window", "4", "--warmup", "50", "-i", "100ms", "--timeout", "10s", "--format", "json")
			if r.code != 0 {
				t.Fatalf("client exit %d: %s", r.code, r.stderr)
			}
			res := parseResult(t, r.stdout)
			checkCounts(t, res)
			c := res.Summary.Counts
			if res.SchemaVersion != result.SchemaVersion || c.Sent != 2000 || c.Received != 2000 || c.Lost != 0 {
				t.Errorf("schema %d, counts %+v: want 2000 sent and received", res.SchemaVersion, c)
			}
			if res.ReflectorCount != "close" || res.Stopped != "count" || res.Config.Window != 4 {
				t.Errorf("reflector count %q, stopped %q, window %d: want close, count, 4", res.ReflectorCount, res.Stopped, res.Config.Window)
			}
			if res.Summary.RTT.Count != 2000 || res.Summary.RTT.Min <= 0 || res.Summary.RTT.Max < res.Summary.RTT.Min {
				t.Errorf("RTT %+v: want 2000 positive samples", res.Summary.RTT)
			}
			if err := srv.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("server exit after SIGTERM: %v, want 0", err)
			}
			out := srv.output()
			// 2050 probes, the hello and the close.
			if !strings.Contains(out, "--- totals") || !strings.Contains(out, "in 2052 packets") || !strings.Contains(out, "sessions opened 1") {
				t.Errorf("server output lacks the totals of 2052 packets and one session:\n%s", out)
			}
			if !strings.Contains(out, " pkt/s ") {
				t.Errorf("server printed no interval line:\n%s", out)
			}
		})
	}
}

func TestManyClients(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	const clients = 4
	var wg sync.WaitGroup
	results := make([]run, clients)
	for i := range clients {
		wg.Go(func() { results[i] = volleyRun(t, "client", srv.addr, "-n", "1000", "--format", "json") })
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("client %d exit %d: %s", i, r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		if c := res.Summary.Counts; c.Received != 1000 || c.Lost != 0 {
			t.Errorf("client %d counts %+v, want 1000 received", i, c)
		}
	}
	srv.stop(t, os.Interrupt)
	if out := srv.output(); !strings.Contains(out, fmt.Sprintf("sessions opened %d", clients)) {
		t.Errorf("server totals do not show %d sessions:\n%s", clients, out)
	}
}

func TestZeroSetup(t *testing.T) {
	r := volleyRun(t, "client", "-t", "1s", "--histogram")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"summary: 1.00s measured", "loss per direction is exact", "rtt histogram", ">= "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "in-process reflector at udp://127.0.0.1:") {
		t.Errorf("stderr does not name the in-process reflector: %q", r.stderr)
	}
}

func TestJSONLines(t *testing.T) {
	r := volleyRun(t, "client", "-t", "1s", "-i", "250ms", "--format", "jsonl")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := parseLines(t, r.stdout)
	var types []string
	var sent uint64
	for _, l := range lines {
		types = append(types, l.Type)
		if l.Type == "interval" {
			sent += l.Interval.Counts.Sent
		}
	}
	if len(types) != 5 || types[4] != "result" {
		t.Fatalf("line types %v, want 4 intervals and a result", types)
	}
	final := lines[4].Result
	if final.Summary.Counts.Sent != sent {
		t.Errorf("intervals sent %d, final line says %d", sent, final.Summary.Counts.Sent)
	}
}

// freePort returns a port on 127.0.0.1 free for UDP and TCP both, as a
// server's --listen needs (a port free for UDP alone was taken for TCP
// one CI run in many).
func freePort(t *testing.T) int {
	t.Helper()
	lo, hi := ephemeralPorts()
	// Outside the ephemeral range: no connect() or bind(:0) elsewhere
	// (another test, another package's) takes the port between this
	// choice and its use, or while a test restarts a server on it.
	// Where the range leaves no room (1024-65535, say), a port the kernel
	// picks, checked for both, as the next best.
	pick := func() int { return kernelPort(t) }
	switch {
	case lo > 11000:
		pick = func() int { return 10000 + rand.IntN(lo-10000) }
	case hi < 64000:
		pick = func() int { return hi + 1 + rand.IntN(65535-hi) }
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 200 {
		p := pick()
		if handedOut.ports[p] || !freeFor(fmt.Sprintf("127.0.0.1:%d", p)) {
			continue
		}
		handedOut.ports[p] = true
		return p
	}
	t.Fatalf("no port found free for both UDP and TCP on 127.0.0.1 (ephemeral ports %d-%d)", lo, hi)
	return 0
}

// ephemeralPorts is the kernel's range for the ports it picks (Linux's
// default where /proc does not say).
func ephemeralPorts() (lo, hi int) {
	lo, hi = 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo, &hi)
	}
	return lo, hi
}

// kernelPort is a UDP port on 127.0.0.1 the kernel picks.
func kernelPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// handedOut: the ports freePort gave, never given twice in one run.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freeFor says whether addr can be bound now for UDP and TCP both, as a
// server listening on it will.
func freeFor(addr string) bool {
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	defer u.Close()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func TestNoReflector(t *testing.T) {
	t.Run("closed port", func(t *testing.T) {
		port := freePort(t)
		r := volleyRun(t, "client", fmt.Sprintf("127.0.0.1:%d", port), "--timeout", "500ms")
		want := fmt.Sprintf("volley: no reflector answered at udp://127.0.0.1:%d", port)
		if r.code != 2 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("exit %d, stderr %q: want 2 and one line starting %q", r.code, r.stderr, want)
		}
		if r.took > 3*500*time.Millisecond+5*time.Second {
			t.Errorf("took %v, want within the handshake's three timeouts", r.took)
		}
	})
	t.Run("silent port", func(t *testing.T) {
		// A socket that receives and never answers: no ICMP comes back.
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := volleyRun(t, "client", c.LocalAddr().String(), "--timeout", "200ms")
		want := fmt.Sprintf("volley: no reflector answered at udp://%s after 3 tries over 600ms\n", c.LocalAddr())
		if r.code != 2 || r.stderr != want {
			t.Fatalf("exit %d, stderr %q: want 2 and %q", r.code, r.stderr, want)
		}
	})
}

func TestReflectorStopsMidRun(t *testing.T) {
	for _, tt := range []struct {
		name    string
		scheme  string        // the client's, before the address
		stop    func(*server) // how the reflector goes
		wantErr string
		notErr  string // what the error must not say
	}{
		{"killed", "", func(s *server) { s.cmd.Process.Kill() }, "reflector went away: udp://", "closed the connection"},
		{"frozen", "", func(s *server) { s.cmd.Process.Signal(syscall.SIGSTOP) }, "reflector went silent", "port unreachable"},
		// Not "port unreachable", as every stream's end was said before.
		{"killed tcp", "tcp://", func(s *server) { s.cmd.Process.Kill() }, "closed the connection", "port unreachable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, "127.0.0.1:0", "-q")
			t.Cleanup(func() { srv.cmd.Process.Signal(syscall.SIGCONT) })
			c := startMeasuring(t, tt.scheme+srv.addr, "-t", "30s", "--timeout", "100ms")
			tt.stop(srv)
			code, exited := c.finish(t, 30*time.Second)
			stderr := c.errOut.String()
			if code != 1 || !strings.Contains(stderr, tt.wantErr) || strings.Contains(stderr, tt.notErr) {
				t.Fatalf("exit %d, stderr %q: want 1 and %q, not %q", code, stderr, tt.wantErr, tt.notErr)
			}
			res := c.result(t)
			checkCounts(t, res)
			if res.Summary.Counts.Received == 0 || !strings.Contains(res.Error, tt.wantErr) || res.ReflectorCount != "last-reply" {
				t.Errorf("partial result: %+v, error %q, count from %q", res.Summary.Counts, res.Error, res.ReflectorCount)
			}
			if took := sinceStart(res, exited); took > 15*time.Second {
				t.Errorf("client took %v to notice", took)
			}
		})
	}
}

// TestReflectorRestart: with --reconnect, a client whose reflector is
// killed and started again on the same port carries on in a new session
// and reports the gap.
func TestReflectorRestart(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, addr, "-q")
	c := startMeasuring(t, addr, "-t", "3s", "--timeout", "100ms", "--reconnect=20s")
	srv.cmd.Process.Kill()
	srv.cmd.Wait()
	c.waitFor(t, c.errLines, "reconnecting")
	srv = startServer(t, addr, "-q")
	code, _ := c.finish(t, 60*time.Second)
	if stderr := c.errOut.String(); code != 0 || !strings.Contains(stderr, "reconnected") {
		t.Fatalf("client: exit %d, stderr %q: want success, the loss and the reconnection said", code, stderr)
	}
	res := c.result(t)
	checkCounts(t, res)
	if len(res.Reconnects) != 1 || !res.Reconnects[0].Resumed || res.ReflectorCount != "partial" || res.Stopped != "duration" {
		t.Fatalf("reconnects %+v, count from %q, stopped %q: want one resumed, partial, duration", res.Reconnects, res.ReflectorCount, res.Stopped)
	}
	// The last session was closed: the new reflector saw it.
	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if out := srv.output(); !strings.Contains(out, "sessions opened 1") {
		t.Errorf("the new reflector's totals %q: want one session", out)
	}
}

// TestStreamTransports: TCP (on the UDP port), Unix stream and Unix
// datagram sockets carry every shape with exact counts, including replies
// much larger than their requests; a stale Unix socket file is replaced
// and a live one refused.
func TestStreamTransports(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "v.sock")
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A stale socket file, as a crashed reflector leaves.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	gram := filepath.Join(dir, "g.sock")
	srv := startServer(t, "127.0.0.1:0", "-q", "--unix", sock, "--unixgram", gram)
	if r := volleyRun(t, "server", "--listen", "127.0.0.1:0", "--tcp=false", "--unix", sock); r.code != 1 || !strings.Contains(r.stderr, "a live process listens there") {
		t.Errorf("a second server on a live socket: exit %d, %q", r.code, r.stderr)
	}
	for _, target := range []string{"tcp://" + srv.addr, "unix://" + sock, "unixgram://" + gram} {
		for _, shape := range [][]string{
			{"-n", "500", "--window", "4"},
			{"--rate", "2000", "-t", "1s"},
			// Held replies leave on time, not at the reflector's next
			// interval tick (they would be lost to the timeout).
			{"--hold", "2ms", "-n", "20", "--timeout", "500ms"},
			{"--burst", "10", "--period", "50ms", "-n", "50", "--size", "100", "--reply-size", "512K"},
		} {
			if strings.HasPrefix(target, "unixgram") && shape[0] == "--burst" {
				shape[len(shape)-1] = "60000" // a datagram's most is 65000
			}
			args := append([]string{"client", target, "--format", "json"}, shape...)
			r := volleyRun(t, args...)
			if r.code != 0 {
				t.Fatalf("volley %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
			}
			res := parseResult(t, r.stdout)
			checkCounts(t, res)
			c, tp := res.Summary.Counts, res.Summary.Throughput
			if c.Lost != 0 || c.Sent == 0 || res.ReflectorCount != "close" || res.Config.Transport != strings.Split(target, ":")[0] {
				t.Errorf("%s: counts %+v, count from %q, transport %q", strings.Join(shape, " "), c, res.ReflectorCount, res.Config.Transport)
			}
			if tcp := strings.HasPrefix(target, "tcp"); tcp != (res.Config.TCP != nil && res.Config.TCP.MSS > 0 && res.Summary.TCP != nil) {
				t.Errorf("%s: TCP connect %+v, summary TCP %+v: want them on TCP runs only", target, res.Config.TCP, res.Summary.TCP)
			}
			reply := uint64(512 << 10)
			if strings.HasPrefix(target, "unixgram") {
				reply = 60000
			}
			if shape[0] == "--burst" && (c.Sent != 50 || tp.BytesDown != c.Received*reply || tp.BytesUp != c.Sent*100) {
				t.Errorf("bursts: %d sent, %d bytes up, %d down; want 50, 100 bytes up and %d down each", c.Sent, tp.BytesUp, tp.BytesDown, reply)
			}
		}
	}
	// Seed 003's run, read the iperf 2 way: 10 exchanges of 100 bytes up
	// and 512 KiB down every second make 5.00 MBytes an interval.
	r := volleyRun(t, "client", "tcp://"+srv.addr, "--burst", "10", "--period", "1s", "--size", "100", "--reply-size", "512K", "-t", "2s", "--format", "iperf")
	if r.code != 0 || strings.Count(r.stdout, " 5.00 MBytes ") != 2 || !strings.Contains(r.stdout, "  10=") ||
		!strings.Contains(r.stdout, "BB8(f)-PDF: bin(w=100µs):cnt(20)=") || !strings.Contains(r.stdout, "(5.00/95.00/99.70%=") || !strings.Contains(r.stdout, "(icwnd/mss/irtt=") {
		t.Errorf("--format iperf: exit %d, output:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sock, gram} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket file %s is still there after the server stopped: %v", f, err)
		}
	}
	if r := volleyRun(t, "server", "--listen", "127.0.0.1:0", "--unix", filepath.Join(dir, "plain")); r.code != 1 || !strings.Contains(r.stderr, "not a socket") {
		t.Errorf("--unix on a plain file: exit %d, %q", r.code, r.stderr)
	}
}

// TestBusyPoll: both ends spinning on their UDP sockets lose nothing and
// count exactly.
func TestBusyPoll(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--busy-poll", "--tcp=false")
	for _, shape := range [][]string{{"-n", "2000"}, {"--rate", "2000", "-t", "1s"}} {
		// --timeout 10s: a loaded machine's reply is late, not lost.
		r := volleyRun(t, append([]string{"client", srv.addr, "--busy-poll", "--timeout", "10s", "--format", "json"}, shape...)...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		if c := res.Summary.Counts; c.Sent == 0 || c.Lost != 0 || res.ReflectorCount != "close" {
			t.Errorf("%v: counts %+v, count from %q", shape, c, res.ReflectorCount)
		}
	}
	// --rate max: as fast as the client can send; whatever is lost is
	// counted, and the counts add up.
	r := volleyRun(t, "client", srv.addr, "--rate", "max", "-t", "1s", "--format", "json")
	if r.code != 0 {
		t.Fatalf("--rate max: exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if !res.Config.RateMax || res.Summary.Counts.Received == 0 || res.Summary.Counts.Skipped != 0 {
		t.Errorf("--rate max: config %+v, counts %+v", res.Config, res.Summary.Counts)
	}
	if r := volleyRun(t, "client", "unixgram:///nonexistent", "--busy-poll"); r.code != 2 || !strings.Contains(r.stderr, "--busy-poll is for udp://, tcp://, unix://") {
		t.Errorf("--busy-poll over unixgram: exit %d, %q", r.code, r.stderr)
	}
	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// TCP and Unix streams, both ends spinning.
	sock := filepath.Join(t.TempDir(), "v.sock")
	srv = startServer(t, "127.0.0.1:0", "-q", "--busy-poll=tcp,unix", "--unix", sock)
	for _, target := range []string{"tcp://" + srv.addr, "unix://" + sock} {
		r := volleyRun(t, "client", target, "--busy-poll", "-n", "2000", "--timeout", "10s", "--format", "json")
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", target, r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		if c := res.Summary.Counts; c.Sent != 2000 || c.Received != 2000 {
			t.Errorf("%s busy: counts %+v", target, c)
		}
	}
	if r := volleyRun(t, "server", "--listen", "127.0.0.1:0", "--busy-poll=tcp,ipx"); r.code != 2 || !strings.Contains(r.stderr, "--busy-poll=tcp,ipx") {
		t.Errorf("--busy-poll=tcp,ipx: exit %d, %q", r.code, r.stderr)
	}
	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func TestClientInterrupt(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	logFile := filepath.Join(t.TempDir(), "probes.csv")
	c := startMeasuring(t, srv.addr, "-t", "1m", "--rate", "5000", "--log", logFile)
	c.intervals(t, 9) // about a second, for the log's flushes mid-run
	c.cmd.Process.Signal(os.Interrupt)
	if code, _ := c.finish(t, 20*time.Second); code != 0 {
		t.Fatalf("client exit %d after SIGINT, want 0: %s", code, c.errOut.String())
	}
	res := c.result(t)
	if res.Stopped != "interrupted" || res.ReflectorCount != "close" || res.Summary.Counts.Sent == 0 {
		t.Errorf("partial result after SIGINT: stopped %q, count from %q, counts %+v", res.Stopped, res.ReflectorCount, res.Summary.Counts)
	}
	// The probe log is complete: a line per probe sent, and one per late
	// or duplicate reply (a loaded machine's replies come late), each
	// whole.
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	cs := res.Summary.Counts
	if want := cs.Sent + cs.Late + cs.Duplicates; uint64(len(lines)-1) != want || !strings.HasPrefix(lines[0], "flow,seq,status") {
		t.Errorf("log has %d lines after its header for %d probes sent, %d late and %d duplicate replies", len(lines)-1, cs.Sent, cs.Late, cs.Duplicates)
	}
	for _, l := range lines[1:] {
		if strings.Count(l, ",") != strings.Count(lines[0], ",") {
			t.Fatalf("a cut line in the log: %q", l)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"client", "-n", "0"}, "--count 0"},
		{[]string{"client", "-n", "-5"}, "--count -5"},
		{[]string{"client", "--size", "20"}, "the minimum is 64 bytes"},
		{[]string{"client", "--nope"}, "unknown flag: --nope"},
		{[]string{"client", "--format", "xml"}, "--format"},
		{[]string{"client", "--percentiles", "50,abc"}, "--percentiles"},
		{[]string{"client", "--warmup", "soon"}, "--warmup"},
		{[]string{"client", "-t", "-1s"}, "--duration"},
		{[]string{"client", "host:99999"}, "bad port"},
		{[]string{"client", "udp://"}, "no host"},
		{[]string{"client", "gopher://x"}, "unknown scheme"},
		{[]string{"client", "dbus://sessions"}, "want dbus://session, dbus://system or dbus:ADDRESS"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"server", "--idle-timeout", "0s"}, "--idle-timeout"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := volleyRun(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q: want 2 and one line with %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestPortInUse(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := volleyRun(t, "server", "--listen", c.LocalAddr().String())
	if r.code != 1 || !strings.Contains(r.stderr, "address already in use") {
		t.Fatalf("exit %d, stderr %q: want 1 and address already in use", r.code, r.stderr)
	}
}

func TestLoadShapes(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	t.Run("rate", func(t *testing.T) {
		r := volleyRun(t, "client", srv.addr, "--rate", "2000", "-n", "1000", "--warmup", "100", "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		s := res.Summary
		if s.Counts.Sent != 1000 || res.Config.Rate != 2000 || s.SendError == nil || s.RTTFromSchedule == nil {
			t.Fatalf("sent %d at rate %v, send error %v, rtt from schedule %v: want 1000 at 2000/s with both", s.Counts.Sent, res.Config.Rate, s.SendError, s.RTTFromSchedule)
		}
		if s.RTTFromSchedule.Count != int64(s.Counts.Received) {
			t.Errorf("RTT from schedule has %d samples for %d replies", s.RTTFromSchedule.Count, s.Counts.Received)
		}
	})
	t.Run("bursts", func(t *testing.T) {
		// A count, not a duration: on a loaded machine (CI beside other
		// load) a burst's five round trips once outlasted the end of a
		// one-second run, and 47 were sent. The tenth burst of five
		// starts 900 ms in, however slow the round trips.
		r := volleyRun(t, "client", srv.addr, "--burst", "5", "--period", "100ms", "-n", "50", "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		if c, s := res.Summary.Counts, res.Summary; c.Sent != 50 || c.Received != 50 || s.End-s.Start < 900*time.Millisecond {
			t.Fatalf("counts %+v over %v, want 10 bursts of 5 over 900ms or more", c, s.End-s.Start)
		}
	})
	t.Run("threshold", func(t *testing.T) {
		r := volleyRun(t, "client", srv.addr, "--threshold", "1ns", "--warmup", "3", "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		if res.Stopped != "threshold" || res.Threshold == nil || res.Threshold.Seq != 1 || res.Threshold.RTT <= 0 {
			t.Fatalf("stopped %q, hit %+v: want the first measured probe", res.Stopped, res.Threshold)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"--rate", "10", "--send-interval", "1ms"},
			{"--poisson"},
			{"--burst", "3", "--rate", "100"},
			{"--period", "1s"},
			{"--threshold", "0s"},
		} {
			r := volleyRun(t, append([]string{"client", srv.addr}, args...)...)
			if r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("volley client %v: exit %d, stderr %q, want 2 and one line", args, r.code, r.stderr)
			}
		}
	})
}

func TestSizesAndLimits(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--max-size", "200", "--max-hold", "2ms")
	t.Run("asymmetric", func(t *testing.T) {
		r := volleyRun(t, "client", srv.addr, "-l", "100", "--reply-size", "180", "-n", "300", "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		checkCounts(t, res)
		s := res.Summary
		if s.Counts.Received != 300 || s.Throughput.BytesUp != 100*300 || s.Throughput.BytesDown != 180*300 {
			t.Fatalf("received %d, bytes up %d, down %d; want 300, 30000, 54000", s.Counts.Received, s.Throughput.BytesUp, s.Throughput.BytesDown)
		}
	})
	t.Run("limited", func(t *testing.T) {
		r := volleyRun(t, "client", srv.addr, "--reply-size", "512", "--hold", "5ms", "-n", "50", "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		g := res.Config.Granted
		if g.ReplySize != 200 || g.Hold != 2*time.Millisecond || res.Config.ReplySize != 512 {
			t.Fatalf("granted %+v for 512 bytes and 5ms, want 200 bytes and 2ms", g)
		}
		s := res.Summary
		if s.Throughput.BytesDown != 200*s.Counts.Received || s.RTT.Min < 2*time.Millisecond {
			t.Fatalf("bytes down %d for %d replies, RTT min %v: want 200 each and the 2ms hold", s.Throughput.BytesDown, s.Counts.Received, s.RTT.Min)
		}
		text := volleyRun(t, "client", srv.addr, "--reply-size", "512", "-n", "5", "-q=false")
		if !strings.Contains(text.stdout, "granted less than asked: reply size 200 bytes (asked 512)") {
			t.Errorf("text report does not say what was granted:\n%s", text.stdout)
		}
	})
}

func TestServerInterfaceCounters(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "--interface", "lo", "-i", "200ms")
	if r := volleyRun(t, "client", srv.addr, "-t", "1s", "-q"); r.code != 0 {
		t.Fatalf("client exit %d: %s", r.code, r.stderr)
	}
	srv.stop(t, os.Interrupt)
	if out := srv.output(); !strings.Contains(out, ", lo rx ") {
		t.Errorf("interval lines lack lo's counters:\n%s", out)
	}
	r := volleyRun(t, "server", "--listen", "127.0.0.1:0", "--interface", "no-such-if0")
	if r.code != 2 || !strings.Contains(r.stderr, "--interface no-such-if0") {
		t.Errorf("unknown interface: exit %d, stderr %q; want 2 naming it", r.code, r.stderr)
	}
}

func TestOneWay(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-i", "200ms")
	r := volleyRun(t, "client", srv.addr, "--oneway", "--rate", "2000", "-n", "1000", "--warmup", "20", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	s := res.Summary
	if !res.Config.OneWay || s.Counts.Sent != 1000 || s.Counts.Received != 1000 || s.Up.Count != 1000 || s.RTT.Count != 0 {
		t.Fatalf("one-way %v, counts %+v, up count %d, rtt count %d: want 1000 sent and received by the reflector, 1000 delays",
			res.Config.OneWay, s.Counts, s.Up.Count, s.RTT.Count)
	}
	// One-way jitter, from the reflector: a value per probe that came
	// right after the one before it (all but the first, unless some came
	// out of order).
	if s.IPDV.Up.Count == 0 || s.IPDV.Up.Count > 999 || s.IPDV.RTT.Count != 0 || s.Counts.DuplicatesUp != s.Counts.Duplicates {
		t.Errorf("ipdv %+v, counts %+v: want up to 999 IPDV values up and nothing else, and all duplicates up", s.IPDV, s.Counts)
	}
	srv.stop(t, os.Interrupt)
	out := srv.output()
	var recv uint64
	for _, line := range strings.Split(out, "\n") {
		var addr string
		var n, lost uint64
		if _, err := fmt.Sscanf(line, "one-way from %s recv %d lost %d", &addr, &n, &lost); err == nil {
			recv += n
		}
	}
	if recv != 1000 {
		t.Errorf("the reflector's one-way lines add up to %d received, want 1000:\n%s", recv, out)
	}
}

// TestOneWayLastBehindClose puts the last one-way probe behind the Close
// (a relay holds it until the Close has gone): it arrived within the
// timeout, so the run counts it, and loses nothing.
func TestOneWayLastBehindClose(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	const n = 200
	up := func(h wire.Header) testrelay.Action {
		if h.Flags&wire.FlagOneWay != 0 && h.Seq == n {
			return testrelay.Action{Behind: true}
		}
		return testrelay.Action{}
	}
	relay, err := testrelay.Start(srv.addr, up, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	r := volleyRun(t, "client", relay.Addr(), "--oneway", "--rate", "2000", "-n", fmt.Sprint(n), "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	if c := res.Summary.Counts; c.Sent != n || c.Received != n || c.LostUp != 0 || res.ReflectorCount != "close" {
		t.Fatalf("counts %+v from %q; want %d sent and received, none lost up, from the CloseAck", c, res.ReflectorCount, n)
	}
}

func TestParallel(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	r := volleyRun(t, "client", srv.addr, "-P", "4", "-n", "500", "-i", "200ms", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if len(res.Flows) != 4 || res.Summary.Counts.Sent != 2000 || res.Summary.Counts.Received != 2000 {
		t.Fatalf("%d flows, counts %+v: want 4 flows of 500", len(res.Flows), res.Summary.Counts)
	}
	seen := map[string]bool{}
	for _, f := range res.Flows {
		seen[f.LocalAddr] = true
	}
	if len(seen) != 4 {
		t.Errorf("flows share sockets: %v", seen)
	}
	srv.stop(t, os.Interrupt)
	if out := srv.output(); !strings.Contains(out, "sessions opened 4") {
		t.Errorf("the reflector did not see 4 sessions:\n%s", out)
	}
}

func TestWorkers(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "--workers", "3", "-i", "200ms")
	r := volleyRun(t, "client", srv.addr, "-P", "6", "-n", "300", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if res.Summary.Counts.Received != 1800 {
		t.Fatalf("counts %+v, want 6 flows of 300", res.Summary.Counts)
	}
	srv.stop(t, os.Interrupt)
	// 6 × 302 packets: probes, hellos and closes, whichever worker had them.
	if out := srv.output(); !strings.Contains(out, "in 1812 packets") || !strings.Contains(out, "sessions opened 6") {
		t.Errorf("the workers' totals do not add up to 1812 packets and 6 sessions:\n%s", out)
	}
}

func TestWorkloadFile(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	path := filepath.Join(t.TempDir(), "mix.yaml")
	mix := "- {name: small, weight: 3, size: 100, reply_size: 500}\n- {name: big, weight: 1, size: 1400, reply_size: 64, hold: 1ms}\n"
	if err := os.WriteFile(path, []byte(mix), 0o644); err != nil {
		t.Fatal(err)
	}
	r := volleyRun(t, "client", srv.addr, "--workload", path, "--seed", "5", "-n", "400", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if len(res.Workload) != 2 || res.Config.Seed != 5 {
		t.Fatalf("workload results %+v, seed %d", res.Workload, res.Config.Seed)
	}
	small, big := res.Workload[0], res.Workload[1]
	tp := res.Summary.Throughput
	if small.Sent+big.Sent != 400 || small.Sent < big.Sent || tp.BytesUp != 100*small.Sent+1400*big.Sent ||
		tp.BytesDown != 500*small.Received+64*big.Received || big.RTT.Min < time.Millisecond {
		t.Fatalf("entries %+v / %+v, bytes %d up %d down: do not match the mix", small, big, tp.BytesUp, tp.BytesDown)
	}
	// The same seed draws the same mix.
	again := parseResult(t, volleyRun(t, "client", srv.addr, "--workload", path, "--seed", "5", "-n", "400", "--format", "json").stdout)
	if again.Workload[0].Sent != small.Sent {
		t.Errorf("seed 5 drew %d small probes, then %d", small.Sent, again.Workload[0].Sent)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("- {weight: 1, size: 10}\n"), 0o644)
	if r := volleyRun(t, "client", srv.addr, "--workload", bad); r.code != 2 || !strings.Contains(r.stderr, "size 10") {
		t.Errorf("bad workload: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestKeyAndRefusals(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("open sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "127.0.0.1:0", "-q", "--key-file", keyFile, "--max-sessions", "1")
	r := volleyRun(t, "client", srv.addr, "--key", "open sesame", "-n", "200", "--format", "json")
	if r.code != 0 {
		t.Fatalf("right key: exit %d: %s", r.code, r.stderr)
	}
	if res := parseResult(t, r.stdout); res.Summary.Counts.Received != 200 || res.Config.Size != 80 {
		t.Fatalf("right key: counts %+v, size %d; want 200 received in 80-byte probes (header and tag)", res.Summary.Counts, res.Config.Size)
	}
	// The first session is closed: a second one takes its place.
	if r := volleyRun(t, "client", srv.addr, "--key-file", keyFile, "-n", "10"); r.code != 0 {
		t.Fatalf("second session with --max-sessions 1: exit %d: %s", r.code, r.stderr)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--key", "guess"}, 2, "authentication failed at udp://" + srv.addr + ": the reflector has a different key"},
		{nil, 2, "authentication failed at udp://" + srv.addr + ": the reflector requires a key"},
	} {
		r := volleyRun(t, append([]string{"client", srv.addr, "-n", "10"}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("client %v: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	srv.stop(t, os.Interrupt)
	if out := srv.output(); !strings.Contains(out, "auth 2") {
		t.Errorf("the reflector did not count the two unauthenticated hellos:\n%s", out)
	}

	other := startServer(t, "127.0.0.1:0", "-q", "--allow", "192.0.2.0/24")
	r = volleyRun(t, "client", other.addr, "-n", "10")
	if r.code != 1 || !strings.Contains(r.stderr, "refused the session at udp://"+other.addr+": address not allowed") {
		t.Errorf("outside --allow: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestRelayExactCounts puts a relay that drops, duplicates and delays on a
// known schedule between a real client and reflector, and checks the
// client's JSON reports exactly that, per direction.
func TestRelayExactCounts(t *testing.T) {
	t.Parallel() // it mostly waits (see the package doc)
	srv := startServer(t, "127.0.0.1:0", "-q")
	const delay = 3 * time.Millisecond
	up := func(h wire.Header) testrelay.Action {
		return testrelay.Action{Drop: h.Seq%10 == 0, Duplicate: h.Seq%13 == 0}
	}
	down := func(h wire.Header) testrelay.Action {
		a := testrelay.Action{Drop: h.Seq%7 == 0}
		if h.Seq%17 == 0 {
			a.Delay = delay
		}
		return a
	}
	relay, err := testrelay.Start(srv.addr, up, down)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	// Every loss costs a timeout in ping-pong: keep it small, but above
	// what a busy 2-core CI machine stalls a process for (a reply later
	// than the timeout counts as lost, then late: seen at 50ms, and at
	// 200ms while another process took gigabytes of memory; 92 losses
	// at 350ms keep the run well inside volleyRun's minute).
	const n = 400
	r := volleyRun(t, "client", relay.Addr(), "-n", fmt.Sprint(n), "--timeout", "350ms", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	var lostUp, lostDown, dups uint64
	for seq := uint64(1); seq <= n; seq++ {
		switch {
		case seq%10 == 0:
			lostUp++
		case seq%7 == 0:
			lostDown++
		default:
			if seq%13 == 0 {
				dups++
			}
		}
	}
	c := res.Summary.Counts
	if c.Sent != n || c.LostUp != lostUp || c.LostDown != lostDown || c.Duplicates != dups || c.Reordered != 0 || c.Late != 0 {
		t.Fatalf("counts %+v; want lost up %d, lost down %d, duplicates %d exactly", c, lostUp, lostDown, dups)
	}
	if res.ReflectorCount != "close" || res.Summary.RTT.Max < delay {
		t.Fatalf("count from %q, RTT max %v: want close and the %v delay seen", res.ReflectorCount, res.Summary.RTT.Max, delay)
	}
	// A second client reaches the reflector from the relay's same address
	// and port: it must get a session of its own, not the closed one.
	again := volleyRun(t, "client", relay.Addr(), "-n", "6", "--format", "json") // below every rule
	if c := parseResult(t, again.stdout).Summary.Counts; again.code != 0 || c.Received != 6 {
		t.Fatalf("second session from the same address: exit %d, counts %+v, stderr %s", again.code, c, again.stderr)
	}
}

// TestRelayDuplicatesAndReordering: a relay duplicates and reorders
// probes and replies on a known schedule, each direction its own, and the
// client tells them apart by direction exactly; every interval line adds
// up. The reordering holds a message until the next one has passed, so
// it does not depend on timing.
func TestRelayDuplicatesAndReordering(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	up := func(h wire.Header) testrelay.Action {
		return testrelay.Action{Duplicate: h.Seq%10 == 1, Behind: h.Seq%10 == 5}
	}
	down := func(h wire.Header) testrelay.Action {
		return testrelay.Action{Duplicate: h.Seq%10 == 2, Behind: h.Seq%10 == 8}
	}
	relay, err := testrelay.Start(srv.addr, up, down)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	// Two in flight: the probe after a held one leaves while it is held
	// (its predecessor's reply frees the window), and so does the reply
	// after a held reply. Nothing is lost, so nothing waits a timeout.
	const n = 1000
	r := volleyRun(t, "client", relay.Addr(), "-n", fmt.Sprint(n), "--window", "2", "-i", "100ms", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	const each = n / 10
	c := res.Summary.Counts
	if c.Sent != n || c.Received != n || c.Late != 0 ||
		c.Duplicates != 2*each || c.DuplicatesUp != each || c.DuplicatesDown != each ||
		c.Reordered != 2*each || c.ReorderedUp != each || c.ReorderedDown != each {
		t.Fatalf("counts %+v; want %d sent and received, %d duplicates and %d reordered each way exactly", c, n, each, each)
	}
}

var (
	fastOnce   sync.Once
	fastVolley string
	fastErr    error
)

// buildFast builds volley without the race detector, for tests that need
// its real speed.
func buildFast(t *testing.T) string {
	t.Helper()
	fastOnce.Do(func() {
		fastVolley = filepath.Join(filepath.Dir(volley), "volley-fast")
		out, err := exec.Command("go", "build", "-o", fastVolley, "../cmd/volley").CombinedOutput()
		if err != nil {
			fastErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if fastErr != nil {
		t.Fatal(fastErr)
	}
	return fastVolley
}

// TestFlood sends random and mutated datagrams at a reflector while a
// session runs at a fixed rate: the session loses nothing, and every
// datagram of the flood is dropped and counted once. VOLLEY_FLOOD sets how
// many (default a million).
func TestFlood(t *testing.T) {
	total := 1_000_000
	if v := os.Getenv("VOLLEY_FLOOD"); v != "" {
		if _, err := fmt.Sscan(v, &total); err != nil {
			t.Fatalf("VOLLEY_FLOOD=%q: %v", v, err)
		}
	}
	bin := buildFast(t)
	cmd := exec.Command(bin, "server", "--listen", "127.0.0.1:0", "-i", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatal("server printed nothing")
	}
	addr := strings.TrimPrefix(lines.Text(), "listening on udp://")

	// The legitimate session runs for as long as the flood.
	client := exec.Command(bin, "client", addr, "--rate", "500", "-t", "1h", "-i", "0", "--format", "json", "--timeout", "2s")
	var clientOut bytes.Buffer
	client.Stdout, client.Stderr = &clientOut, os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer client.Process.Kill()
	time.Sleep(500 * time.Millisecond) // let it open its session

	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 512)
	sent := 0
	start := time.Now()
	for sent < total {
		// Bursts of 500 every 5ms: 100k datagrams/s at most, within what
		// one reflector thread takes, so the kernel drops none.
		for i := 0; i < 500 && sent < total; i++ {
			var msg []byte
			switch rng.IntN(3) {
			case 0: // noise of any length
				msg = buf[:rng.IntN(200)]
				for j := range msg {
					msg[j] = byte(rng.Uint32())
				}
			default: // a probe with a forged token, then mutated
				msg = buf[:wire.HeaderLen+rng.IntN(100)]
				h := wire.Header{Type: wire.TypeProbe, Token: rng.Uint64(), Nonce: rng.Uint64(), Seq: rng.Uint64()}
				_ = h.Encode(msg)
				for k := rng.IntN(4); k > 0; k-- {
					msg[rng.IntN(len(msg))] = byte(rng.Uint32())
				}
				var d wire.Header
				if d.Decode(msg) == nil && d.Type == wire.TypeHello {
					msg[3] = byte(wire.TypeReply) // a Hello would be answered, not dropped
				}
			}
			if _, err := c.Write(msg); err != nil {
				t.Fatalf("flood write %d: %v", sent, err)
			}
			sent++
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("flooded %d datagrams in %v", sent, time.Since(start))
	client.Process.Signal(os.Interrupt) // the session ends as a user ends it
	if err := client.Wait(); err != nil {
		t.Fatalf("client: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // the reflector catches up
	cmd.Process.Signal(os.Interrupt)
	var totals string
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "--- totals") {
			totals = lines.Text()
		}
	}
	cmd.Wait()
	var dropped int
	if i := strings.Index(totals, "dropped "); i < 0 {
		t.Fatalf("no drop count in the totals %q", totals)
	} else if _, err := fmt.Sscanf(totals[i:], "dropped %d", &dropped); err != nil {
		t.Fatal(err)
	}
	if dropped != sent {
		t.Errorf("the reflector dropped %d datagrams of %d sent: %s", dropped, sent, totals)
	}
	res := parseResult(t, clientOut.String())
	checkCounts(t, res)
	if c := res.Summary.Counts; c.Received == 0 || c.Lost != 0 || res.ReflectorCount != "close" {
		t.Errorf("the session during the flood: %+v, count from %q; want nothing lost", c, res.ReflectorCount)
	}
}

func TestMaxDuration(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--max-duration", "1s")
	r := volleyRun(t, "client", srv.addr, "-t", "10s", "--format", "json")
	want := "the reflector ended the session at udp://" + srv.addr
	reason := "the session reached the reflector's longest duration (its --max-duration)"
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, reason) {
		t.Fatalf("exit %d, stderr %q: want 1, %q and %q", r.code, r.stderr, want, reason)
	}
	res := parseResult(t, r.stdout)
	if res.Stopped != "reflector-ended" || res.Summary.Counts.Received == 0 || res.Summary.End > 3*time.Second {
		t.Fatalf("stopped %q after %v with %+v", res.Stopped, res.Summary.End, res.Summary.Counts)
	}
	// The text report: said once, on stderr, and not as a refusal.
	r = volleyRun(t, "client", srv.addr, "-t", "10s")
	if r.code != 1 || strings.Count(r.stdout+r.stderr, reason) != 1 || !strings.Contains(r.stderr, reason) || strings.Contains(r.stdout+r.stderr, "refused") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant 1 and %q once, on stderr", r.code, r.stdout, r.stderr, reason)
	}
}

// TestClockSameHost: a client and reflector on one host read one clock,
// so through a relay that delays probes 1ms and replies 3ms the offset is
// exactly 0 and the one-way delays are measured (not estimated, as before,
// when the asymmetry was taken for an offset of -1ms and the "corrected"
// delays erased it).
func TestClockSameHost(t *testing.T) {
	if clock.NewSystem().Identity() == 0 {
		t.Skip("skipping: this kernel has no boot ID (/proc/sys/kernel/random/boot_id): clocks have no identity, offsets are estimated")
	}
	const up, down = time.Millisecond, 3 * time.Millisecond
	var r run
	// A step between the reflector's start and the client's gives them
	// two clocks (see unstepped).
	unstepped(t, "the reflector's clock and the client's are two", func() {
		srv := startServer(t, "127.0.0.1:0", "-q")
		defer srv.stop(t, os.Interrupt)
		relay, err := testrelay.Start(srv.addr,
			func(wire.Header) testrelay.Action { return testrelay.Action{Delay: up} },
			func(wire.Header) testrelay.Action { return testrelay.Action{Delay: down} })
		if err != nil {
			t.Fatal(err)
		}
		defer relay.Close()
		r = volleyRun(t, "client", relay.Addr(), "-n", "100", "--timeout", "350ms", "--format", "json")
	})
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	co := res.ClockOffset
	if co == nil || co.Method != "same-clock" || co.Offset != 0 || co.EstimatedUp != nil || co.EstimatedDown != nil {
		t.Fatalf("clock offset %+v, want same-clock, offset exactly 0, no estimated delays", co)
	}
	// The relay adds at least its delay each way, however loaded the
	// machine; measured delays cannot be below it.
	if s := res.Summary; s.Up.Count == 0 || s.Up.Min < up || s.Down.Min < down {
		t.Fatalf("up min %v, down min %v: want at least the relay's %v and %v", s.Up.Min, s.Down.Min, up, down)
	}
}
