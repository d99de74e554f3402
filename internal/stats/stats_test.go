package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

func TestDistSummary(t *testing.T) {
	d := NewDist()
	for v := int64(1); v <= 1000; v++ {
		d.Record(v * 1000) // 1µs .. 1ms
	}
	s := d.Summary([]float64{50, 99, 100})
	if s.Count != 1000 || s.Min != time.Microsecond || s.Max != time.Millisecond {
		t.Fatalf("Summary = count %d min %v max %v, want 1000 1µs 1ms", s.Count, s.Min, s.Max)
	}
	if s.Mean != 500500*time.Nanosecond {
		t.Errorf("Mean = %v, want 500.5µs", s.Mean)
	}
	// Sample standard deviation of 1000..1000000 step 1000.
	wantSD := 1000 * math.Sqrt(1000*1001/12.0)
	if got := float64(s.Stdev); math.Abs(got-wantSD) > 1 {
		t.Errorf("Stdev = %v, want %v", got, wantSD)
	}
	for i, want := range []time.Duration{500 * time.Microsecond, 990 * time.Microsecond, time.Millisecond} {
		got := s.Percentiles[i].Value
		// Three significant digits: within 0.1 % of the exact value.
		if math.Abs(float64(got-want)) > float64(want)/1000 {
			t.Errorf("p%v = %v, want %v within 0.1%%", s.Percentiles[i].P, got, want)
		}
	}
}

func TestDistNegativeAndHuge(t *testing.T) {
	d := NewDist()
	d.Record(-5000)
	d.Record(2 * int64(time.Minute))
	s := d.Summary([]float64{0, 100})
	if s.Min != -5000 || s.Max != 2*time.Minute {
		t.Fatalf("Min, Max = %v, %v, want -5µs, 2m0s", s.Min, s.Max)
	}
	if s.Percentiles[0].Value != -5000 {
		t.Errorf("p0 = %v, want the exact min -5µs", s.Percentiles[0].Value)
	}
	if got := s.Percentiles[1].Value; got != 2*time.Minute {
		t.Errorf("p100 = %v, want the exact max 2m0s", got)
	}
}

