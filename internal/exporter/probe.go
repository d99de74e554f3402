package exporter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
)

// The bounds of /probe: a probe endpoint makes the host send packets where
// a scraper says, so what it sends is bounded, and where it sends is in
// the allow list.
const (
	// MaxProbeCount is the most probes one /probe sends; DefaultProbeCount
	// the count when the request gives none.
	MaxProbeCount     = 1000
	DefaultProbeCount = 10
	// MaxProbeRate is the highest rate a /probe sends at, in probes per
	// second; DefaultProbeRate the rate when the request gives none.
	MaxProbeRate     = 1000
	DefaultProbeRate = 10
	// MaxProbeTime is the longest a /probe sends for (count/rate).
	MaxProbeTime = 10 * time.Second
	// MaxProbes is how many /probe requests measure at once in all,
	// MaxProbesPerSource from one source; one more is answered 429.
	MaxProbes          = 4
	MaxProbesPerSource = 1
)

const (
	// probeReplyWait is each probe's timeout: the last one's reply may
	// come this long after it is sent.
	probeReplyWait = time.Second
	// scrapeMargin is kept off the scraper's timeout, for the answer to
	// reach it.
	scrapeMargin = 500 * time.Millisecond
	// scrapeTimeoutHeader is where Prometheus says its scrape timeout.
	scrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"
)

// Resolver looks up a host name's addresses (*net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Prober answers /probe?target=URL[&count=N][&rate=R]: it measures the
// target once, with count probes at rate per second, and answers that
// measurement's figures as metrics from a registry of its own. It is off
// (403) unless Allow or Local allows somewhere; a target it does not allow
// is refused (400) before anything is sent.
type Prober struct {
	// Allow lists the networks a udp:// or tcp:// target's addresses must
	// all be in (a name's addresses are looked up first, and the target
	// is measured at the first of them).
	Allow []netip.Prefix
	// Local allows unix:// and dbus:// targets (a D-Bus address only of
	// the unix: kind).
	Local bool
	// Probe measures one target (monitor.Probe); rec hears its replies.
	Probe func(ctx context.Context, t monitor.Target, rec monitor.Recorder) (*result.Result, error)
	// Resolver looks up target names; nil: net.DefaultResolver.
	Resolver Resolver
	// Log, when set, hears one line per probe that failed.
	Log func(format string, args ...any)

	once  sync.Once
	slots *quota.Counter
}

// ParseAllow parses an allow list: comma-separated CIDRs or addresses,
// and "local" for unix:// and dbus:// targets. An empty list allows
// nothing.
func ParseAllow(s string) (allow []netip.Prefix, local bool, err error) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "local" {
			local = true
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, false, fmt.Errorf("probe allow list: bad entry %q: want a CIDR (10.0.0.0/8), an address or \"local\"", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		allow = append(allow, p.Masked())
	}
	return allow, local, nil
}

// enabled reports whether p allows any target.
func (p *Prober) enabled() bool {
	return p != nil && p.Probe != nil && (len(p.Allow) > 0 || p.Local)
}

// allowed says where p allows probes to go.
func (p *Prober) allowed() string {
	var s []string
	for _, a := range p.Allow {
		s = append(s, a.String())
	}
	if p.Local {
		s = append(s, "local")
	}
	return strings.Join(s, ",")
}

// badParam is a request's mistake: its message names the parameter.
type badParam struct{ msg string }

func (e *badParam) Error() string { return e.msg }

func bad(format string, args ...any) error { return &badParam{fmt.Sprintf(format, args...)} }

// probeRequest is a /probe request, checked.
type probeRequest struct {
	target transport.Target
	count  int
	rate   float64
	send   time.Duration // count/rate
	budget time.Duration // the whole measurement's
}

