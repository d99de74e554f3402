package exporter

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/result"
)

// sinkRegistry returns a Sink registered on a registry of its own.
func sinkRegistry(t *testing.T) (*Sink, *prometheus.Registry) {
	t.Helper()
	s := NewSink()
	reg, err := NewRegistry(s, nil)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return s, reg
}

// gather gathers reg, by family name.
func gather(t *testing.T, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// labelsOf returns m's labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// find returns the series of family name whose labels include want, or
// nil.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, m := range mfs[name].GetMetric() {
		got := labelsOf(m)
		if !slices.ContainsFunc(slices.Collect(maps.Keys(want)), func(k string) bool { return got[k] != want[k] }) {
			return m
		}
	}
	return nil
}

// value returns the counter's or gauge's value of a series, failing t
// when there is none.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := find(mfs, name, labels)
	switch {
	case m == nil:
		t.Fatalf("no series %s%v", name, labels)
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s%v is neither a counter nor a gauge", name, labels)
	return 0
}

func TestSinkCountersSumIntervals(t *testing.T) {
	s, reg := sinkRegistry(t)
	rec := s.Start(&monitor.Target{Name: "db-1", URL: "udp://127.0.0.1:7766"})
	var want result.Counts
	for i := range uint64(5) {
		c := result.Counts{
			Sent: 100 + i, Received: 90 + i, LostUp: 3 + i, LostDown: 7 - i,
			DuplicatesUp: i, DuplicatesDown: 2 * i, ReorderedUp: i + 1, ReorderedDown: i % 2,
			Late: i * 3, Skipped: i % 3, Reconnects: i % 2,
		}
		want.Add(c)
		rec.Interval(result.Interval{Counts: c})
	}
	mfs := gather(t, reg)
	tl := map[string]string{"target": "db-1"}
	dir := func(d string) map[string]string { return map[string]string{"target": "db-1", "direction": d} }
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   uint64
	}{
		{ProbesSent, tl, want.Sent},
		{ProbesReceived, tl, want.Received},
		{ProbesLost, dir("up"), want.LostUp},
		{ProbesLost, dir("down"), want.LostDown},
		{ProbesDuplicated, dir("up"), want.DuplicatesUp},
		{ProbesDuplicated, dir("down"), want.DuplicatesDown},
		{ProbesReordered, dir("up"), want.ReorderedUp},
		{ProbesReordered, dir("down"), want.ReorderedDown},
		{ProbesLate, tl, want.Late},
		{ProbesSkipped, tl, want.Skipped},
		{Reconnects, tl, want.Reconnects},
	} {
		if got := value(t, mfs, c.name, c.labels); got != float64(c.want) {
			t.Errorf("%s%v = %v, want %d (the intervals' sum)", c.name, c.labels, got, c.want)
		}
	}
	if mfs[ProbesSent].GetType() != dto.MetricType_COUNTER {
		t.Errorf("%s is a %v, want a counter", ProbesSent, mfs[ProbesSent].GetType())
	}
}

// replies are made-up replies: some with one-way figures, some with IPDV.
func replies(n int) []client.Reply {
	var out []client.Reply
	for i := range n {
		r := client.Reply{RTT: time.Duration(50+i*37%900) * time.Microsecond}
		if i%3 != 0 {
			r.OneWay = true
			r.Up = time.Duration(20+i) * time.Microsecond
			r.Down = r.RTT - r.Up - time.Microsecond
			r.Response = time.Microsecond
		}
		if i > 0 {
			r.HasIPDV = true
			r.IPDV = time.Duration(i%7-3) * time.Microsecond
		}
		out = append(out, r)
	}
	return out
}