func TestDistMergeEqualsRecord(t *testing.T) {
	a, b, all := NewDist(), NewDist(), NewDist()
	for i := int64(0); i < 500; i++ {
		v := (i*7919)%10007 + 1
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	merged := NewDist()
	merged.Merge(a)
	merged.Merge(b)
	merged.Merge(NewDist())
	p := []float64{50, 90}
	got, want := merged.Summary(p), all.Summary(p)
	if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max || got.Mean != want.Mean ||
		got.Stdev != want.Stdev || got.Percentiles[0] != want.Percentiles[0] || got.Percentiles[1] != want.Percentiles[1] {
		t.Fatalf("merged Summary = %+v, want %+v", got, want)
	}
	merged.Reset()
	if s := merged.Summary(p); s.Count != 0 || s.Max != 0 {
		t.Fatalf("Summary after Reset = %+v, want empty", s)
	}
}

// TestTee: values recorded into two distributions teed into a third, with
// their moments merged, make it what recording them all there makes it; a
// reset of the first two leaves it whole; and the third's own tee is not
// followed.
func TestTee(t *testing.T) {
	a, b, sum, all, beyond := NewDist(), NewDist(), NewDist(), NewDist(), NewDist()
	a.Tee(sum)
	b.Tee(sum)
	sum.Tee(beyond)
	for i := int64(0); i < 500; i++ {
		v := (i*7919)%10007 - 50 // some below zero
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	sum.MergeMoments(a)
	sum.MergeMoments(b)
	sum.MergeMoments(NewDist())
	a.Reset()
	b.Reset()
	p := []float64{50, 90, 99.9}
	got, want := sum.Summary(p), all.Summary(p)
	if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max || got.Mean != want.Mean || got.Stdev != want.Stdev ||
		fmt.Sprint(got.Percentiles) != fmt.Sprint(want.Percentiles) {
		t.Errorf("teed Summary = %+v, want %+v", got, want)
	}
	if n := beyond.h.TotalCount() + beyond.belowCount(); n != 0 {
		t.Errorf("the tee's tee got %d values, want none", n)
	}
	a.Tee(nil)
	a.Record(1)
	if n := sum.h.TotalCount() + sum.belowCount(); n != 500 {
		t.Errorf("after Tee(nil), the former tee holds %d values, want 500", n)
	}
}

func TestHistogramBins(t *testing.T) {
	d := NewDist()
	for i := 0; i < 298; i++ {
		d.Record(int64(20 * time.Microsecond))
	}
	d.Record(int64(5 * time.Microsecond)) // p1 is still 20µs, so the range starts at 10µs
	d.Record(int64(3 * time.Millisecond)) // above p99's decade (100µs)
	h := d.Histogram("rtt", 10)
	if h.Underflow.High != 10*time.Microsecond || h.Overflow.Low != 100*time.Microsecond {
		t.Fatalf("range = [%v, %v), want [10µs, 100µs)", h.Underflow.High, h.Overflow.Low)
	}
	if len(h.Bins) != 10 {
		t.Fatalf("len(Bins) = %d, want 10", len(h.Bins))
	}
	if h.Underflow.Count != 1 || h.Overflow.Count != 1 {
		t.Errorf("underflow, overflow = %d, %d, want 1, 1", h.Underflow.Count, h.Overflow.Count)
	}
	var sum int64
	var share float64
	for _, b := range h.Bins {
		sum += b.Count
		share += b.Share
		if b.Low <= 20*time.Microsecond && 20*time.Microsecond < b.High && b.Count != 298 {
			t.Errorf("bin [%v, %v) count = %d, want 298", b.Low, b.High, b.Count)
		}
	}
	if sum != 298 || math.Abs(share+h.Underflow.Share+h.Overflow.Share-1) > 1e-9 {
		t.Errorf("bins hold %d (share %v), want 298 and shares summing to 1", sum, share)
	}
}

func BenchmarkRecord(b *testing.B) {
	d := NewDist()
	v := int64(25000)
	b.ReportAllocs()
	for b.Loop() {
		v = v*1103515245%1000003 + 1000
		d.Record(v)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	d := NewDist()
	for i := int64(1); i <= 1000; i++ {
		d.Record(i * 997)
	}
	d.Record(-42)
	s, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{0, 50, 99, 100}
	if got, want := back.Summary(p), d.Summary(p); got.Count != want.Count || got.Mean != want.Mean ||
		got.Stdev != want.Stdev || got.Percentiles[2] != want.Percentiles[2] || got.Min != -42 {
		t.Fatalf("FromSnapshot(Snapshot()) = %+v, want %+v", got, want)
	}
	s.Count++
	if _, err := FromSnapshot(s); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("FromSnapshot with a wrong count = %v, want ErrSnapshot", err)
	}
	if _, err := FromSnapshot(Snapshot{Histogram: []byte("garbage")}); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("FromSnapshot(garbage) = %v, want ErrSnapshot", err)
	}
}

// TestSnapshotFigures: a snapshot from another host whose mean or M2
// cannot come from its values (infinite, outside [min, max], more spread
// than max-min allows) is refused: every figure a Dist prints stays
// finite and between its min and max.
func TestSnapshotFigures(t *testing.T) {
	d := NewDist()
	for i := int64(1); i <= 100; i++ {
		d.Record(i * 1000)
	}
	good, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(s *Snapshot)
	}{
		{"mean +Inf", func(s *Snapshot) { s.Mean = math.Inf(1) }},
		{"mean -Inf", func(s *Snapshot) { s.Mean = math.Inf(-1) }},
		{"mean NaN", func(s *Snapshot) { s.Mean = math.NaN() }},
		{"mean 1e300", func(s *Snapshot) { s.Mean = 1e300 }},
		{"mean below min", func(s *Snapshot) { s.Mean = float64(s.Min) - 10 }},
		{"mean above max", func(s *Snapshot) { s.Mean = float64(s.Max) + 10 }},
		{"M2 +Inf", func(s *Snapshot) { s.M2 = math.Inf(1) }},
		{"M2 negative", func(s *Snapshot) { s.M2 = -1 }},
		{"M2 beyond the spread", func(s *Snapshot) { s.M2 = 1e30 }},
		{"min above max", func(s *Snapshot) { s.Min, s.Max = s.Max, s.Min }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.edit(&s)
			if _, err := FromSnapshot(s); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("FromSnapshot(%s) = %v, want ErrSnapshot", tt.name, err)
			}
		})
	}
	if _, err := FromSnapshot(good); err != nil {
		t.Fatalf("FromSnapshot(the snapshot itself) = %v, want it taken", err)
	}
}

// TestHistogramEmpty: a distribution without values has histograms without
// bins, written [] in JSON (the schema wants an array), never null.
func TestHistogramEmpty(t *testing.T) {
	d := NewDist()
	for _, h := range []*result.Histogram{d.Histogram("rtt", 10), d.LinearHistogram("rtt", time.Microsecond)} {
		b, err := json.Marshal(h)
		if err != nil || !strings.Contains(string(b), `"bins":[]`) || h.Total != 0 {
			t.Errorf("empty histogram = %s (%v), want total 0 and bins []", b, err)
		}
	}
}

// TestTrimmedMean checks the trimmed mean against one computed from the
// values themselves: the largest 5 % dropped, the rest averaged.
func TestTrimmedMean(t *testing.T) {
	d := NewDist()
	var vals []int64
	for i := int64(1); i <= 1000; i++ {
		v := i * 1000 // 1 µs to 1 ms
		if i > 950 {
			v = 1e9 // the slowest 5 %: one second each
		}
		vals = append(vals, v)
		d.Record(v)
	}
	var sum float64
	for _, v := range vals[:950] {
		sum += float64(v)
	}
	want := sum / 950
	got, ok := d.TrimmedMean(95)
	if !ok || math.Abs(float64(got)-want) > want*0.001 {
		t.Errorf("TrimmedMean(95) = %v, %v; want %v within 0.1%%", got, ok, time.Duration(want))
	}
	if all, _ := d.TrimmedMean(100); all < time.Duration(want)*10 {
		t.Errorf("TrimmedMean(100) = %v: the slow values should weigh in", all)
	}
	neg := NewDist()
	neg.Record(-5)
	neg.Record(10)
	if _, ok := neg.TrimmedMean(95); ok {
		t.Errorf("TrimmedMean of a negative value: ok, want not")
	}
	if _, ok := NewDist().TrimmedMean(95); ok {
		t.Errorf("TrimmedMean of nothing: ok, want not")
	}
}

