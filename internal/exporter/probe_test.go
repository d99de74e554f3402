package exporter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/result"
)

// fakeResolver answers every name with its addresses.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// fakeProbe records the targets it is given, and answers each with the
// replies and counts of a measurement of its count of probes.
type fakeProbe struct {
	mu      sync.Mutex
	targets []monitor.Target
	err     error
}

func (f *fakeProbe) probe(_ context.Context, t monitor.Target, rec monitor.Recorder) (*result.Result, error) {
	f.mu.Lock()
	f.targets = append(f.targets, t)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	sent := uint64(t.Schedule.Duration.Seconds()*t.Schedule.Rate + 0.5)
	rs := replies(int(sent) - 2)
	for _, r := range rs {
		rec.Reply(r)
	}
	res := &result.Result{}
	res.Summary.Counts = result.Counts{Sent: sent, Received: uint64(len(rs)), Lost: 2, LostUp: 1, LostDown: 1}
	return res, nil
}

func (f *fakeProbe) calls() []monitor.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]monitor.Target(nil), f.targets...)
}

// probeGet runs one /probe request on p from remote, and returns its
// answer.
func probeGet(p *Prober, query, remote string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/probe?"+query, nil)
	req.RemoteAddr = remote
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, req)
	return w
}

func TestProbeOffByDefault(t *testing.T) {
	f := &fakeProbe{}
	for _, p := range []*Prober{nil, {Probe: f.probe}, {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}} {
		w := probeGet(p, "target=udp://127.0.0.1:7766", "127.0.0.1:5000", nil)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "off") {
			t.Errorf("/probe with %+v = %d %q, want 403 saying it is off", p, w.Code, w.Body)
		}
	}
	if n := len(f.calls()); n != 0 {
		t.Errorf("%d probes ran with /probe off, want none", n)
	}
}

func TestParseAllow(t *testing.T) {
	allow, local, err := ParseAllow(" 10.0.0.0/8, 192.168.1.7 ,local,::1,fd00::/8")
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fd00::/8"),
	}
	if err != nil || !local || fmt.Sprint(allow) != fmt.Sprint(want) {
		t.Errorf("ParseAllow = %v, %v, %v; want %v, true, nil", allow, local, err, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "10.0.0.0/8,x"} {
		if _, _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error, want one", bad)
		}
	}
	if allow, local, err := ParseAllow(""); len(allow) != 0 || local || err != nil {
		t.Errorf(`ParseAllow("") = %v, %v, %v; want nothing allowed`, allow, local, err)
	}
}

// TestProbeRefused: a request the bounds refuse is answered 400 with a
// message that names the parameter, and sends nothing.
func TestProbeRefused(t *testing.T) {
	f := &fakeProbe{}
	p := &Prober{
		Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Probe: f.probe,
		Resolver: fakeResolver{
			"mixed.test": {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("192.168.0.1")},
		},
	}
	timeout := func(s string) http.Header { return http.Header{scrapeTimeoutHeader: {s}} }
	for _, c := range []struct {
		query  string
		header http.Header
		names  string
	}{
		{"target=udp://127.0.0.1:7766", nil, "target"},
		{"target=udp://[::1]:7766", nil, "target"},
		{"target=tcp://mixed.test:7766", nil, "target"},
		{"target=unix:///run/volley.sock", nil, "target"},
		{"target=dbus://session", nil, "target"},
		{"target=echo://10.0.0.1", nil, "target"},
		{"target=ftp://10.0.0.1", nil, "target"},
		{"", nil, "target"},
		{"target=udp://10.0.0.1&target=udp://10.0.0.2", nil, "target"},
		{"target=udp://10.0.0.1&count=1001", nil, "count"},
		{"target=udp://10.0.0.1&count=0", nil, "count"},
		{"target=udp://10.0.0.1&count=ten", nil, "count"},
		{"target=udp://10.0.0.1&rate=0", nil, "rate"},
		{"target=udp://10.0.0.1&rate=1e9", nil, "rate"},
		{"target=udp://10.0.0.1&rate=NaN", nil, "rate"},
		{"target=udp://10.0.0.1&count=1000&rate=10", nil, "count"},
		{"target=udp://10.0.0.1&count=50&rate=10", timeout("5"), "count"},
		{"target=udp://10.0.0.1", timeout("0.5"), "count"},
		{"target=udp://10.0.0.1", timeout("soon"), scrapeTimeoutHeader},
		{"target=udp://10.0.0.1&size=9000", nil, "size"},
		{"target=%zz", nil, "query"},
	} {
		w := probeGet(p, c.query, "127.0.0.1:5000", c.header)
		if w.Code != http.StatusBadRequest || !strings.HasPrefix(w.Body.String(), c.names) {
			t.Errorf("/probe?%s %v = %d %q, want 400 naming %s", c.query, c.header, w.Code, w.Body, c.names)
		}
	}
	if calls := f.calls(); len(calls) != 0 {
		t.Errorf("refused requests ran %d probes (%v), want none", len(calls), calls)
	}
	// The local kinds are refused as such, not allowed by "local" alone.
	p.Local = true
	w := probeGet(p, "target=dbus:tcp:host=10.0.0.1,port=1", "127.0.0.1:5000", nil)
	if w.Code != http.StatusBadRequest || !strings.HasPrefix(w.Body.String(), "target") {
		t.Errorf("/probe of a D-Bus bus over TCP with local allowed = %d %q, want 400 naming target", w.Code, w.Body)
	}
}

