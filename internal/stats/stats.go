// Package stats accumulates delay distributions for volley's reports:
// HDR histograms for percentiles plus exact running moments. It does no I/O,
// and recording a value never allocates.
package stats

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-net/volley/internal/result"
)

// Range of the histograms: 1 ns to one minute at three significant digits.
const (
	lowest  = 1
	highest = int64(time.Minute)
	sigFigs = 3
)

// Dist is a distribution of delays in nanoseconds. Min, max, mean and
// standard deviation are exact; percentiles come from HDR histograms, one
// for the values from zero up and one for the magnitudes of those below
// zero (one-way delays between two hosts' clocks), each within its
// precision. Magnitudes above one minute count as one minute.
type Dist struct {
	h        *hdrhistogram.Histogram
	below    *hdrhistogram.Histogram // -v of each value v < 0; nil until one comes
	n        int64
	mean, m2 float64 // Welford's running mean and sum of squared deviations
	min, max int64
	tee      *Dist // its histogram records every value too (Tee); nil: none
}

// NewDist returns an empty distribution.
func NewDist() *Dist {
	return &Dist{h: hdrhistogram.New(lowest, highest, sigFigs)}
}

// coarseSigFigs is a coarse distribution's precision: percentiles within
// 1%, in a histogram a seventh of the size (30 KB, not 210 KB).
const coarseSigFigs = 2

// NewCoarseDist returns an empty distribution whose percentiles are
// within 1% rather than 0.1%: for a process that keeps many (volley
// monitor's targets), where the histograms' size and the time to clear,
// merge and read them each interval would dominate. Min, max, mean and
// standard deviation stay exact.
func NewCoarseDist() *Dist {
	return &Dist{h: hdrhistogram.New(lowest, highest, coarseSigFigs)}
}

// Record adds one value to d, and to its tee's histogram.
func (d *Dist) Record(v int64) {
	d.n++
	if d.n == 1 {
		d.min, d.max = v, v
	} else {
		d.min = min(d.min, v)
		d.max = max(d.max, v)
	}
	delta := float64(v) - d.mean
	d.mean += delta / float64(d.n)
	d.m2 += delta * (float64(v) - d.mean)
	if v < 0 {
		d.recordBelow(v)
		return
	}
	// Clamped into range, RecordValue cannot fail.
	hv := min(v, highest)
	_ = d.h.RecordValue(hv)
	if d.tee != nil {
		_ = d.tee.h.RecordValue(hv)
	}
}

// Signed makes d's histogram of values below zero now, where Record would
// make it on the first such value, and returns d: for a distribution that
// goes below zero in normal use (one-way delays between two hosts'
// clocks), so that recording never allocates; Reset touches its pages with
// the other's.
func (d *Dist) Signed() *Dist {
	d.belowHist()
	return d
}

// Bytes returns the memory d's histograms take.
func (d *Dist) Bytes() int {
	n := d.h.ByteSize()
	if d.below != nil {
		n += d.below.ByteSize()
	}
	return n
}

// recordBelow records v < 0 into the histogram of magnitudes below zero,
// which the first such value makes unless Signed did: a distribution that
// goes below zero only after a wall-clock step pays for it then, once.
func (d *Dist) recordBelow(v int64) {
	mag := highest
	if v > -highest {
		mag = -v
	}
	_ = d.belowHist().RecordValue(mag)
	if d.tee != nil {
		_ = d.tee.belowHist().RecordValue(mag)
	}
}

// belowHist returns d's histogram of magnitudes below zero, made at d's
// precision if d had none.
func (d *Dist) belowHist() *hdrhistogram.Histogram {
	if d.below == nil {
		d.below = hdrhistogram.New(lowest, highest, int(d.h.SignificantFigures()))
	}
	return d.below
}

// belowCount returns how many values below zero d's histograms hold.
func (d *Dist) belowCount() int64 {
	if d.below == nil {
		return 0
	}
	return d.below.TotalCount()
}

// Tee makes every value recorded into d from now on go into o's
// histograms too, at once (nil: no longer); o then takes the rest of d, its
// count, mean, deviation and extremes, with MergeMoments, which costs
// nothing like Merge. A run's intervals tee into its total: a merge walks
// every bucket of a histogram up to its largest value, 0.75 ms an
// interval for a run's dozen distributions, in the loop that reads the
// replies. A value in two histograms costs a few nanoseconds; its
// moments in two would cost a division more.
func (d *Dist) Tee(o *Dist) { d.tee = o }