// TestDistBelowZero: values below zero (one-way delays between two hosts'
// clocks) are ranked among the others, each percentile within 0.1% of
// the value at its rank among the sorted values, whether some, most or
// all are below zero; and a snapshot and a merge keep them.
func TestDistBelowZero(t *testing.T) {
	p := []float64{1, 10, 25, 50, 75, 90, 99, 99.9}
	for _, shift := range []int64{-2_000_000, -15_000_000, -60_000_000} {
		var vals []int64
		d, half := NewDist(), NewDist()
		for i := int64(0); i < 5000; i++ {
			v := (i*7919)%10007*2000 + shift // 0 to 20 ms, shifted down
			vals = append(vals, v)
			d.Record(v)
			if i%2 == 0 {
				half.Record(v)
			}
		}
		slices.Sort(vals)
		snap, err := d.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromSnapshot(snap)
		if err != nil {
			t.Fatalf("FromSnapshot(%d below zero) = %v", d.belowCount(), err)
		}
		merged := NewDist()
		merged.Merge(half)
		rest := NewDist()
		for i := int64(1); i < 5000; i += 2 {
			rest.Record((i*7919)%10007*2000 + shift)
		}
		merged.Merge(rest)
		for name, dist := range map[string]*Dist{"recorded": d, "from its snapshot": back, "merged": merged} {
			s := dist.Summary(p)
			for i, pc := range p {
				rank := min(max(int(pc/100*float64(len(vals))+0.5), 1), len(vals))
				want := vals[rank-1]
				got := int64(s.Percentiles[i].Value)
				if math.Abs(float64(got-want)) > math.Abs(float64(want))/1000+1 {
					t.Errorf("shift %v, %s: p%v = %v, want %v within 0.1%%", time.Duration(shift), name, pc, time.Duration(got), time.Duration(want))
				}
			}
		}
	}
}

// TestSnapshotBelowChecked: a snapshot whose histogram below zero does not
// add up with the other to its count, or that has values below zero and a
// min that is not, is refused.
func TestSnapshotBelowChecked(t *testing.T) {
	d := NewDist()
	d.Record(-3000)
	d.Record(5000)
	s, err := d.Snapshot()
	if err != nil || len(s.Below) == 0 {
		t.Fatalf("Snapshot of -3µs and 5µs = %+v, %v; want a histogram below zero", s, err)
	}
	tests := []struct {
		name string
		edit func(s *Snapshot)
	}{
		{"without its histogram below zero", func(s *Snapshot) { s.Below = nil }},
		{"a min from zero up", func(s *Snapshot) { s.Min, s.Mean, s.M2 = 0, 2500, 1e7 }},
		{"garbage below zero", func(s *Snapshot) { s.Below = []byte("garbage") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := s
			tt.edit(&bad)
			if _, err := FromSnapshot(bad); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("FromSnapshot = %v, want ErrSnapshot", err)
			}
		})
	}
}

// TestHistogramsBelowZero: the histograms count values below zero: the
// log-spaced one in its underflow, the linear one in its first bin, where
// a limit below zero makes outliers of those above it.
func TestHistogramsBelowZero(t *testing.T) {
	d := NewDist()
	for _, v := range []int64{-9000, -8000, -7000, 1000, 2000, 3000} {
		d.Record(v)
	}
	log := d.Histogram("up", 10)
	var inBins int64
	for _, b := range log.Bins {
		inBins += b.Count
	}
	if log.Underflow.Count < 3 || log.Underflow.Count+inBins+log.Overflow.Count != 6 {
		t.Errorf("log histogram: underflow %d, bins %d, overflow %d; want the 3 below zero in the underflow, 6 in all",
			log.Underflow.Count, inBins, log.Overflow.Count)
	}
	lin := d.LinearHistogram("up", time.Microsecond)
	if lin.Bins[0].Count != 3 || lin.Total != 6 {
		t.Errorf("linear histogram: first bin %d of %d, want the 3 below zero there", lin.Bins[0].Count, lin.Total)
	}
	// 19 values of -1 ms and one of -0.9 ms: mean -0.995 ms, stdev
	// 22.4 µs, so a limit of -0.928 ms that -0.9 ms is above.
	all := NewDist()
	for i := range 20 {
		v := int64(-1e6)
		if i == 0 {
			v = -9e5
		}
		all.Record(v)
	}
	if lin := all.LinearHistogram("up", time.Millisecond); lin.Outliers != 1 || lin.Bins[0].Count != 20 {
		t.Errorf("linear histogram of values all below zero: %d outliers, first bin %d; want 1 and 20", lin.Outliers, lin.Bins[0].Count)
	}
}
