package e2e

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// readCSV reads a CSV log into rows of named fields.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, name := range rows[0] {
			m[name] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func field(t *testing.T, row map[string]string, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(row[name], 10, 64)
	if err != nil {
		t.Fatalf("field %s of %v: %v", name, row, err)
	}
	return v
}

// stampServer starts a server with its --log at srvLog and returns its
// address and a function that stops it and returns its output.
type stampServer func(srvLog string) (addr string, stop func() string)

// stampedRun is one client run against a fresh server, with both logs.
type stampedRun struct {
	r              run
	cliLog, srvLog string
	srvOut         string
}

// runStamped runs a ping-pong client with n probes (in network namespace
// ns) against a server from start, then stops the server, again while
// the wall clock steps under it (unstepped): the kernel's stamps read the
// wall clock, the processes' own times keep the wall time of their start.
func runStamped(t *testing.T, ns string, n int, start stampServer) stampedRun {
	t.Helper()
	var sr stampedRun
	unstepped(t, "kernel and user stamps cannot be compared", func() {
		dir := t.TempDir()
		sr = stampedRun{cliLog: filepath.Join(dir, "client.csv"), srvLog: filepath.Join(dir, "server.csv")}
		addr, stop := start(sr.srvLog)
		sr.r = volleyRunIn(t, ns, "client", addr, "-n", fmt.Sprint(n), "--reply-size", "100", "--log", sr.cliLog, "--format", "json")
		sr.srvOut = stop()
	})
	return sr
}

