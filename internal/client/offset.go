package client

import (
	"fmt"
	"math"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// The reflector's clock offset is estimated as NTP does, from T1..T4: an
// exchange's offset is ((T2−T1) + (T3−T4)) / 2, exact when the two ways
// took as long as each other, and off by at most half the exchange's
// delay (T4−T1) − (T3−T2) otherwise. The exchange with the smallest delay
// bounds it best, so the run keeps the fastest exchange of each interval
// and of the whole run.

// exchange is the fastest exchange seen.
type exchange struct {
	has          bool
	delay, theta int64 // its delay and offset
	at           int64 // when its reply came (T4)
}

func (e *exchange) add(t1, t2, t3, t4 int64) {
	delay := (t4 - t1) - (t3 - t2)
	if !e.has || delay < e.delay {
		*e = exchange{has: true, delay: delay, theta: ((t2 - t1) + (t3 - t4)) / 2, at: t4}
	}
}

func (e *exchange) merge(o exchange) {
	if o.has && (!e.has || o.delay < e.delay) {
		*e = o
	}
}

// maxDriftPPM is the drift above which the report warns that one offset
// does not fit the whole run.
const maxDriftPPM = 100

// driftFit fits the offset over time by least squares, from each
// interval's fastest exchange, in constant memory: a run of a day at 1s
// intervals keeps four sums, not 86,400 exchanges.
type driftFit struct {
	n                float64
	t0               int64 // the first exchange's time (T4)
	st, so, stt, sto float64
}

// add takes an interval's fastest exchange.
func (f *driftFit) add(e exchange) {
	if f.n == 0 {
		f.t0 = e.at
	}
	t, o := float64(e.at-f.t0)/1e9, float64(e.theta)
	f.n++
	f.st, f.so, f.stt, f.sto = f.st+t, f.so+o, f.stt+t*t, f.sto+t*o
}

// ppm returns the drift the fit found, in parts per million (0 from
// fewer than two exchanges).
func (f *driftFit) ppm() float64 {
	if f.n < 2 {
		return 0
	}
	if den := f.n*f.stt - f.st*f.st; den > 0 {
		return (f.n*f.sto - f.st*f.so) / den / 1e3 // ns per s is ppb: /1e3 for ppm
	}
	return 0
}

// clockOffset estimates the offset from best, the run's fastest exchange,
// its drift from the fit over each interval's fastest, and the up and
// down delays corrected by it.
func clockOffset(best exchange, drift *driftFit, up, down result.Latency) *result.ClockOffset {
	if !best.has {
		return nil
	}
	c := &result.ClockOffset{
		Offset:   time.Duration(best.theta),
		Bound:    time.Duration(best.delay / 2),
		Up:       shift(up, -best.theta),
		Down:     shift(down, best.theta),
		DriftPPM: drift.ppm(),
	}
	if math.Abs(c.DriftPPM) > maxDriftPPM {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the offset drifted %.0f ppm over the run: one offset does not fit it, and the corrected delays are approximate", c.DriftPPM))
	}
	if c.Up.Count > 0 && (c.Up.Min < 0 || c.Down.Min < 0) {
		c.Warnings = append(c.Warnings, "a corrected one-way delay came out negative: the two ways are not symmetric enough for the offset to be told apart from them")
	}
	return c
}

// shift returns l with every value moved by d; the spread stays.
func shift(l result.Latency, d int64) result.Latency {
	if l.Count == 0 {
		return l
	}
	s := l
	s.Min += time.Duration(d)
	s.Mean += time.Duration(d)
	s.Max += time.Duration(d)
	s.Percentiles = make([]result.Percentile, len(l.Percentiles))
	for i, p := range l.Percentiles {
		s.Percentiles[i] = result.Percentile{P: p.P, Value: p.Value + time.Duration(d)}
	}
	return s
}