// ServeHTTP answers one /probe request.
func (p *Prober) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enabled() {
		http.Error(w, "/probe is off: volley runs without --probe-allow", http.StatusForbidden)
		return
	}
	req, err := parseProbe(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.once.Do(func() { p.slots = quota.NewCounter(MaxProbes, MaxProbesPerSource) })
	src := netip.Prefix{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		src = quota.Source(ap)
	}
	if p.slots.Take(src) != quota.OK {
		http.Error(w, fmt.Sprintf("too many probes at once: at most %d in all and %d per source", MaxProbes, MaxProbesPerSource), http.StatusTooManyRequests)
		return
	}
	defer p.slots.Give(src)
	ctx, cancel := context.WithTimeout(r.Context(), req.budget)
	defer cancel()
	start := time.Now()
	t, err := p.resolve(ctx, req.target)
	var refused *badParam
	if errors.As(err, &refused) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reg := prometheus.NewRegistry()
	if err == nil {
		err = p.measure(ctx, req, t, reg)
	}
	if err != nil && p.Log != nil {
		p.Log("probe %s: %v", req.target, err)
	}
	success := prometheus.NewGauge(prometheus.GaugeOpts{Name: ProbeSuccess, Help: "1 when the probe ran and had a reply, else 0."})
	duration := prometheus.NewGauge(prometheus.GaugeOpts{Name: ProbeDuration, Help: "How long the probe took, in seconds."})
	if err == nil {
		success.Set(1)
	}
	duration.Set(time.Since(start).Seconds())
	reg.MustRegister(success, duration)
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP(w, r)
}

// parseProbe checks a /probe request's parameters and the scraper's
// timeout.
func parseProbe(r *http.Request) (*probeRequest, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, bad("query: %v", err)
	}
	req := &probeRequest{count: DefaultProbeCount, rate: DefaultProbeRate}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vs := q[name]
		if len(vs) != 1 {
			return nil, bad("%s: given %d times, want once", name, len(vs))
		}
		v := vs[0]
		switch name {
		case "target":
			if req.target, err = transport.ParseTarget(v); err != nil {
				return nil, bad("target: %v", err)
			}
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxProbeCount {
				return nil, bad("count: %q: want a whole number of probes from 1 to %d", v, MaxProbeCount)
			}
			req.count = n
		case "rate":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= MaxProbeRate) {
				return nil, bad("rate: %q: want probes per second, above 0 and at most %d", v, MaxProbeRate)
			}
			req.rate = f
		default:
			return nil, bad("%s: unknown parameter (want target, count, rate)", name)
		}
	}
	if req.target.Scheme == "" {
		return nil, bad("target: missing (want /probe?target=udp://HOST:PORT)")
	}
	req.send = time.Duration(float64(req.count) / req.rate * float64(time.Second))
	if req.send > MaxProbeTime {
		return nil, bad("count, rate: %d probes at %g/s take %v, over the limit of %v", req.count, req.rate, req.send, MaxProbeTime)
	}
	req.budget = MaxProbeTime + probeReplyWait
	h := r.Header.Get(scrapeTimeoutHeader)
	if h != "" {
		s, err := strconv.ParseFloat(h, 64)
		if err != nil || !(s > 0 && s < 1e6) {
			return nil, bad("%s: %q: want seconds above 0", scrapeTimeoutHeader, h)
		}
		req.budget = min(req.budget, time.Duration(s*float64(time.Second))-scrapeMargin)
	}
	if need := req.send + probeReplyWait; need > req.budget {
		return nil, bad("count, rate: %d probes at %g/s and %v for the last replies take %v, over the scraper's timeout (%s: %s) less %v",
			req.count, req.rate, probeReplyWait, need, scrapeTimeoutHeader, h, scrapeMargin)
	}
	return req, nil
}