// checkStamps runs a ping-pong client (in network namespace ns) with
// kernel stamps at both ends against a server from start (runStamped),
// and checks the stamps order as the packets went: user T1 before the
// kernel's, the kernel's receive before the reflector's read, and so on.
func checkStamps(t *testing.T, ns string, start stampServer) {
	t.Helper()
	const n = 300
	sr := runStamped(t, ns, n, start)
	r, cliLog, srvLog := sr.r, sr.cliLog, sr.srvLog
	if r.code != 0 {
		t.Fatalf("client exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	ts, k := res.Timestamps, res.Summary.Kernel
	if ts == nil || ts.Client != "kernel" || ts.Reflector != "kernel" || k == nil {
		t.Fatalf("timestamps %+v, kernel figures %+v: want kernel stamps at both ends", ts, k)
	}
	if k.RTT.Count != n || k.Up.Count != n || k.Response.Count != n || k.Down.Count != n {
		t.Errorf("kernel counts rtt %d up %d response %d down %d: want %d each (the last reply's T3k with the CloseAck)",
			k.RTT.Count, k.Up.Count, k.Response.Count, k.Down.Count, n)
	}
	// Each probe's kernel round trip lies inside its user-space one.
	if k.RTT.Max > res.Summary.RTT.Max || k.SendStack.Min < 0 || k.RecvStack.Min < 0 {
		t.Errorf("kernel rtt max %v above the user one %v, or a stack time below zero (send %v, recv %v)",
			k.RTT.Max, res.Summary.RTT.Max, k.SendStack.Min, k.RecvStack.Min)
	}
	rows := readCSV(t, cliLog)
	if len(rows) != n {
		t.Fatalf("client log: %d lines, want %d", len(rows), n)
	}
	for i, row := range rows {
		if row["status"] != "received" {
			t.Fatalf("log line %v: want received", row)
		}
		order := []string{"t1_ns", "t1_kernel_ns", "t4_kernel_ns", "t4_ns"}
		if field(t, row, "t3_kernel_ns") < field(t, row, "t3_ns") {
			t.Errorf("line %d: the reflector's kernel sent the reply before it read its clock: %v", i, row)
		}
		if field(t, row, "t2_kernel_ns") > field(t, row, "t2_ns") {
			t.Errorf("line %d: the reflector's kernel received the probe after the reflector read it: %v", i, row)
		}
		for j := 1; j < len(order); j++ {
			if field(t, row, order[j-1]) > field(t, row, order[j]) {
				t.Errorf("line %d: %s after %s: %v", i, order[j-1], order[j], row)
			}
		}
	}
	out := sr.srvOut
	if !strings.Contains(out, fmt.Sprintf("response (kernel stamps) over %d replies", n)) {
		t.Errorf("server's totals lack the kernel response line:\n%s", out)
	}
	srows := readCSV(t, srvLog)
	if len(srows) != n {
		t.Fatalf("server log: %d lines, want %d", len(srows), n)
	}
	for _, row := range srows {
		if field(t, row, "t2_kernel_ns") > field(t, row, "t2_ns") || field(t, row, "t3_kernel_ns") < field(t, row, "t3_ns") ||
			field(t, row, "response_kernel_ns") < field(t, row, "response_ns") {
			t.Fatalf("server log line %v: want the kernel's stamps outside the reflector's own times", row)
		}
	}
}

// TestKernelTimestamps: on loopback, both ends take the kernel's stamps
// by default, the reports and both logs carry them, and they fall where
// the packets went. --timestamps user goes without; an explicit mode a
// transport or an interface cannot give is an error naming it.
func TestKernelTimestamps(t *testing.T) {
	checkStamps(t, "", func(srvLog string) (string, func() string) {
		srv := startServer(t, "127.0.0.1:0", "-q", "--log", srvLog)
		return srv.addr, func() string {
			if err := srv.stop(t, os.Interrupt); err != nil {
				t.Fatalf("server exit: %v", err)
			}
			return srv.output()
		}
	})

	srv := startServer(t, "127.0.0.1:0", "-q")
	r := volleyRun(t, "client", srv.addr, "-n", "50", "--reply-size", "100", "--timestamps", "user", "--format", "json")
	if res := parseResult(t, r.stdout); res.Timestamps != nil || res.Summary.Kernel != nil || res.Config.Timestamps != "user" {
		t.Errorf("--timestamps user: timestamps %+v, kernel %+v", res.Timestamps, res.Summary.Kernel)
	}
	// Warm-up probes' transmit stamps are read and dropped: left on the
	// socket, they filled a small receive buffer and the replies after
	// the warm-up were lost.
	r = volleyRun(t, "client", srv.addr, "-n", "100", "--warmup", "500", "--buffer", "32K", "--format", "json")
	if res := parseResult(t, r.stdout); r.code != 0 || res.Summary.Counts.Received != 100 || res.Summary.Kernel == nil {
		t.Errorf("kernel stamps after a warm-up: exit %d, counts %+v, %s", r.code, res.Summary.Counts, r.stderr)
	}
	r = volleyRun(t, "client", "tcp://"+srv.addr, "-n", "10", "--timestamps", "kernel")
	if r.code != 2 || !strings.Contains(r.stderr, "--timestamps kernel: tcp has no stamps per message") {
		t.Errorf("--timestamps kernel over TCP: exit %d, %q", r.code, r.stderr)
	}
	r = volleyRun(t, "client", srv.addr, "-n", "10", "--timestamps", "hardware")
	if r.code != 2 || !strings.Contains(r.stderr, "lo cannot stamp in hardware") || !strings.Contains(r.stderr, "--timestamps kernel") {
		t.Errorf("--timestamps hardware on loopback: exit %d, %q", r.code, r.stderr)
	}
	r = volleyRun(t, "client", srv.addr, "-n", "10", "--timestamps", "nanos")
	if r.code != 2 || !strings.Contains(r.stderr, `--timestamps "nanos"`) {
		t.Errorf("--timestamps nanos: exit %d, %q", r.code, r.stderr)
	}
}

// TestTimestampsVeth: the same between two network namespaces joined by
// a veth pair, which the test creates (as root, with ip(8)).
func TestTimestampsVeth(t *testing.T) {
	nsA, nsB := vethNamespaces(t, "vly", 213)
	checkStamps(t, nsA, func(srvLog string) (string, func() string) {
		srv := startServerCmd(t, exec.Command("ip", "netns", "exec", nsB, volley, "server", "--listen", "10.213.0.2:7766", "-q", "--tcp=false", "--log", srvLog))
		return srv.addr, func() string {
			if err := srv.stop(t, syscall.SIGINT); err != nil {
				t.Fatalf("server exit: %v\n%s", err, srv.output())
			}
			return srv.output()
		}
	})
}