// MergeMoments adds o's count, mean, deviation and extremes to d's, but
// not its histogram: for a d that o tees into.
func (d *Dist) MergeMoments(o *Dist) {
	if o.n == 0 {
		return
	}
	if d.n == 0 {
		d.min, d.max = o.min, o.max
	} else {
		d.min = min(d.min, o.min)
		d.max = max(d.max, o.max)
	}
	// Chan et al.'s parallel combination of means and squared deviations.
	n := d.n + o.n
	delta := o.mean - d.mean
	d.m2 += o.m2 + delta*delta*float64(d.n)*float64(o.n)/float64(n)
	d.mean += delta * float64(o.n) / float64(n)
	d.n = n
}

// Count returns the number of values recorded.
func (d *Dist) Count() int64 { return d.n }

// Merge adds every value of o to d.
func (d *Dist) Merge(o *Dist) {
	if o.n == 0 {
		return
	}
	d.MergeMoments(o)
	d.h.Merge(o.h)
	if o.belowCount() > 0 {
		d.belowHist().Merge(o.below)
	}
}

// Reset empties d, keeping its memory.
func (d *Dist) Reset() {
	d.h.Reset()
	if d.below != nil {
		d.below.Reset()
	}
	d.n, d.mean, d.m2, d.min, d.max = 0, 0, 0, 0, 0
}

// Summary returns d's statistics with the given percentiles (0 to 100).
func (d *Dist) Summary(percentiles []float64) result.Latency {
	l := result.Latency{Count: d.n, Percentiles: make([]result.Percentile, 0, len(percentiles))}
	if d.n == 0 {
		return l
	}
	l.Min = time.Duration(d.min)
	l.Max = time.Duration(d.max)
	l.Mean = time.Duration(math.Round(d.mean))
	if d.n > 1 {
		l.Stdev = time.Duration(math.Round(math.Sqrt(d.m2 / float64(d.n-1))))
	}
	for _, p := range percentiles {
		var v int64
		switch {
		case p <= 0:
			v = d.min
		case p >= 100:
			v = d.max
		default:
			// The histograms answer with a bucket's edge; never report
			// beyond what was really seen.
			v = min(max(d.valueAt(p), d.min), d.max)
		}
		l.Percentiles = append(l.Percentiles, result.Percentile{P: p, Value: time.Duration(v)})
	}
	return l
}

// valueAt returns the value at percentile p (0 < p < 100) of both
// histograms, ranked as hdrhistogram ranks: the nearest whole count to p%
// of the values lie at or below it. A rank among the values below zero is
// the magnitude's at the mirrored rank, negated. Each histogram answers
// with its bucket's far edge from zero, so a value from zero up is
// reported at or above the true one and a value below zero at or below
// it, both within the histogram's precision (0.1%).
func (d *Dist) valueAt(p float64) int64 {
	nb := d.belowCount()
	if nb == 0 {
		return d.h.ValueAtPercentile(p)
	}
	na := d.h.TotalCount()
	rank := min(max(int64(p/100*float64(na+nb)+0.5), 1), na+nb)
	if rank <= nb {
		// Each percentile asked of a histogram lands on the rank given
		// here: hdrhistogram rounds q/100*n + 0.5 down.
		return -d.below.ValueAtPercentile(100 * float64(nb-rank+1) / float64(nb))
	}
	return d.h.ValueAtPercentile(100 * float64(rank-nb) / float64(na))
}

// Distribution is a run's delays as a saved result keeps them for plots:
// rtt, up and down at result.DistributionLadder's percentiles, and rtt in
// log-spaced bins, ten a decade. A one-way run passes nil for rtt and
// down, and has up only.
func Distribution(rtt, up, down *Dist) *result.Distribution {
	if rtt == nil {
		return &result.Distribution{Up: up.Summary(result.DistributionLadder).Percentiles}
	}
	return &result.Distribution{
		RTT:          rtt.Summary(result.DistributionLadder).Percentiles,
		Up:           up.Summary(result.DistributionLadder).Percentiles,
		Down:         down.Summary(result.DistributionLadder).Percentiles,
		RTTHistogram: rtt.Histogram("rtt", 10),
	}
}

