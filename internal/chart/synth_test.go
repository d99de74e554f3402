package chart

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// synth describes a made-up run for the tests.
type synth struct {
	label       string
	probes      int           // measured probes, spread over the intervals
	intervals   int           // one-second intervals
	keep        bool          // keep the probes (Run.Probes)
	oneWay      bool          // a one-way run: up delays only
	noDist      bool          // a saved result from before Distribution
	base        time.Duration // the smallest RTT
	lossEvery   int           // every lossEvery-th probe is lost (0: none)
	spikeEvery  int           // every spikeEvery-th probe's delays are 100 times as long (0: none)
	percentiles []float64     // the run's percentiles (nil: testPercentiles)
	queue       time.Duration // added to the down delay of the probes of the middle third of the intervals
}

var testPercentiles = []float64{50, 90, 99, 99.9}

// dists are the delays of an interval or of the whole run.
type dists struct{ rtt, up, down *stats.Dist }

func newDists() dists { return dists{stats.NewDist(), stats.NewDist(), stats.NewDist()} }

// makeRun builds a run from s with internal/stats, as the client does: a
// delay is a base plus an exponential tail, split 45/55 up and down.
func makeRun(t testing.TB, s synth) Run {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(s.base)))
	if s.percentiles == nil {
		s.percentiles = testPercentiles
	}
	res := &result.Result{
		SchemaVersion: result.SchemaVersion, Tool: "volley", Version: "v9.8.7-test",
		Start: time.Date(2026, 11, 30, 14, 5, 6, 0, time.UTC),
		Config: result.Config{Target: "reflector.example:2112", Transport: "udp",
			LocalAddr: "192.0.2.1:40000", RemoteAddr: "192.0.2.2:2112", Size: 64, ReplySize: 200,
			Window: 4, Percentiles: s.percentiles, OneWay: s.oneWay, Parallel: 1,
			ReportInterval: time.Second, Duration: time.Duration(s.intervals) * time.Second},
	}
	total := newDists()
	var all result.Counts
	per := 0
	if s.intervals > 0 {
		per = s.probes / s.intervals
	}
	var probes []result.Probe
	lost := 0 // the run's losses so far: they alternate up and down
	for iv := range s.intervals {
		d := newDists()
		var c result.Counts
		for j := range per {
			sent := time.Duration(iv)*time.Second + time.Duration(j)*time.Second/time.Duration(per)
			c.Sent++
			if s.lossEvery > 0 && (iv*per+j)%s.lossEvery == s.lossEvery-1 {
				c.Lost++
				lost++
				if lost%2 == 1 {
					c.LostUp++
				} else {
					c.LostDown++
				}
				probes = append(probes, result.Probe{Sent: sent, Lost: true})
				continue
			}
			c.Received++
			rtt := s.base + time.Duration(rng.ExpFloat64()*float64(s.base)/3)
			if s.spikeEvery > 0 && (iv*per+j)%s.spikeEvery == 0 {
				rtt *= 100
			}
			up := rtt * 45 / 100
			if s.queue > 0 && iv >= s.intervals/3 && iv < 2*s.intervals/3 {
				rtt += s.queue
			}
			p := result.Probe{Sent: sent, RTT: rtt, Up: up, Down: rtt - up}
			if s.oneWay {
				p.RTT, p.Down = 0, 0
			}
			probes = append(probes, p)
			for _, x := range []dists{d, total} {
				x.up.Record(int64(p.Up))
				if !s.oneWay {
					x.rtt.Record(int64(p.RTT))
					x.down.Record(int64(p.Down))
				}
			}
		}
		all.Add(c)
		res.Intervals = append(res.Intervals, interval(d, c, time.Duration(iv)*time.Second, s))
	}
	res.Summary = interval(total, all, 0, s)
	res.Summary.End = time.Duration(s.intervals) * time.Second
	if !s.noDist {
		res.Distribution = &result.Distribution{Up: total.up.Summary(result.DistributionLadder).Percentiles}
		if !s.oneWay {
			res.Distribution.RTT = total.rtt.Summary(result.DistributionLadder).Percentiles
			res.Distribution.Down = total.down.Summary(result.DistributionLadder).Percentiles
			res.Distribution.RTTHistogram = total.rtt.Histogram("rtt", 10)
		}
	}
	r := Run{Label: s.label, Result: res}
	if s.keep {
		r.Probes = probes
	}
	return r
}

// interval makes the result.Interval of d and c starting at start.
func interval(d dists, c result.Counts, start time.Duration, s synth) result.Interval {
	if c.Sent > 0 {
		c.LossPercent = 100 * float64(c.Lost) / float64(c.Sent)
	}
	iv := result.Interval{Start: start, End: start + time.Second, Counts: c,
		RTT: d.rtt.Summary(s.percentiles), Up: d.up.Summary(s.percentiles), Down: d.down.Summary(s.percentiles)}
	iv.Throughput.BitsPerSecUp = float64(c.Sent) * 64 * 8
	if !s.oneWay {
		iv.Throughput.BitsPerSecDown = float64(c.Received) * 200 * 8
	}
	return iv
}