// resolve checks that t is allowed, and returns it with its host name
// replaced by the address it is measured at, so that a second lookup
// cannot send the probes elsewhere. A *badParam error refuses the
// request; another fails the probe.
func (p *Prober) resolve(ctx context.Context, t transport.Target) (transport.Target, error) {
	switch t.Scheme {
	case "unix", "unixgram":
		if !p.Local {
			return t, bad("target: %s is local: /probe needs --probe-allow local for it", t)
		}
		return t, nil
	case "dbus":
		if !p.Local {
			return t, bad("target: %s is local: /probe needs --probe-allow local for it", t)
		}
		if t.Path != "session" && t.Path != "system" && (!strings.HasPrefix(t.Path, "unix:") || strings.Contains(t.Path, ";")) {
			return t, bad("target: %s: /probe takes a D-Bus bus only at dbus://session, dbus://system or one unix: address", t)
		}
		return t, nil
	case "udp", "tcp":
	default:
		return t, bad("target: %s: /probe measures udp://, tcp://, unix:// or dbus:// targets", t)
	}
	addrs, err := p.lookup(ctx, t.Host)
	if err != nil {
		return t, err
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(p.Allow, func(n netip.Prefix) bool { return n.Contains(a.Unmap()) }) {
			return t, bad("target: %s: address %s is outside the allowed networks (--probe-allow)", t, a)
		}
	}
	t.Host = addrs[0].Unmap().String()
	return t, nil
}

// lookup returns host's addresses: host itself when it is one.
func (p *Prober) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no addresses")
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", host, err)
	}
	return addrs, nil
}

// measure runs the probe, and registers its figures on reg. It returns
// the probe's error, or an error if no reply came.
func (p *Prober) measure(ctx context.Context, req *probeRequest, t transport.Target, reg *prometheus.Registry) error {
	rec := newProbeRecorder()
	target := monitor.Target{
		Name:     "probe",
		URL:      t.String(),
		Source:   "probe",
		Schedule: monitor.Schedule{Rate: req.rate, Duration: req.send, Timeout: probeReplyWait},
	}
	res, err := p.Probe(ctx, target, rec)
	n := rec.sum()
	if res != nil {
		n = res.Summary.Counts
	}
	gauge := func(name, help string, v uint64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		g.Set(float64(v))
		reg.MustRegister(g)
	}
	gauge(ProbeSent, "Probes sent.", n.Sent)
	gauge(ProbeReceived, "Probes answered.", n.Received)
	lost := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ProbeLost, Help: "Probes lost, by direction (up: toward the reflector, down: back)."}, []string{labelDirection})
	lost.WithLabelValues("up").Set(float64(n.LostUp))
	lost.WithLabelValues("down").Set(float64(n.LostDown))
	reg.MustRegister(lost, rec.rtt)
	if rec.oneWay.Load() {
		reg.MustRegister(rec.up, rec.down)
	}
	if err == nil && n.Received == 0 {
		err = errors.New("no reply")
	}
	return err
}

// probeRecorder hears one /probe measurement.
type probeRecorder struct {
	rtt, up, down prometheus.Summary
	oneWay        atomic.Bool

	mu     sync.Mutex
	counts result.Counts
}

var _ monitor.Recorder = (*probeRecorder)(nil)

func newProbeRecorder() *probeRecorder {
	objectives := map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}
	summary := func(name, help, dir string) prometheus.Summary {
		var labels prometheus.Labels
		if dir != "" {
			labels = prometheus.Labels{labelDirection: dir}
		}
		return prometheus.NewSummary(prometheus.SummaryOpts{Name: name, Help: help, Objectives: objectives, ConstLabels: labels})
	}
	return &probeRecorder{
		rtt:  summary(ProbeRTT, "Round-trip times of the probe's replies.", ""),
		up:   summary(ProbeDelay, "One-way delays of the probe's replies, raw: the clocks' offset is in them.", "up"),
		down: summary(ProbeDelay, "One-way delays of the probe's replies, raw: the clocks' offset is in them.", "down"),
	}
}

// Reply records a reply's delays.
func (r *probeRecorder) Reply(p client.Reply) {
	r.rtt.Observe(p.RTT.Seconds())
	if p.OneWay {
		r.oneWay.Store(true)
		r.up.Observe(p.Up.Seconds())
		r.down.Observe(p.Down.Seconds())
	}
}

// Interval adds an interval's counts: the figures when the probe returns
// no result.
func (r *probeRecorder) Interval(iv result.Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Add(iv.Counts)
}

// Session is not heard: a probe that cannot open fails.
func (r *probeRecorder) Session(bool, error) {}

func (r *probeRecorder) sum() result.Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
