package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testsock"
)

// startBus starts a private dbus-daemon (never the user's session bus),
// stopped by its PID when the test ends, and returns its address and
// process.
func startBus(t *testing.T) (string, *os.Process) {
	t.Helper()
	_, err := exec.LookPath("dbus-daemon")
	if err == nil {
		_, err = exec.LookPath("dbus-send")
	}
	require(t, "dbus", err)
	// --address: the session configuration's listen address leaves a
	// socket file in /tmp when the daemon is killed; this one goes with
	// the test's directory.
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
		"--address=unix:dir="+testsock.ShortDir(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard // it says it may not raise its descriptor limit
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return addr, cmd.Process
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon printed no address within 10s")
	}
	return "", nil
}

// TestDBus: a reflector on a private bus answers dbus-send and volley
// clients of every load shape, one-way included, and prints dping's lines.
func TestDBus(t *testing.T) {
	bus, _ := startBus(t)
	srv := startServer(t, "127.0.0.1:0", "-i", "0", "--dbus", bus, "--format", "dping", "--report-every", "500")
	srv.waitFor(t, "listening on dbus")
	target := "dbus:" + bus

	out, err := exec.Command("dbus-send", "--bus="+bus, "--print-reply", "--dest=net.volley.Reflector",
		"/net/volley/Reflector", "net.volley.Reflector1.Probe", "array:byte:1,2,3").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "01 02 03") {
		t.Errorf("dbus-send Probe 1,2,3: %v\n%s", err, out)
	}
	out, err = exec.Command("dbus-send", "--bus="+bus, "--print-reply", "--dest=net.volley.Reflector",
		"/net/volley/Reflector", "org.freedesktop.DBus.Introspectable.Introspect").CombinedOutput()
	for _, want := range []string{`<method name="Probe">`, `<method name="Open">`, `<method name="Close">`, `<signal name="OneWay">`} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("introspection lacks %s: %v\n%s", want, err, out)
		}
	}

	// Ping-pong with dping's default count.
	r := volleyRun(t, "client", target, "--format", "json")
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if c := res.Summary.Counts; r.code != 0 || c.Sent != 1000 || c.Received != 1000 || res.Summary.Up.Count != 1000 || res.Summary.Down.Count != 1000 {
		t.Errorf("ping-pong: exit %d, counts %+v, up %d down %d: want 1000 each way (%s)", r.code, c, res.Summary.Up.Count, res.Summary.Down.Count, r.stderr)
	}
	for _, tt := range []struct {
		name string
		args []string
		sent uint64
	}{
		{"window", []string{"--window", "4", "-n", "400"}, 400},
		{"rate", []string{"--rate", "2000", "-n", "400"}, 400},
		{"burst", []string{"--burst", "10", "--period", "20ms", "-n", "100"}, 100},
		{"sizes and hold", []string{"--size", "200", "--reply-size", "3000", "--hold", "1ms", "-n", "100"}, 100},
		{"parallel", []string{"-P", "2", "-n", "200"}, 400},
		{"nice", []string{"--nice", "3", "-n", "100"}, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := volleyRun(t, append([]string{"client", target, "--format", "json"}, tt.args...)...)
			res := parseResult(t, r.stdout)
			checkCounts(t, res)
			if c := res.Summary.Counts; r.code != 0 || c.Sent != tt.sent || c.Received != tt.sent || c.Reordered != 0 {
				t.Errorf("exit %d, counts %+v: want %d sent and received, none reordered (%s)", r.code, c, tt.sent, r.stderr)
			}
		})
	}
	r = volleyRun(t, "client", target, "--size", "200", "--reply-size", "3000", "-n", "10", "--format", "json")
	if res := parseResult(t, r.stdout); res.Summary.Throughput.BytesDown != 10*3000 || res.Summary.Throughput.BytesUp != 10*200 {
		t.Errorf("sizes: %d bytes down, %d up; want 30000 and 2000", res.Summary.Throughput.BytesDown, res.Summary.Throughput.BytesUp)
	}

	// One-way, as dping's fire-and-forget: signals, counted by the
	// reflector.
	r = volleyRun(t, "client", target, "--oneway", "--rate", "2000", "-n", "1000", "--format", "json")
	res = parseResult(t, r.stdout)
	if c := res.Summary.Counts; r.code != 0 || c.Sent != 1000 || c.Received != 1000 || res.Summary.Up.Count != 1000 {
		t.Errorf("one-way: exit %d, counts %+v: want the reflector to count 1000 (%s)", r.code, c, r.stderr)
	}
	r = volleyRun(t, "client", target, "-n", "100", "--format", "dping")
	for _, want := range []string{"Dping->dpong statistics: LATENCY min ", "dping<-dpong statistics: LATENCY min ",
		"Statistics for the whole roundtrip:\nMESSAGES recv 100 lost 0 LATENCY min "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("--format dping lacks %q:\n%s", want, r.stdout)
		}
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Errorf("server exit: %v", err)
	}
	if n := strings.Count(srv.output(), "MESSAGES recv 500 lost 0 LATENCY min "); n != 2 {
		t.Errorf("server printed %d dpong lines for 1000 one-way messages at --report-every 500, want 2:\n%s", n, srv.output())
	}
}

