package e2e

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// echoService is an RFC 862 UDP echo service written apart from volley,
// in a few lines of Python: it prints its port, then returns every
// datagram to its sender.
const echoService = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    data, peer = s.recvfrom(65535)
    s.sendto(data, peer)
`

// startEcho starts the Python echo service on 127.0.0.1 and returns its
// port; it is killed (by its PID) when the test ends. Without python3 the
// test skips, unless VOLLEY_REQUIRE lists python3.
func startEcho(t *testing.T) int {
	t.Helper()
	py, err := exec.LookPath("python3")
	require(t, "python3", err)
	cmd := exec.Command(py, "-c", echoService)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the echo service printed no port: %v", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the echo service's first line %q is not a port: %v", line, err)
	}
	return port
}

// TestEchoService: volley measures an echo service it did not write: every
// probe comes back, the round trip is measured, nothing the echo cannot
// tell is reported (no up, down or response, no loss by direction), and
// the text says why.
func TestEchoService(t *testing.T) {
	target := "echo://127.0.0.1:" + strconv.Itoa(startEcho(t))
	log := filepath.Join(t.TempDir(), "echo.csv")
	r := volleyRun(t, "client", target, "-n", "200", "--format", "json", "--log", log)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	s := res.Summary
	if s.Counts.Sent != 200 || s.Counts.Received != 200 || s.Counts.Errors != 0 || s.RTT.Count != 200 {
		t.Errorf("sent %d, received %d, errors %d, %d RTTs: want 200, 200, 0, 200", s.Counts.Sent, s.Counts.Received, s.Counts.Errors, s.RTT.Count)
	}
	if s.Up.Count != 0 || s.Down.Count != 0 || s.Response.Count != 0 || s.IPDV.Up.Count != 0 || s.IPDV.Down.Count != 0 {
		t.Errorf("up %d, down %d, response %d, ipdv up %d, down %d values: want none (an echo has no times of its own)",
			s.Up.Count, s.Down.Count, s.Response.Count, s.IPDV.Up.Count, s.IPDV.Down.Count)
	}
	if p := res.Config.Peer; p == nil || p.Protocol != "echo" || p.OneWay || p.Directions {
		t.Errorf("config.peer = %+v, want protocol echo, no one-way times, no directions", p)
	}
	if said := res.PeerResults; said == nil || said.Note == "" {
		t.Errorf("peer_results = %+v, want a note", said)
	}
	if res.Config.Target != target || res.ClockOffset != nil {
		t.Errorf("target %q, clock offset %+v: want %q and none", res.Config.Target, res.ClockOffset, target)
	}
	// The probe log has the round trips alone, and volley report rebuilds
	// them: no up or down made of the missing times.
	r = volleyRun(t, "report", log, "--format", "json")
	if r.code != 0 {
		t.Fatalf("volley report of the echo run's log: exit %d: %s", r.code, r.stderr)
	}
	if rb := parseResult(t, r.stdout).Summary; rb.RTT.Count != 200 || rb.Up.Count != 0 || rb.Down.Count != 0 || rb.RTT.Max != s.RTT.Max {
		t.Errorf("rebuilt from the log: %d RTTs (max %v), %d up, %d down; want 200 (max %v), 0, 0", rb.RTT.Count, rb.RTT.Max, rb.Up.Count, rb.Down.Count, s.RTT.Max)
	}

	r = volleyRun(t, "client", target, "-n", "50")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{target + " (UDP echo) from", "sent 50, received 50, lost 0 (0.000%: direction unknown)", "no times of its own and no count", "\nrtt "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text report has no %q:\n%s", want, r.stdout)
		}
	}
	for _, not := range []string{"\nup ", "\ndown ", "\nresponse ", "0 up, 0 down", "loss per direction is"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("the text report has %q:\n%s", not, r.stdout)
		}
	}
}

// TestForeignTargetErrors: a foreign target that is not whole, or a flag
// its peer cannot honour, is a usage error (exit 2) that says what was
// wrong, on one line.
func TestForeignTargetErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "connect://127.0.0.1"}, "no port (want connect://HOST:PORT"},
		{[]string{"client", "stamp://"}, "no host (want stamp://HOST[:PORT])"},
		{[]string{"client", "echo://"}, "no host (want echo://HOST[:PORT])"},
		{[]string{"client", "echo://127.0.0.1", "--oneway"}, "--oneway is for volley reflectors"},
		{[]string{"client", "echo://127.0.0.1", "--stamp-ssid", "1"}, "--stamp-ssid is for stamp:// targets"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := volleyRun(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q: want 2 and one line with %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}
