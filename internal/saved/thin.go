package saved

import (
	"slices"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// MaxIntervals is the most intervals a file read keeps (about 27 hours at
// 1 s): past it, neighbours are merged (see Thinner).
const MaxIntervals = 100000

// Thinner keeps at most Max intervals of a run, however many it is given:
// past Max, neighbours are merged in pairs and later intervals are taken
// two at a time (then four...), so that memory stays flat however long
// the run. Counts, bytes, minima and maxima of merged intervals stay
// exact; their means and percentiles are the count-weighted mean of the
// two (an approximation). The zero Thinner keeps none: make one with
// NewThinner.
type Thinner struct {
	// Trim drops from each interval what a plot does not draw (kernel,
	// TCP, send error and RTT from schedule), to keep less.
	Trim    bool
	max     int
	ivs     []result.Interval
	stride  int              // how many of the run's intervals each kept one holds
	partial *result.Interval // the kept interval being filled, when stride > 1
	filled  int              // how many intervals partial holds
	added   int
}

// NewThinner returns a Thinner that keeps at most limit intervals (at least
// 2).
func NewThinner(limit int) *Thinner { return &Thinner{max: max(limit, 2), stride: 1} }

// Add keeps iv, the interval after those added before, merged with its
// neighbours as the stride asks.
func (t *Thinner) Add(iv result.Interval) {
	t.added++
	if t.partial == nil {
		if t.Trim {
			iv.Kernel, iv.TCP, iv.RTTFromSchedule, iv.SendError = nil, nil, nil, nil
		}
		t.partial, t.filled = &iv, 0
	} else {
		MergeInterval(t.partial, iv)
	}
	if t.filled++; t.filled < t.stride {
		return
	}
	t.ivs, t.partial = append(t.ivs, *t.partial), nil
	if len(t.ivs) < t.max {
		return
	}
	for i := range len(t.ivs) / 2 {
		t.ivs[i] = t.ivs[2*i]
		MergeInterval(&t.ivs[i], t.ivs[2*i+1])
	}
	clear(t.ivs[len(t.ivs)/2:])
	t.ivs, t.stride = t.ivs[:len(t.ivs)/2], 2*t.stride
}

// Intervals returns the intervals kept.
func (t *Thinner) Intervals() []result.Interval {
	if t.partial != nil {
		return append(t.ivs, *t.partial)
	}
	return t.ivs
}

// Added is how many intervals were added.
func (t *Thinner) Added() int { return t.added }

// Stride is how many of the intervals added each kept one holds (1: none
// merged).
func (t *Thinner) Stride() int { return t.stride }

// Thin returns ivs as a Thinner of limit keeps them: at most limit,
// neighbours merged past that.
func Thin(ivs []result.Interval, limit int, trim bool) []result.Interval {
	t := NewThinner(limit)
	t.Trim = trim
	for _, iv := range ivs {
		t.Add(iv)
	}
	return t.Intervals()
}

// MergeInterval adds b, the interval after a, into a: counts, bytes,
// minima and maxima exact; rates over the span of both; means and
// percentiles each the count-weighted mean of the two. What is not merged
// (kernel, TCP, send error, RTT from schedule) is dropped.
func MergeInterval(a *result.Interval, b result.Interval) {
	a.End = b.End
	a.Counts.Add(b.Counts)
	if a.Counts.Sent > 0 {
		a.Counts.LossPercent = 100 * float64(a.Counts.Lost) / float64(a.Counts.Sent)
	}
	for _, l := range []struct{ a, b *result.Latency }{{&a.RTT, &b.RTT}, {&a.Response, &b.Response}, {&a.Up, &b.Up}, {&a.Down, &b.Down},
		{&a.IPDV.RTT, &b.IPDV.RTT}, {&a.IPDV.Up, &b.IPDV.Up}, {&a.IPDV.Down, &b.IPDV.Down}} {
		MergeLatency(l.a, *l.b)
	}
	a.Kernel, a.TCP, a.RTTFromSchedule, a.SendError = nil, nil, nil, nil
	t, s := &a.Throughput, (a.End - a.Start).Seconds()
	t.BytesUp += b.Throughput.BytesUp
	t.BytesDown += b.Throughput.BytesDown
	if s > 0 {
		t.BitsPerSecUp, t.BitsPerSecDown = float64(8*t.BytesUp)/s, float64(8*t.BytesDown)/s
		t.ProbesPerSecUp, t.ProbesPerSecDown = float64(a.Counts.Sent)/s, float64(a.Counts.Received)/s
		t.RequestsPerSec = float64(a.Counts.Received) / s
	}
}

// MergeLatency adds b into a (see MergeInterval). A percentile of a that
// b does not have at the same place keeps a's value.
func MergeLatency(a *result.Latency, b result.Latency) {
	switch {
	case b.Count == 0:
		return
	case a.Count == 0:
		*a = b
		a.Percentiles = slices.Clone(b.Percentiles)
		return
	}
	n := a.Count + b.Count
	wa, wb := float64(a.Count)/float64(n), float64(b.Count)/float64(n)
	mean := func(x, y time.Duration) time.Duration { return time.Duration(wa*float64(x) + wb*float64(y)) }
	a.Min, a.Max, a.Mean, a.Stdev = min(a.Min, b.Min), max(a.Max, b.Max), mean(a.Mean, b.Mean), mean(a.Stdev, b.Stdev)
	for i := range min(len(a.Percentiles), len(b.Percentiles)) {
		if a.Percentiles[i].P == b.Percentiles[i].P {
			a.Percentiles[i].Value = mean(a.Percentiles[i].Value, b.Percentiles[i].Value)
		}
	}
	a.Count = n
}
