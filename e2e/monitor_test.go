package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/volley-net/volley/internal/testrelay"
	"github.com/volley-net/volley/internal/wire"
)

// monitorProc is a running `volley monitor` with its metrics address.
type monitorProc struct {
	cmd     *exec.Cmd
	metrics string // http://HOST:PORT/metrics
}

// startMonitor runs `volley monitor args...` with --metrics-listen on a
// free loopback port and waits for the line that gives its address.
func startMonitor(t *testing.T, args ...string) *monitorProc {
	t.Helper()
	cmd := exec.Command(volley, append([]string{"monitor", "--metrics-listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if u, ok := strings.CutPrefix(lines.Text(), "metrics on "); ok {
				found <- u
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-found:
		return &monitorProc{cmd: cmd, metrics: u}
	case <-time.After(20 * time.Second):
		t.Fatal("volley monitor printed no metrics address within 20s")
	}
	return nil
}

// scrape reads the metrics at url into families by name.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// value returns the value of the counter or gauge name whose labels
// include want, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMonitorRelayExactLoss: a monitor measures through a relay that
// drops every 10th probe on the way up and every 7th reply on the way
// down; the exported lost-up and lost-down counters equal the relay's
// drops exactly, as volley client's counts do (TestRelayExactCounts).
func TestMonitorRelayExactLoss(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	up := func(h wire.Header) testrelay.Action { return testrelay.Action{Drop: h.Seq%10 == 0} }
	down := func(h wire.Header) testrelay.Action { return testrelay.Action{Drop: h.Seq%7 == 0} }
	relay, err := testrelay.Start(srv.addr, up, down)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	// One round of 2s at 200 probes/s: 400 probes on a fixed schedule,
	// then the session closes and the counts are final.
	const rate, n = 200, 400
	m := startMonitor(t, "udp://"+relay.Addr(), "--rate", fmt.Sprint(rate), "--duration", "2s", "--every", "1h",
		"--timeout", "300ms", "--interval", "500ms", "-q")
	target := map[string]string{"target": "udp://" + relay.Addr()}
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams = scrape(t, m.metrics)
		sent, _ := value(fams, "volley_probes_sent_total", target)
		recv, _ := value(fams, "volley_probes_received_total", target)
		lost := 0.0
		for _, d := range []string{"up", "down"} {
			v, _ := value(fams, "volley_probes_lost_total", map[string]string{"target": target["target"], "direction": d})
			lost += v
		}
		if sent == n && recv+lost == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: sent %v, received %v, lost %v; want %d sent, all accounted for", sent, recv, lost, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var lostUp, lostDown float64
	for seq := 1; seq <= n; seq++ {
		switch {
		case seq%10 == 0:
			lostUp++
		case seq%7 == 0:
			lostDown++
		}
	}
	gotUp, _ := value(fams, "volley_probes_lost_total", map[string]string{"target": target["target"], "direction": "up"})
	gotDown, _ := value(fams, "volley_probes_lost_total", map[string]string{"target": target["target"], "direction": "down"})
	rtts, _ := value(fams, "volley_rtt_seconds", target)
	recv, _ := value(fams, "volley_probes_received_total", target)
	if gotUp != lostUp || gotDown != lostDown || rtts != recv {
		t.Fatalf("lost up %v, down %v, RTTs in the histogram %v; want %v, %v and one per reply received (%v)", gotUp, gotDown, rtts, lostUp, lostDown, recv)
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Wait(); err != nil {
		t.Fatalf("volley monitor on SIGTERM: %v, want exit 0", err)
	}
}

// writeFile writes s to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMonitorOnce: --once measures every target at the same time for
// --duration and reports each (JSON: an array of target, labels and
// result); a target that does not answer makes the exit 1, and the
// others are still reported.
func TestMonitorOnce(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	dead := fmt.Sprintf("udp://127.0.0.1:%d", freePort(t))
	r := volleyRun(t, "monitor", "udp://"+srv.addr, "tcp://"+srv.addr, dead, "--once", "--duration", "1s", "--rate", "50", "--format", "json")
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 3 targets did not answer: "+dead) {
		t.Fatalf("exit %d, stderr %q; want 1 and the silent target named", r.code, r.stderr)
	}
	out := parseOnce(t, r.stdout)
	if len(out) != 3 {
		t.Fatalf("%d results, want 3: %s", len(out), r.stdout)
	}
	for _, o := range out {
		if o.Target == dead {
			if o.Error == "" {
				t.Errorf("%s: no error, want why it did not answer", o.Target)
			}
			continue
		}
		if o.Result == nil {
			t.Fatalf("%s: no result (%s)", o.Target, o.Error)
		}
		if c := o.Result.Summary.Counts; c.Sent != 50 || c.Received != 50 || o.Result.Summary.RTT.Count != 50 {
			t.Errorf("%s: counts %+v, %d RTTs; want 50 sent, received and timed", o.Target, c, o.Result.Summary.RTT.Count)
		}
	}
}

// TestMonitorJSONLines: without --once, --format jsonl writes a line per
// target per interval as the monitor runs, each naming its target and
// labels; SIGTERM ends it with exit 0.
func TestMonitorJSONLines(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	file := writeFile(t, t.TempDir(), "targets.yml", fmt.Sprintf("targets:\n  - name: here\n    url: udp://%s\n    labels: {rack: r1}\n", srv.addr))
	cmd := exec.Command(volley, "monitor", "--targets", file, "--rate", "20", "--interval", "200ms", "--format", "jsonl", "--metrics-listen", "none")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			got <- sc.Text()
		}
	}()
	var lines []string
	deadline := time.After(30 * time.Second)
	for len(lines) < 3 {
		select {
		case l := <-got:
			lines = append(lines, l)
		case <-deadline:
			t.Fatalf("%d lines within 30s, want 3: %q", len(lines), lines)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range got {
		lines = append(lines, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("volley monitor on SIGTERM: %v (%s), want exit 0", err, stderr.String())
	}
	var sent uint64
	for _, l := range lines {
		iv := parseTargetLine(t, l)
		if iv.Type != "interval" || iv.Target != "here" || iv.Labels["rack"] != "r1" {
			t.Fatalf("line %q: want an interval of target here with label rack r1", l)
		}
		sent += iv.Counts.Sent
	}
	if sent == 0 {
		t.Fatalf("no probe sent in %d lines: %q", len(lines), lines)
	}
}