// parseText parses a text exposition.
func parseText(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %q: %v", body, err)
	}
	return mfs
}

func TestProbeMeasures(t *testing.T) {
	f := &fakeProbe{}
	p := &Prober{
		Allow:    []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Probe:    f.probe,
		Resolver: fakeResolver{"reflector.test": {netip.MustParseAddr("127.0.0.9"), netip.MustParseAddr("127.0.0.10")}},
	}
	count, rate := 40, 20.0
	w := probeGet(p, fmt.Sprintf("target=udp://reflector.test:7000&count=%d&rate=%g", count, rate), "127.0.0.1:5000", http.Header{scrapeTimeoutHeader: {"10"}})
	if w.Code != http.StatusOK {
		t.Fatalf("/probe = %d %q, want 200", w.Code, w.Body)
	}
	calls := f.calls()
	if len(calls) != 1 {
		t.Fatalf("%d probes ran, want 1", len(calls))
	}
	got := calls[0]
	wantDuration := time.Duration(float64(count) / rate * float64(time.Second))
	if got.URL != "udp://127.0.0.9:7000" || got.Schedule.Rate != rate || got.Schedule.Duration != wantDuration {
		t.Errorf("probe of %s at %g/s for %v, want udp://127.0.0.9:7000 (the name's first address) at %g/s for %v",
			got.URL, got.Schedule.Rate, got.Schedule.Duration, rate, wantDuration)
	}
	mfs := parseText(t, w.Body.String())
	sent := float64(count)
	received := sent - 2
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{ProbeSuccess, nil, 1},
		{ProbeSent, nil, sent},
		{ProbeReceived, nil, received},
		{ProbeLost, map[string]string{"direction": "up"}, 1},
		{ProbeLost, map[string]string{"direction": "down"}, 1},
	} {
		if v := value(t, mfs, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if m := find(mfs, ProbeRTT, nil); m.GetSummary().GetSampleCount() != uint64(received) || len(m.GetSummary().GetQuantile()) != 3 {
		t.Errorf("%s = %v, want %v samples and 3 quantiles", ProbeRTT, m, received)
	}
	if m := find(mfs, ProbeDelay, map[string]string{"direction": "up"}); m == nil || m.GetSummary().GetSampleCount() == 0 {
		t.Errorf("%s{direction=up} = %v, want the one-way replies", ProbeDelay, m)
	}
	if find(mfs, ProbeDuration, nil) == nil {
		t.Errorf("no %s", ProbeDuration)
	}
}

func TestProbeFails(t *testing.T) {
	f := &fakeProbe{err: errors.New("connection refused")}
	var logged atomic.Int32
	p := &Prober{Local: true, Probe: f.probe, Log: func(string, ...any) { logged.Add(1) }}
	w := probeGet(p, "target=unix:///run/volley.sock", "127.0.0.1:5000", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("/probe of a local target with local allowed = %d %q, want 200", w.Code, w.Body)
	}
	if v := value(t, parseText(t, w.Body.String()), ProbeSuccess, nil); v != 0 {
		t.Errorf("%s = %v for a failed probe, want 0", ProbeSuccess, v)
	}
	if logged.Load() != 1 {
		t.Errorf("a failed probe logged %d lines, want 1", logged.Load())
	}
}

// TestProbeConcurrency: one probe at a time per source, MaxProbes in all.
func TestProbeConcurrency(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	var running atomic.Int32
	p := &Prober{
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Probe: func(ctx context.Context, _ monitor.Target, _ monitor.Recorder) (*result.Result, error) {
			running.Add(1)
			started <- struct{}{}
			<-release
			return nil, errors.New("released")
		},
	}
	var wg sync.WaitGroup
	codes := make(chan int, MaxProbes)
	for i := range MaxProbes {
		wg.Go(func() {
			codes <- probeGet(p, "target=udp://127.0.0.1:7766", fmt.Sprintf("192.0.2.%d:5000", i+1), nil).Code
		})
		<-started
		if i == 0 {
			w := probeGet(p, "target=udp://127.0.0.1:7766", "192.0.2.1:6000", nil)
			if w.Code != http.StatusTooManyRequests {
				t.Errorf("a second probe from a source with one running = %d %q, want 429", w.Code, w.Body)
			}
		}
	}
	w := probeGet(p, "target=udp://127.0.0.1:7766", "192.0.2.200:5000", nil)
	if w.Code != http.StatusTooManyRequests {
		t.Errorf("probe %d at once = %d %q, want 429", MaxProbes+1, w.Code, w.Body)
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a probe within the bounds = %d, want 200", c)
		}
	}
	if n := running.Load(); n != MaxProbes {
		t.Errorf("%d probes ran, want %d", n, MaxProbes)
	}
	// The places are free again.
	go func() { <-started }()
	release = make(chan struct{})
	close(release)
	if w := probeGet(p, "target=udp://127.0.0.1:7766", "192.0.2.1:5000", nil); w.Code != http.StatusOK {
		t.Errorf("a probe after the others ended = %d %q, want 200", w.Code, w.Body)
	}
}