// TestDBusIntrospect: the reflector's object can be found and read with
// the stock D-Bus tools (systemd's busctl, GLib's gdbus), which check the
// introspection data and walk the object tree from "/". Each tool missing
// skips its part, unless VOLLEY_REQUIRE lists dbustools.
func TestDBusIntrospect(t *testing.T) {
	bus, _ := startBus(t)
	srv := startServer(t, "127.0.0.1:0", "-q", "--dbus", bus)
	srv.waitFor(t, "listening on dbus")
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"busctl tree", []string{"busctl", "--address=" + bus, "tree", "net.volley.Reflector"},
			[]string{"/net\n", "/net/volley\n", "/net/volley/Reflector\n"}},
		{"busctl introspect", []string{"busctl", "--address=" + bus, "introspect", "net.volley.Reflector", "/net/volley/Reflector"},
			[]string{"net.volley.Reflector1 ", ".Probe ", ".OneWay ", ".GetMachineId "}},
		{"gdbus introspect", []string{"gdbus", "introspect", "--address", bus, "--dest", "net.volley.Reflector", "--object-path", "/", "--recurse"},
			[]string{"node /net/volley/Reflector {", "interface net.volley.Reflector1 {", "Probe(in  ay message,", "OneWay(ay message);"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := exec.LookPath(tt.args[0])
			require(t, "dbustools", err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, tt.args[0], tt.args[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(tt.args, " "), err, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s lacks %q:\n%s", strings.Join(tt.args, " "), want, out)
				}
			}
		})
	}
	// The whole bus, as busctl lists it: the reflector's tree among the
	// bus's own.
	t.Run("busctl tree, every name", func(t *testing.T) {
		_, err := exec.LookPath("busctl")
		require(t, "dbustools", err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "busctl", "--address="+bus, "tree").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Service net.volley.Reflector:") || !strings.Contains(string(out), "/net/volley/Reflector\n") {
			t.Errorf("busctl --address=%s tree: %v, want the reflector's object:\n%s", bus, err, out)
		}
	})
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Errorf("server exit: %v", err)
	}
}

// TestDBusGone: a bus that is missing is an error naming its address; a
// bus that goes away mid-run ends the run with its partial results, and
// the reflector says it no longer answers there.
func TestDBusGone(t *testing.T) {
	bus, proc := startBus(t)
	r := volleyRun(t, "client", "dbus:unix:path=/nonexistent/volley-bus", "-n", "10")
	if r.code != 2 || !strings.Contains(r.stderr, "unix:path=/nonexistent/volley-bus") {
		t.Errorf("missing bus: exit %d, %q: want 2 and the address", r.code, r.stderr)
	}
	r = volleyRun(t, "client", "dbus:"+bus+"#net.volley.Nobody", "-n", "10")
	if r.code != 2 || !strings.Contains(r.stderr, "no connection on the bus has that name") {
		t.Errorf("nobody on the bus: exit %d, %q", r.code, r.stderr)
	}
	srv := startServer(t, "127.0.0.1:0", "-q", "--dbus", bus)
	srv.waitFor(t, "listening on dbus")
	c := startMeasuring(t, "dbus:"+bus, "-t", "30s")
	proc.Kill() // the bus, started by this test
	if code, _ := c.finish(t, 20*time.Second); code != 1 {
		t.Errorf("client exit %d after the bus went away, want 1: %s", code, c.errOut.String())
	}
	res := c.result(t)
	if res.Summary.Counts.Received == 0 || !strings.Contains(res.Error, "the bus closed the connection") {
		t.Errorf("partial result: counts %+v, error %q", res.Summary.Counts, res.Error)
	}
	if err := srv.stop(t, os.Interrupt); err == nil {
		t.Error("server exit 0 after its bus went away, want an error")
	}
	if out := srv.output(); !strings.Contains(out, fmt.Sprintf("D-Bus %s: the bus closed the connection: no longer answering there", bus)) {
		t.Errorf("server did not say its bus went away:\n%s", out)
	}
}

// waitFor waits until the server has printed a line with s.
func (s *server) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		ok := strings.Contains(s.out.String(), want)
		s.mu.Unlock()
		if ok {
			return
		}
	}
	t.Fatalf("the server did not print %q within 10s", want)
}
