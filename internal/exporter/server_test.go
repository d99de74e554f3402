package exporter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testenv"
)

// serve starts s on a loopback port, and returns its address; the server
// stops when the test ends.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v after its context ended, want nil", err)
		}
	})
	return ln.Addr().String()
}

// fedServer returns a server of a sink with two targets fed, and health.
func fedServer(t *testing.T) (*Server, int) {
	t.Helper()
	s, h := NewSink(), NewHealth()
	reg, err := NewRegistry(s, h)
	if err != nil {
		t.Fatal(err)
	}
	rs := replies(100)
	for _, tg := range []*monitor.Target{
		{Name: "a", URL: "udp://127.0.0.1:1", Labels: map[string]string{"rack": "r1"}},
		{Name: "b", URL: "udp://127.0.0.1:2", Labels: map[string]string{"role": "db"}},
	} {
		rec := s.Start(tg)
		rec.Session(true, nil)
		for _, r := range rs {
			rec.Reply(r)
		}
		rec.Interval(result.Interval{
			Counts: result.Counts{Sent: 100, Received: 98, LostUp: 1, LostDown: 1},
			Up:     result.Latency{Count: 98, Min: time.Millisecond},
			Down:   result.Latency{Count: 98, Min: 2 * time.Millisecond},
		})
	}
	h.Targets(2, 2)
	h.Lag(3 * time.Millisecond)
	h.Reload("targets.yaml", nil)
	h.Reload("dns:db.example", errors.New("no such host"))
	h.RateScale(0.5)
	return &Server{Gatherer: reg}, len(rs)
}

func get(t *testing.T, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return resp, body
}

// TestServerPromtool: a live scrape passes promtool check metrics.
func TestServerPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	testenv.Require(t, "prometheus", err)
	s, _ := fedServer(t)
	addr := serve(t, s)
	resp, body := get(t, "http://"+addr+"/metrics", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %s, want 200: %s", resp.Status, body)
	}
	for _, name := range []string{ProbesSent, ProbesLost, RTT, Delay, IPDV, Response, ClockOffset, TargetUp,
		MonitorTargets, MonitorTargetsUp, MonitorScheduleLag, MonitorReloads, MonitorReloadSuccess, MonitorRateScale, BuildInfo,
		"go_goroutines", "process_start_time_seconds"} {
		if !bytes.Contains(body, []byte("\n"+name)) {
			t.Errorf("scrape has no %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.WriteFile(t.TempDir()+"/scrape.txt", body, 0o644)
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestServerNativeHistograms: a scrape that asks for protobuf gets the
// histograms' native buckets as well as the classic ones.
func TestServerNativeHistograms(t *testing.T) {
	s, n := fedServer(t)
	addr := serve(t, s)
	accept := http.Header{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}}
	resp, body := get(t, "http://"+addr+"/metrics", accept)
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(resp.Header))
	found := 0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode a %s scrape: %v", resp.Header.Get("Content-Type"), err)
		}
		if mf.GetName() != RTT {
			continue
		}
		for _, m := range mf.GetMetric() {
			found++
			h := m.GetHistogram()
			if len(h.GetPositiveSpan()) == 0 || h.GetSchema() <= 0 || len(h.GetPositiveDelta()) == 0 {
				t.Errorf("%s%v: schema %d, %d spans: want native buckets", RTT, labelsOf(m), h.GetSchema(), len(h.GetPositiveSpan()))
			}
			if len(h.GetBucket()) != len(Buckets) || h.GetSampleCount() != uint64(n) {
				t.Errorf("%s%v: %d classic buckets and %d samples, want %d and %d", RTT, labelsOf(m), len(h.GetBucket()), h.GetSampleCount(), len(Buckets), n)
			}
			var native int64
			delta := int64(0)
			for _, d := range h.GetPositiveDelta() {
				delta += d
				native += delta
			}
			if uint64(native)+h.GetZeroCount() != h.GetSampleCount() {
				t.Errorf("%s%v: native buckets count %d, want all %d", RTT, labelsOf(m), uint64(native)+h.GetZeroCount(), h.GetSampleCount())
			}
		}
	}
	if found != 2 {
		t.Errorf("%d %s series in a protobuf scrape, want 2", found, RTT)
	}
}

func TestServerRoutes(t *testing.T) {
	s, _ := fedServer(t)
	addr := serve(t, s)
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/metrics", 200},
		{"HEAD", "/metrics", 200},
		{"POST", "/metrics", 405},
		{"PUT", "/", 405},
		{"DELETE", "/probe", 405},
		{"GET", "/", 200},
		{"GET", "/nope", 404},
		{"GET", "/metrics/x", 404},
		{"GET", "/probe?target=udp://127.0.0.1:7766", 403}, // off: no Prober
	} {
		req, err := http.NewRequest(c.method, "http://"+addr+c.path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s = %s, want %d: %s", c.method, c.path, resp.Status, c.want, body)
		}
		if c.path == "/" && c.want == 200 && !bytes.Contains(body, []byte(`href="/metrics"`)) {
			t.Errorf("GET / = %q, want an index linking /metrics", body)
		}
	}
}

// closedByPeer reads c until it fails, and reports whether the server
// closed it (rather than the test's own deadline passing).
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // against a hang only
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerSlowHeaders: a client that never finishes its headers is cut
// off.
func TestServerSlowHeaders(t *testing.T) {
	s, _ := fedServer(t)
	// Every other timeout far away: only the header timeout can cut it.
	s.Limits = Limits{ReadHeaderTimeout: 50 * time.Millisecond, ReadTimeout: time.Hour, WriteTimeout: time.Hour, IdleTimeout: time.Hour}
	addr := serve(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	if !closedByPeer(t, c) {
		t.Errorf("a client that never ends its headers is still connected a minute later, want it cut at the header timeout")
	}
}

// request sends a GET on c and reads its answer, reporting whether it
// was served.
func request(c net.Conn, br *bufio.Reader) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET / = %s", resp.Status)
	}
	return nil
}

// TestServerConnectionBounds: one connection past the bound per source,
// or in all, is closed at accept; the others keep being served, and a
// place freed is taken again.
func TestServerConnectionBounds(t *testing.T) {
	for _, l := range []Limits{{MaxConnsPerSource: 2}, {MaxConns: 2}} {
		t.Run(fmt.Sprintf("%d_in_all_%d_per_source", l.MaxConns, l.MaxConnsPerSource), func(t *testing.T) {
			s, _ := fedServer(t)
			s.Limits = l
			addr := serve(t, s)
			var kept []net.Conn
			var readers []*bufio.Reader
			for range 2 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				br := bufio.NewReader(c)
				if err := request(c, br); err != nil {
					t.Fatalf("a connection within the bound: %v", err)
				}
				kept, readers = append(kept, c), append(readers, br)
			}
			over, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer over.Close()
			if !closedByPeer(t, over) {
				t.Fatalf("a connection past the bound stays open, want it closed at accept")
			}
			if err := request(kept[0], readers[0]); err != nil {
				t.Errorf("a connection within the bound after one was refused: %v", err)
			}
			kept[1].Close()
			deadline := time.Now().Add(time.Minute)
			for {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				err = request(c, bufio.NewReader(c))
				c.Close()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no connection served a minute after one within the bound closed: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
