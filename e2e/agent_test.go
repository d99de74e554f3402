package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promServer is a Prometheus the test started.
type promServer struct {
	cmd *exec.Cmd
	api string // http://127.0.0.1:PORT/api/v1/
}

// startPrometheus runs Debian's prometheus on 127.0.0.1 with a scrape
// job of the given metrics addresses, every scrape, and waits until it is
// ready. It is stopped by its PID when the test ends.
func startPrometheus(t *testing.T, scrape time.Duration, targets ...string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	require(t, "prometheus", err)
	dir := t.TempDir()
	var quoted []string
	for _, a := range targets {
		quoted = append(quoted, strconv.Quote(a))
	}
	cfg := writeFile(t, dir, "prometheus.yml", fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
  - job_name: volley
    static_configs:
      - targets: [%s]
`, scrape, scrape/2, strings.Join(quoted, ", ")))
	port := freePort(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	p := &promServer{cmd: cmd, api: fmt.Sprintf("http://127.0.0.1:%d/api/v1/", port)}
	ready := fmt.Sprintf("http://127.0.0.1:%d/-/ready", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one series of an instant query's answer.
type sample struct {
	labels map[string]string
	value  float64
}

// query runs the PromQL expression q now and returns its series.
func (p *promServer) query(t *testing.T, q string) []sample {
	t.Helper()
	resp, err := http.Get(p.api + "query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := decodeJSON(resp.Body, &body); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, r.Value[1], err)
		}
		out = append(out, sample{labels: r.Metric, value: v})
	}
	return out
}

// byPair keys samples by the scraped agent (its metrics address) and the
// target it probes.
func byPair(ss []sample) map[string]float64 {
	m := map[string]float64{}
	for _, s := range ss {
		m[s.labels["instance"]+">"+s.labels["target"]] = s.value
	}
	return m
}

// waitFor polls cond every 200ms until it holds or d has passed; it
// returns how long it took, or an error with cond's last word.
func waitFor(d time.Duration, cond func() (bool, string)) (time.Duration, error) {
	start := time.Now()
	for {
		ok, why := cond()
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > d {
			return time.Since(start), errors.New(why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAgentMeshPrometheus: three agents on 127.0.0.1 probe each other
// from one peer list, and a real Prometheus scrapes them. Every pair's
// counters and histograms arrive and are plausible; when one agent stops,
// its peers' loss toward it rises within two scrape intervals; when a
// peer leaves an agent's list (SIGHUP), that agent's series of it go.
func TestAgentMeshPrometheus(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		require(t, "prometheus", err)
	}
	const scrapeEvery = 2 * time.Second
	dir := t.TempDir()
	names := []string{"a", "b", "c"}
	ports, metrics := map[string]int{}, map[string]string{}
	var peers strings.Builder
	peers.WriteString("targets:\n")
	for _, n := range names {
		ports[n] = freePort(t)
		metrics[n] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&peers, "  - name: %s\n    url: udp://127.0.0.1:%d\n", n, ports[n])
	}
	agents := map[string]*server{}
	for _, n := range names {
		file := writeFile(t, dir, n+".yml", peers.String())
		agents[n] = startServerCmd(t, exec.Command(volley, "agent", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[n]),
			"--peers", file, "--self", n, "--metrics-listen", metrics[n], "--rate", "20", "--interval", "250ms", "--timeout", "250ms"))
	}
	prom := startPrometheus(t, scrapeEvery, metrics["a"], metrics["b"], metrics["c"])
	pairs := func() []string {
		var ps []string
		for _, from := range names {
			for _, to := range names {
				if from != to {
					ps = append(ps, metrics[from]+">"+to)
				}
			}
		}
		return ps
	}()
	// Every pair: probes sent and answered, RTTs in the histogram.
	if took, err := waitFor(60*time.Second, func() (bool, string) {
		recv := byPair(prom.query(t, "volley_probes_received_total"))
		rtt := byPair(prom.query(t, "volley_rtt_seconds_count"))
		for _, p := range pairs {
			if recv[p] < 20 || rtt[p] < 20 {
				return false, fmt.Sprintf("pair %s: %v received, %v RTTs (want 20 or more of each); all: %v", p, recv[p], rtt[p], recv)
			}
		}
		return true, ""
	}); err != nil {
		t.Fatalf("after %v: %v", took, err)
	}
	sent := byPair(prom.query(t, "volley_probes_sent_total"))
	recv := byPair(prom.query(t, "volley_probes_received_total"))
	lost := byPair(prom.query(t, `sum without (direction) (volley_probes_lost_total)`))
	mean := byPair(prom.query(t, "volley_rtt_seconds_sum / volley_rtt_seconds_count"))
	buckets := byPair(prom.query(t, `volley_rtt_seconds_bucket{le="+Inf"}`))
	for _, p := range pairs {
		if recv[p]+lost[p] > sent[p] || lost[p] > sent[p]/10 || mean[p] <= 0 || mean[p] > 0.05 || buckets[p] < recv[p] {
			t.Errorf("pair %s: sent %v, received %v, lost %v, mean RTT %vs, +Inf bucket %v: want received + lost <= sent, little loss, 0 < mean < 50ms on loopback, a bucket count per reply",
				p, sent[p], recv[p], lost[p], mean[p], buckets[p])
		}
	}
	// Stop c: a and b lose what they send it.
	before := byPair(prom.query(t, `sum without (direction) (volley_probes_lost_total{target="c"})`))
	if err := agents["c"].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	agents["c"].cmd.Wait()
	for _, from := range []string{"a", "b"} {
		p := metrics[from] + ">c"
		// The agent knows a probe lost a timeout after it left and says so
		// at the interval's end (250ms each); Prometheus within two scrapes.
		took, err := waitFor(2*scrapeEvery+500*time.Millisecond+time.Second, func() (bool, string) {
			now := byPair(prom.query(t, `sum without (direction) (volley_probes_lost_total{target="c"})`))
			return now[p] > before[p], fmt.Sprintf("loss %s stayed %v (was %v)", p, now[p], before[p])
		})
		if err != nil {
			t.Fatalf("%v after c stopped: %v", time.Since(stopped), err)
		}
		t.Logf("%s: loss toward c rose %v after c stopped (polled for %v)", from, time.Since(stopped), took)
	}
	// a drops b from its list: a's series of b go from Prometheus.
	var onlyAC strings.Builder
	fmt.Fprintf(&onlyAC, "targets:\n  - name: a\n    url: udp://127.0.0.1:%d\n  - name: c\n    url: udp://127.0.0.1:%d\n", ports["a"], ports["c"])
	writeFile(t, dir, "a.yml", onlyAC.String())
	if err := agents["a"].cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if took, err := waitFor(4*scrapeEvery, func() (bool, string) {
		left := prom.query(t, fmt.Sprintf(`{instance=%q, target="b"}`, metrics["a"]))
		return len(left) == 0, fmt.Sprintf("%d series of a>b still there", len(left))
	}); err != nil {
		t.Fatalf("after %v: %v", took, err)
	}
	for _, n := range []string{"a", "b"} {
		if err := agents[n].stop(t, syscall.SIGTERM); err != nil {
			t.Errorf("agent %s on SIGTERM: %v, want exit 0", n, err)
		}
	}
}