func TestSinkHistogramsCountReplies(t *testing.T) {
	s, reg := sinkRegistry(t)
	rec := s.Start(&monitor.Target{Name: "a", URL: "udp://127.0.0.1:7766"})
	rs := replies(200)
	var oneWay, ipdv uint64
	var rttSum, ipdvSum float64
	for _, r := range rs {
		rec.Reply(r)
		rttSum += r.RTT.Seconds()
		if r.OneWay {
			oneWay++
		}
		if r.HasIPDV {
			ipdv++
			ipdvSum += math.Abs(r.IPDV.Seconds())
		}
	}
	mfs := gather(t, reg)
	for _, c := range []struct {
		name   string
		labels map[string]string
		count  uint64
	}{
		{RTT, map[string]string{"target": "a"}, uint64(len(rs))},
		{Delay, map[string]string{"target": "a", "direction": "up"}, oneWay},
		{Delay, map[string]string{"target": "a", "direction": "down"}, oneWay},
		{Response, map[string]string{"target": "a"}, oneWay},
		{IPDV, map[string]string{"target": "a"}, ipdv},
	} {
		m := find(mfs, c.name, c.labels)
		if m == nil {
			t.Fatalf("no series %s%v", c.name, c.labels)
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != c.count {
			t.Errorf("%s%v count = %d, want %d (replies fed)", c.name, c.labels, h.GetSampleCount(), c.count)
		}
		if got := h.GetBucket()[len(h.GetBucket())-1].GetCumulativeCount(); got != c.count {
			t.Errorf("%s%v le=%g count = %d, want all %d replies", c.name, c.labels, Buckets[len(Buckets)-1], got, c.count)
		}
		if len(h.GetBucket()) != len(Buckets) || h.GetSchema() == 0 && h.GetZeroThreshold() == 0 {
			t.Errorf("%s%v has %d classic buckets and schema %d, want %d and native buckets", c.name, c.labels, len(h.GetBucket()), h.GetSchema(), len(Buckets))
		}
	}
	if got := find(mfs, RTT, nil).GetHistogram().GetSampleSum(); math.Abs(got-rttSum) > 1e-9 {
		t.Errorf("%s sum = %g, want %g", RTT, got, rttSum)
	}
	if got := find(mfs, IPDV, nil).GetHistogram().GetSampleSum(); math.Abs(got-ipdvSum) > 1e-9 {
		t.Errorf("%s sum = %g, want %g (the absolute IPDVs)", IPDV, got, ipdvSum)
	}
}

// TestSinkOneWayOnly: a target whose replies carry no reflector times has
// no delay or response series.
func TestSinkOneWayOnly(t *testing.T) {
	s, reg := sinkRegistry(t)
	rec := s.Start(&monitor.Target{Name: "a", URL: "udp://127.0.0.1:7766"})
	rec.Reply(client.Reply{RTT: time.Millisecond})
	mfs := gather(t, reg)
	if find(mfs, RTT, nil) == nil {
		t.Errorf("no %s series after a reply", RTT)
	}
	for _, name := range []string{Delay, Response} {
		if n := len(mfs[name].GetMetric()); n != 0 {
			t.Errorf("%d %s series with no one-way reply, want none", n, name)
		}
	}
}

func TestSinkReplyAllocatesNothing(t *testing.T) {
	rec := NewSink().Start(&monitor.Target{Name: "a", URL: "udp://127.0.0.1:7766"})
	rs := replies(16)
	for _, r := range rs { // each value's native bucket exists from here on
		rec.Reply(r)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		rec.Reply(rs[i%len(rs)])
		i++
	}); n != 0 {
		t.Errorf("Reply allocates %v times a reply, want 0", n)
	}
}

// TestSinkUnionLabels: every series of a family has every target's label
// names, "" where a target has none; a stopped target's series go, and
// its label names with them.
func TestSinkUnionLabels(t *testing.T) {
	s, reg := sinkRegistry(t)
	targets := []*monitor.Target{
		{Name: "a", URL: "udp://127.0.0.1:1", Labels: map[string]string{"rack": "r1"}},
		{Name: "b", URL: "udp://127.0.0.1:2", Labels: map[string]string{"role": "db", "zone_x": "z"}},
		{Name: "c", URL: "udp://127.0.0.1:3"},
	}
	for _, tg := range targets {
		rec := s.Start(tg)
		rec.Interval(result.Interval{Counts: result.Counts{Sent: 1, Received: 1}})
		rec.Reply(client.Reply{RTT: time.Millisecond, OneWay: true, Up: time.Millisecond / 2, Down: time.Millisecond / 2})
	}
	check := func(targets []*monitor.Target) {
		t.Helper()
		union := map[string]bool{"target": true}
		for _, tg := range targets {
			for k := range tg.Labels {
				union[k] = true
			}
		}
		mfs := gather(t, reg)
		for _, name := range []string{ProbesSent, ProbesLost, RTT, Delay, TargetUp} {
			if len(mfs[name].GetMetric()) == 0 {
				t.Errorf("no %s series", name)
			}
			for _, m := range mfs[name].GetMetric() {
				got := labelsOf(m)
				delete(got, "direction")
				if !maps.Equal(mapKeys(got), union) {
					t.Errorf("%s series has labels %v, want the union %v", name, got, slices.Sorted(maps.Keys(union)))
				}
			}
		}
		if problems := lint(t, reg); len(problems) > 0 {
			t.Errorf("lint: %v, want no problem", problems)
		}
		for _, tg := range targets {
			got := labelsOf(find(mfs, ProbesSent, map[string]string{"target": tg.Name}))
			for k := range union {
				if want := tg.Labels[k]; k != "target" && got[k] != want {
					t.Errorf("%s{target=%q} label %s = %q, want %q", ProbesSent, tg.Name, k, got[k], want)
				}
			}
		}
	}
	check(targets)
	s.Stop(targets[1])
	check([]*monitor.Target{targets[0], targets[2]})
	for name, mf := range gather(t, reg) {
		for _, m := range mf.GetMetric() {
			if labelsOf(m)["target"] == "b" {
				t.Errorf("%s%v: a stopped target's series is still there", name, labelsOf(m))
			}
		}
	}
	s.Stop(targets[0])
	s.Stop(targets[2])
	if n := count(t, reg); n != 0 {
		t.Errorf("%d series with every target stopped, want 0", n)
	}
}