// Histogram returns d's values in log-spaced bins, perDecade to a factor of
// ten, between the power of ten at or below the 1st percentile and the one
// at or above the 99th. Values outside those go to the underflow and
// overflow buckets.
func (d *Dist) Histogram(of string, perDecade int) *result.Histogram {
	// Bins is never nil: a run without a value has a histogram without
	// bins ([] in JSON, as the schema says), not null.
	out := &result.Histogram{Of: of, Total: d.n, Bins: []result.Bin{}}
	if d.n == 0 || perDecade < 1 {
		return out
	}
	lo := math.Floor(math.Log10(float64(max(d.h.ValueAtPercentile(1), 1))))
	hi := math.Ceil(math.Log10(float64(max(d.h.ValueAtPercentile(99), 1))))
	if hi <= lo {
		hi = lo + 1
	}
	nbins := int(hi-lo) * perDecade
	edges := make([]int64, nbins+1)
	for i := range edges {
		edges[i] = int64(math.Round(math.Pow(10, lo+float64(i)/float64(perDecade))))
	}
	out.Bins = make([]result.Bin, nbins)
	for i := range out.Bins {
		out.Bins[i].Low, out.Bins[i].High = time.Duration(edges[i]), time.Duration(edges[i+1])
	}
	out.Underflow.High = time.Duration(edges[0])
	out.Overflow.Low = time.Duration(edges[nbins])
	for _, bar := range d.h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// A bar is a bucket of equivalent values; file it by its lowest.
		v := bar.From
		switch {
		case v < edges[0]:
			out.Underflow.Count += bar.Count
		case v >= edges[nbins]:
			out.Overflow.Count += bar.Count
		default:
			i := 0
			for v >= edges[i+1] {
				i++
			}
			out.Bins[i].Count += bar.Count
		}
	}
	out.Underflow.Count += d.belowCount()
	share := func(b *result.Bin) { b.Share = float64(b.Count) / float64(d.n) }
	share(&out.Underflow)
	share(&out.Overflow)
	for i := range out.Bins {
		share(&out.Bins[i])
	}
	return out
}

// LinearHistogram returns the distribution in bins of width from zero to
// the largest value, iperf 2's way, with Outliers counting the values more
// than three standard deviations above the mean. Values below zero count in
// the first bin. Underflow and Overflow stay empty.
func (d *Dist) LinearHistogram(of string, width time.Duration) *result.Histogram {
	out := &result.Histogram{Of: of, Total: d.n, Width: width, Bins: []result.Bin{}}
	if d.n == 0 || width <= 0 {
		return out
	}
	nbins := int(max(d.max, 0)/int64(width)) + 1
	out.Bins = make([]result.Bin, nbins)
	for i := range out.Bins {
		out.Bins[i].Low, out.Bins[i].High = time.Duration(i)*width, time.Duration(i+1)*width
	}
	limit := d.mean + 3*math.Sqrt(d.m2/float64(max(d.n-1, 1)))
	for _, bar := range d.h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i := min(int(bar.From/int64(width)), nbins-1)
		out.Bins[i].Count += bar.Count
		if float64(bar.From) > limit {
			out.Outliers += bar.Count
		}
	}
	out.Bins[0].Count += d.belowCount()
	if limit < 0 && d.belowCount() > 0 {
		for _, bar := range d.below.Distribution() {
			if bar.Count > 0 && float64(-bar.To) > limit {
				out.Outliers += bar.Count
			}
		}
	}
	for i := range out.Bins {
		out.Bins[i].Share = float64(out.Bins[i].Count) / float64(d.n)
	}
	return out
}

// Snapshot is a Dist in a form that can cross the network: exact moments
// and the HDR histograms in their standard compressed encoding.
type Snapshot struct {
	Count     int64   `json:"count"`
	Mean      float64 `json:"mean"`
	M2        float64 `json:"m2"`
	Min       int64   `json:"min"`
	Max       int64   `json:"max"`
	Histogram []byte  `json:"histogram"`       // HDR V2 compressed, base64: the values from zero up
	Below     []byte  `json:"below,omitempty"` // the same, of the values below zero negated; none: nil
}

