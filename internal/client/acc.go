package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// The distributions each interval keeps, in this order.
const (
	distRTT = iota
	distResponse
	distUp
	distDown
	distIPDVRTT
	distIPDVUp
	distIPDVDown
	distRTTSched  // RTT from the scheduled send time (open loop)
	distSendError // actual minus scheduled send time (open loop)
	numDists
)

// acc accumulates one interval.
type acc struct {
	start     int64
	counts    result.Counts
	bytesUp   uint64
	bytesDown uint64
	d         [numDists]*stats.Dist
	kern      [numKDists]*stats.Dist // kernel stamps' figures; nil without them
	coarse    bool                   // its histograms are stats' coarse ones (Config.Shared)
	sum       *acc                   // its distributions tee into sum's (teeInto); nil: none
}

// kernel returns a's kernel distributions, made on first use. A run with
// kernel stamps makes them before measuring, and touches their pages
// there (prepareKernel, openInterval): made on the measured path, they
// cost the first kernel-stamped reply of an interval an allocation and
// their pages' first touch.
func (a *acc) kernel() *[numKDists]*stats.Dist {
	if a.kern[0] == nil {
		for i := range a.kern {
			a.kern[i] = a.newDist()
		}
		if a.sum != nil {
			a.teeInto(a.sum)
		}
	}
	return &a.kern
}

// teeInto makes every value recorded into a's distributions go into
// sum's histograms at once: sum then takes the rest of a with
// mergeMoments, and no merge of histograms (see stats.Dist.Tee).
func (a *acc) teeInto(sum *acc) {
	a.sum = sum
	for i, d := range a.d {
		d.Tee(sum.d[i])
	}
	if a.kern[0] != nil {
		ks := sum.kernel()
		for i, d := range a.kern {
			d.Tee(ks[i])
		}
	}
}

// addCounts adds o's counts and bytes to a's.
func (a *acc) addCounts(o *acc) {
	a.counts.Add(o.counts)
	a.bytesUp += o.bytesUp
	a.bytesDown += o.bytesDown
}

// mergeMoments adds o, which tees into a (teeInto), to a: its counts,
// and its distributions but for their histograms, which a has already.
func (a *acc) mergeMoments(o *acc) { a.mergeBy(o, (*stats.Dist).MergeMoments) }

// merge adds o to a.
func (a *acc) merge(o *acc) { a.mergeBy(o, (*stats.Dist).Merge) }

// mergeBy adds o's counts to a's, and each of its distributions to a's
// with add.
func (a *acc) mergeBy(o *acc, add func(d, o *stats.Dist)) {
	a.addCounts(o)
	for i := range a.d {
		add(a.d[i], o.d[i])
	}
	if o.kern[0] != nil {
		kd := a.kernel()
		for i := range kd {
			add(kd[i], o.kern[i])
		}
	}
}

// prepareKernel makes a's kernel distributions and writes every bucket of
// each, faulting their pages in as reset does a's other distributions.
// Nothing may have been recorded into them.
func (a *acc) prepareKernel() {
	for _, d := range a.kernel() {
		d.Reset()
	}
}

// newAcc returns an empty accumulator; coarse makes its histograms
// stats' coarse ones.
func newAcc(coarse bool) *acc {
	a := &acc{coarse: coarse}
	for i := range a.d {
		a.d[i] = a.newDist()
	}
	// Up and down between two hosts' clocks go below zero in normal use.
	a.d[distUp].Signed()
	a.d[distDown].Signed()
	return a
}

func (a *acc) newDist() *stats.Dist {
	if a.coarse {
		return stats.NewCoarseDist()
	}
	return stats.NewDist()
}

func (a *acc) reset(start int64) {
	a.start = start
	a.counts = result.Counts{}
	a.bytesUp, a.bytesDown = 0, 0
	for _, d := range a.d {
		d.Reset()
	}
	if a.kern[0] != nil {
		for _, d := range a.kern {
			d.Reset()
		}
	}
}

// restart empties a's counts, from start on, and leaves its histograms as
// they are: empty, where nothing was recorded into them (see
// recorder.startMeasuring).
func (a *acc) restart(start int64) {
	a.start = start
	a.counts = result.Counts{}
	a.bytesUp, a.bytesDown = 0, 0
}

// interval renders a as a result interval ending at end; origin is the
// start of measurement.
func (a *acc) interval(origin, end int64, pct []float64) result.Interval {
	iv := result.Interval{
		Start:    time.Duration(a.start - origin),
		End:      time.Duration(end - origin),
		Counts:   a.counts,
		RTT:      a.d[distRTT].Summary(pct),
		Response: a.d[distResponse].Summary(pct),
		Up:       a.d[distUp].Summary(pct),
		Down:     a.d[distDown].Summary(pct),
		IPDV: result.IPDV{
			RTT:  a.d[distIPDVRTT].Summary(pct),
			Up:   a.d[distIPDVUp].Summary(pct),
			Down: a.d[distIPDVDown].Summary(pct),
		},
	}
	if a.d[distSendError].Count() > 0 || a.d[distRTTSched].Count() > 0 {
		rs, se := a.d[distRTTSched].Summary(pct), a.d[distSendError].Summary(pct)
		iv.RTTFromSchedule, iv.SendError = &rs, &se
	}
	if a.kern[0] != nil {
		iv.Kernel = a.kernelSummary(pct)
	}
	if iv.Counts.Sent > 0 {
		iv.Counts.LossPercent = 100 * float64(iv.Counts.Lost) / float64(iv.Counts.Sent)
	}
	iv.Throughput.BytesUp, iv.Throughput.BytesDown = a.bytesUp, a.bytesDown
	if secs := time.Duration(end - a.start).Seconds(); secs > 0 {
		t := &iv.Throughput
		t.ProbesPerSecUp = float64(a.counts.Sent) / secs
		t.ProbesPerSecDown = float64(a.counts.Received) / secs
		t.BitsPerSecUp = float64(a.bytesUp*8) / secs
		t.BitsPerSecDown = float64(a.bytesDown*8) / secs
		t.RequestsPerSec = float64(a.counts.Received) / secs
	}
	return iv
}

// distribution is a's delays as a plot of the saved result draws them.
func distribution(cfg *Config, a *acc) *result.Distribution {
	if cfg.OneWay {
		return stats.Distribution(nil, a.d[distUp], nil)
	}
	return stats.Distribution(a.d[distRTT], a.d[distUp], a.d[distDown])
}

// histogram is the histogram a run asked for, from a: RTT, or one-way
// delay for a one-way run; nil when none was asked for.
func histogram(cfg *Config, a *acc) *result.Histogram {
	switch {
	case cfg.HistogramWidth > 0 && !cfg.OneWay:
		return a.d[distRTT].LinearHistogram("rtt", cfg.HistogramWidth)
	case cfg.Histogram == 0:
		return nil
	case cfg.OneWay:
		return a.d[distUp].Histogram("up", cfg.Histogram)
	}
	return a.d[distRTT].Histogram("rtt", cfg.Histogram)
}