// count returns the number of series reg gathers. (testutil's
// GatherAndCount would do, but testutil needs a module go.sum lacks.)
func count(t *testing.T, reg prometheus.Gatherer) int {
	n := 0
	for _, mf := range gather(t, reg) {
		n += len(mf.GetMetric())
	}
	return n
}

// lint returns what promlint finds wrong with what reg gathers.
func lint(t *testing.T, reg prometheus.Gatherer) []promlint.Problem {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	return problems
}

func mapKeys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestSinkRestart: a target started again (changed) before the old one
// is stopped stays; a user's label that volley reserves is dropped rather
// than break the scrape.
func TestSinkRestart(t *testing.T) {
	s, reg := sinkRegistry(t)
	old := &monitor.Target{Name: "a", URL: "udp://127.0.0.1:1", Schedule: monitor.Schedule{Rate: 1, Key: []byte("k")}}
	s.Start(old)
	changed := *old
	changed.Schedule.Key = []byte("other")
	changed.Labels = map[string]string{"le": "x", "direction": "y", "ok": "\xff"}
	s.Start(&changed).Interval(result.Interval{Counts: result.Counts{Sent: 7}})
	s.Stop(old)
	mfs := gather(t, reg)
	if got := value(t, mfs, ProbesSent, map[string]string{"target": "a"}); got != 7 {
		t.Errorf("%s = %v after the old target stopped, want the new one's 7", ProbesSent, got)
	}
	if got := labelsOf(find(mfs, ProbesSent, nil)); got["le"] != "" || got["ok"] != "\uFFFD" {
		t.Errorf("labels %q, want le dropped and ok made valid UTF-8", got)
	}
	copyOfChanged := changed
	copyOfChanged.Labels = maps.Clone(changed.Labels)
	s.Stop(&copyOfChanged)
	if n := count(t, reg); n != 0 {
		t.Errorf("%d series after Stop of an equal target, want 0", n)
	}
}

func TestSinkGauges(t *testing.T) {
	s, reg := sinkRegistry(t)
	rec := s.Start(&monitor.Target{Name: "a", URL: "udp://127.0.0.1:1"})
	up := func() float64 { return value(t, gather(t, reg), TargetUp, map[string]string{"target": "a"}) }
	if got := up(); got != 0 {
		t.Errorf("%s = %v before a session, want 0", TargetUp, got)
	}
	if find(gather(t, reg), ClockOffset, nil) != nil {
		t.Errorf("%s before an interval with one-way figures, want none", ClockOffset)
	}
	rec.Session(true, nil)
	upMin, downMin := 7*time.Millisecond, 3*time.Millisecond
	rec.Interval(result.Interval{
		Counts: result.Counts{Sent: 2, Received: 1},
		Up:     result.Latency{Count: 1, Min: upMin},
		Down:   result.Latency{Count: 1, Min: downMin},
	})
	if got := up(); got != 1 {
		t.Errorf("%s = %v with a session open and a reply, want 1", TargetUp, got)
	}
	want := (upMin - downMin).Seconds() / 2
	if got := value(t, gather(t, reg), ClockOffset, nil); math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", ClockOffset, got, want)
	}
	rec.Interval(result.Interval{Counts: result.Counts{Sent: 2}})
	if got := up(); got != 0 {
		t.Errorf("%s = %v after an interval with no reply, want 0", TargetUp, got)
	}
	rec.Interval(result.Interval{Counts: result.Counts{Sent: 2, Received: 2}})
	rec.Session(false, fmt.Errorf("lost"))
	if got := up(); got != 0 {
		t.Errorf("%s = %v with the session lost, want 0", TargetUp, got)
	}
}

// TestHealthForget: a source forgotten takes its reload series with it.
func TestHealthForget(t *testing.T) {
	h := NewHealth()
	reg := prometheus.NewRegistry()
	if err := h.Register(reg); err != nil {
		t.Fatal(err)
	}
	h.Reload("dns:gone.test", errors.New("no such host"))
	h.Reload("file:t.yml", nil)
	h.Forget("dns:gone.test")
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, f := range fams {
		if f.GetName() != MonitorReloadSuccess && f.GetName() != MonitorReloads {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" {
					sources = append(sources, l.GetValue())
				}
			}
		}
	}
	if len(sources) != 2 || sources[0] != "file:t.yml" || sources[1] != "file:t.yml" {
		t.Fatalf("reload series of %q, want only file:t.yml's two", sources)
	}
}
