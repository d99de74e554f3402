package exporter

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/result"
)

// Native histograms: each bucket 1.1 times the previous one's bound (the
// client library picks the schema that fits, 2^(2^-3) ≈ 1.09), at most
// 160 buckets a series; past that the buckets are made twice as wide,
// never reset, so that the classic buckets' counts only grow.
const (
	nativeFactor     = 1.1
	nativeMaxBuckets = 160
)

// The labels volley sets itself.
const (
	labelTarget    = "target"
	labelDirection = "direction"
)

// Sink is the monitor's Sink that makes its targets' measurements into
// Prometheus metrics; it is itself the prometheus.Collector that exports
// them (register it on a Registry). Every target's series carry the
// labels of every target in the set, "" where a target has none of that
// name: a family's series share their label names. A stopped target's
// series are gone from the next scrape.
//
// Its Collector is unchecked (it describes no metrics): the label names
// change with the set.
type Sink struct {
	mu      sync.Mutex
	targets map[string]*recorder
	descKey string
	descs   *descs
}

var (
	_ monitor.Sink         = (*Sink)(nil)
	_ monitor.Recorder     = (*recorder)(nil)
	_ prometheus.Collector = (*Sink)(nil)
)

// NewSink returns a Sink with no targets.
func NewSink() *Sink {
	return &Sink{targets: make(map[string]*recorder)}
}

// Start starts exporting target t, and returns what records its
// measurements. A target of the same name already there is replaced.
func (s *Sink) Start(t *monitor.Target) monitor.Recorder {
	r := newRecorder(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.targets[t.Name] = r
	return r
}

// Stop ends target t: its series go. A target of t's name that is not t
// (started again since, with another URL, labels or schedule) stays.
func (s *Sink) Stop(t *monitor.Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.targets[t.Name]; ok && r.target.Same(t) {
		delete(s.targets, t.Name)
	}
}

// Describe describes nothing: the Sink is an unchecked Collector, its
// label names change with the set of targets.
func (s *Sink) Describe(chan<- *prometheus.Desc) {}

// Collect sends every target's series, each with the union of the
// targets' label names.
func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	rs := make([]*recorder, 0, len(s.targets))
	for _, r := range s.targets {
		rs = append(rs, r)
	}
	names := userLabelNames(rs)
	if key := strings.Join(names, ","); s.descs == nil || key != s.descKey {
		s.descKey, s.descs = key, newDescs(names)
	}
	d := s.descs
	s.mu.Unlock()
	slices.SortFunc(rs, func(a, b *recorder) int { return strings.Compare(a.target.Name, b.target.Name) })
	for _, r := range rs {
		r.collect(ch, d)
	}
}