// Snapshot returns d as a Snapshot.
func (d *Dist) Snapshot() (Snapshot, error) {
	enc, err := d.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return Snapshot{}, fmt.Errorf("encode histogram: %w", err)
	}
	s := Snapshot{Count: d.n, Mean: d.mean, M2: d.m2, Min: d.min, Max: d.max, Histogram: enc}
	if d.belowCount() > 0 {
		if s.Below, err = d.below.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err != nil {
			return Snapshot{}, fmt.Errorf("encode histogram below zero: %w", err)
		}
	}
	return s, nil
}

// ErrSnapshot says a snapshot does not describe a distribution.
var ErrSnapshot = errors.New("stats: bad snapshot")

// FromSnapshot rebuilds a Dist from s, which may come from another host:
// it is checked, not trusted.
func FromSnapshot(s Snapshot) (*Dist, error) {
	h, err := hdrhistogram.Decode(s.Histogram)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	var below *hdrhistogram.Histogram
	var nb int64
	if len(s.Below) > 0 {
		if below, err = hdrhistogram.Decode(s.Below); err != nil {
			return nil, fmt.Errorf("%w: below zero: %w", ErrSnapshot, err)
		}
		if below.HighestTrackableValue() > highest {
			return nil, fmt.Errorf("%w: a histogram below zero up to %d", ErrSnapshot, below.HighestTrackableValue())
		}
		if below.TotalCount() > 0 && s.Min >= 0 {
			return nil, fmt.Errorf("%w: %d values below zero for a min of %d", ErrSnapshot, below.TotalCount(), s.Min)
		}
		nb = below.TotalCount()
	}
	if h.TotalCount()+nb != s.Count || s.Count < 0 || (s.Count > 0 && s.Min > s.Max) ||
		h.HighestTrackableValue() > highest {
		return nil, fmt.Errorf("%w: histograms of %d values for a count of %d", ErrSnapshot, h.TotalCount()+nb, s.Count)
	}
	if s.Count == 0 {
		s.Mean, s.M2, s.Min, s.Max = 0, 0, 0, 0
	}
	if !momentsFit(s) {
		return nil, fmt.Errorf("%w: mean %g and M2 %g do not fit %d values from %d to %d", ErrSnapshot, s.Mean, s.M2, s.Count, s.Min, s.Max)
	}
	d := NewDist()
	d.h.Merge(h)
	if nb > 0 {
		d.belowHist().Merge(below)
	}
	d.n, d.mean, d.m2, d.min, d.max = s.Count, s.Mean, s.M2, s.Min, s.Max
	return d, nil
}

// momentsFit reports whether s's mean lies between its min and max and its
// M2 is no more than n values that far apart can make (each deviation is
// at most max-min): finite figures that every summary can print.
func momentsFit(s Snapshot) bool {
	if math.IsNaN(s.Mean) || math.IsInf(s.Mean, 0) || math.IsNaN(s.M2) || math.IsInf(s.M2, 0) || s.M2 < 0 {
		return false
	}
	spread := float64(s.Max) - float64(s.Min)
	return s.Mean >= float64(s.Min)-1 && s.Mean <= float64(s.Max)+1 && s.M2 <= float64(s.Count)*spread*spread+1
}

// TrimmedMean returns the mean of d's values less its largest (100-keep)
// %, as draft-ietf-ippm-responsiveness trims its round trips (keep 95).
// It comes from the histogram, each value at its bucket's middle, so it is
// within the histogram's precision. ok is false when d is empty or holds
// a value below zero (the histogram counts those as zero).
func (d *Dist) TrimmedMean(keep float64) (mean time.Duration, ok bool) {
	if d.n == 0 || d.min < 0 || keep <= 0 {
		return 0, false
	}
	want := float64(d.h.TotalCount()) * min(keep, 100) / 100
	var taken, sum float64
	for _, b := range d.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		c := min(float64(b.Count), want-taken)
		sum += c * (float64(b.From) + float64(b.To)) / 2
		taken += c
		if taken >= want {
			break
		}
	}
	if taken == 0 {
		return 0, false
	}
	return time.Duration(math.Round(sum / taken)), true
}