// userLabelNames returns the union of the user's label names of rs,
// sorted.
func userLabelNames(rs []*recorder) []string {
	set := map[string]bool{}
	for _, r := range rs {
		for name := range r.labels {
			set[name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// descs are the descriptions of a target's families, for one set of user
// label names.
type descs struct {
	names                                     []string // the user's label names, sorted
	sent, received, late, skipped, reconnects *prometheus.Desc
	lost, duplicated, reordered               *prometheus.Desc // with direction
	rtt, response, ipdv, offset, up           *prometheus.Desc
	delay                                     *prometheus.Desc // with direction
}

// Help texts, shared by the descriptions and the histograms' options.
const (
	helpRTT      = "Round-trip time of each reply."
	helpDelay    = "One-way delay of each reply, raw: the two clocks' offset is in it (replies carrying the reflector's times only)."
	helpResponse = "The reflector's response time (its receive to send, less any hold) of each reply."
	helpIPDV     = "Absolute IP packet delay variation: the change of the round-trip time from the previous probe's."
)

func newDescs(names []string) *descs {
	base := append([]string{labelTarget}, names...)
	dir := append(slices.Clone(base), labelDirection)
	nd := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &descs{
		names:      names,
		sent:       nd(ProbesSent, "Probes sent.", base),
		received:   nd(ProbesReceived, "Probes answered.", base),
		late:       nd(ProbesLate, "Replies that came after their probe was counted lost.", base),
		skipped:    nd(ProbesSkipped, "Scheduled probes not sent: the sender skipped them after a stall rather than send them in a burst.", base),
		reconnects: nd(Reconnects, "Sessions reopened after one was lost.", base),
		lost:       nd(ProbesLost, "Probes lost, by the direction they were lost in (up: toward the reflector, down: back).", dir),
		duplicated: nd(ProbesDuplicated, "Duplicate replies, by the direction the copy was made in.", dir),
		reordered:  nd(ProbesReordered, "Probes (up) and replies (down) that came after a later one.", dir),
		rtt:        nd(RTT, helpRTT, base),
		delay:      nd(Delay, helpDelay, dir),
		response:   nd(Response, helpResponse, base),
		ipdv:       nd(IPDV, helpIPDV, base),
		offset:     nd(ClockOffset, "The reflector's clock minus this host's, estimated from the latest interval's one-way delays: (min up - min down) / 2.", base),
		up:         nd(TargetUp, "1 when the target's session is open and its latest interval had a reply, else 0.", base),
	}
}

// recorder is one target's state: counters summed from its intervals,
// histograms fed per reply, gauges. It is the target's monitor.Recorder.
type recorder struct {
	target monitor.Target
	labels map[string]string // the valid ones, values made valid UTF-8

	// Fed per reply, with the client library's atomics.
	rtt, up, down, response, ipdv prometheus.Histogram
	oneWay                        atomic.Bool // a reply had one-way figures

	mu        sync.Mutex
	counts    result.Counts
	open      bool // the session is open
	replied   bool // the latest interval had a reply
	offset    float64
	hasOffset bool
}

func newRecorder(t *monitor.Target) *recorder {
	r := &recorder{target: *t, labels: make(map[string]string, len(t.Labels))}
	r.target.Labels = maps.Clone(t.Labels)
	for k, v := range t.Labels {
		if monitor.CheckLabel(k, "", true) == nil { // the monitor refuses the others; dropped rather than break a scrape
			r.labels[k] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	r.rtt = newHistogram(RTT, helpRTT)
	r.up = newHistogram(Delay, helpDelay)
	r.down = newHistogram(Delay, helpDelay)
	r.response = newHistogram(Response, helpResponse)
	r.ipdv = newHistogram(IPDV, helpIPDV)
	return r
}

// newHistogram returns a histogram with the classic Buckets and native
// buckets. Its own labels do not matter: the recorder's are put on it as
// it is collected.
func newHistogram(name, help string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                           name,
		Help:                           help,
		Buckets:                        Buckets,
		NativeHistogramBucketFactor:    nativeFactor,
		NativeHistogramMaxBucketNumber: nativeMaxBuckets,
	})
}

// Reply records one reply in the histograms. It neither blocks nor
// allocates (but for a native bucket's first observation).
func (r *recorder) Reply(p client.Reply) {
	r.rtt.Observe(p.RTT.Seconds())
	if p.OneWay {
		if !r.oneWay.Load() {
			r.oneWay.Store(true)
		}
		r.up.Observe(p.Up.Seconds())
		r.down.Observe(p.Down.Seconds())
		r.response.Observe(p.Response.Seconds())
	}
	if p.HasIPDV {
		r.ipdv.Observe(max(p.IPDV, -p.IPDV).Seconds())
	}
}

// Interval adds an interval's counts to the counters, and takes the
// gauges from it.
func (r *recorder) Interval(iv result.Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Add(iv.Counts)
	r.replied = iv.Counts.Received > 0
	if iv.Up.Count > 0 && iv.Down.Count > 0 {
		r.offset = (iv.Up.Min - iv.Down.Min).Seconds() / 2
		r.hasOffset = true
	}
}

// Session records whether the target's session is open.
func (r *recorder) Session(open bool, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open = open
}

// collect sends the target's series, labelled for d.
func (r *recorder) collect(ch chan<- prometheus.Metric, d *descs) {
	values := make([]string, 0, len(d.names)+1)
	values = append(values, r.target.Name)
	for _, name := range d.names {
		values = append(values, r.labels[name])
	}
	c := collection{ch: ch, values: values}
	r.mu.Lock()
	n, open, replied, offset, hasOffset := r.counts, r.open, r.replied, r.offset, r.hasOffset
	r.mu.Unlock()
	counter := prometheus.CounterValue
	c.constant(d.sent, counter, n.Sent, "")
	c.constant(d.received, counter, n.Received, "")
	c.constant(d.lost, counter, n.LostUp, "up")
	c.constant(d.lost, counter, n.LostDown, "down")
	c.constant(d.duplicated, counter, n.DuplicatesUp, "up")
	c.constant(d.duplicated, counter, n.DuplicatesDown, "down")
	c.constant(d.reordered, counter, n.ReorderedUp, "up")
	c.constant(d.reordered, counter, n.ReorderedDown, "down")
	c.constant(d.late, counter, n.Late, "")
	c.constant(d.skipped, counter, n.Skipped, "")
	c.constant(d.reconnects, counter, n.Reconnects, "")
	var up uint64
	if open && replied {
		up = 1
	}
	c.constant(d.up, prometheus.GaugeValue, up, "")
	if hasOffset {
		c.gauge(d.offset, offset)
	}
	c.histogram(d.rtt, r.rtt, d.names, "")
	c.histogram(d.ipdv, r.ipdv, d.names, "")
	if r.oneWay.Load() {
		c.histogram(d.delay, r.up, d.names, "up")
		c.histogram(d.delay, r.down, d.names, "down")
		c.histogram(d.response, r.response, d.names, "")
	}
}

// collection sends one target's series: values are its label values, in
// the order of the descriptions' label names (direction excepted).
type collection struct {
	ch     chan<- prometheus.Metric
	values []string
}

// constant sends a counter or gauge of an integer value; dir, when not
// "", is the direction label's value.
func (c collection) constant(desc *prometheus.Desc, kind prometheus.ValueType, v uint64, dir string) {
	c.send(desc, kind, float64(v), dir)
}

// gauge sends a gauge.
func (c collection) gauge(desc *prometheus.Desc, v float64) {
	c.send(desc, prometheus.GaugeValue, v, "")
}

func (c collection) send(desc *prometheus.Desc, kind prometheus.ValueType, v float64, dir string) {
	values := c.values
	if dir != "" {
		values = append(slices.Clip(values), dir)
	}
	m, err := prometheus.NewConstMetric(desc, kind, v, values...)
	if err != nil {
		m = prometheus.NewInvalidMetric(desc, err)
	}
	c.ch <- m
}

// histogram sends h as desc's series.
func (c collection) histogram(desc *prometheus.Desc, h prometheus.Histogram, names []string, dir string) {
	pairs := make([]*dto.LabelPair, 0, len(c.values)+1)
	pairs = append(pairs, labelPair(labelTarget, c.values[0]))
	for i, name := range names {
		pairs = append(pairs, labelPair(name, c.values[i+1]))
	}
	if dir != "" {
		pairs = append(pairs, labelPair(labelDirection, dir))
	}
	slices.SortFunc(pairs, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	c.ch <- relabeled{desc: desc, h: h, labels: pairs}
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// relabeled is a histogram collected under another description, with
// that description's labels.
type relabeled struct {
	desc   *prometheus.Desc
	h      prometheus.Histogram
	labels []*dto.LabelPair // sorted by name
}

// Desc returns the description the histogram is collected under.
func (m relabeled) Desc() *prometheus.Desc { return m.desc }

// Write writes the histogram with m's labels.
func (m relabeled) Write(out *dto.Metric) error {
	if err := m.h.Write(out); err != nil {
		return err
	}
	out.Label = m.labels
	return nil
}
