package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// loadFixture is a --load up run: an idle phase, one whose up delay grew
// by about 3 ms, and an idle one again.
func loadFixture() *result.Result {
	res := fixture()
	res.Config.Rate, res.Config.ReportInterval, res.Config.Duration = 100, 5*time.Second, 15*time.Second
	phase := func(i int, up time.Duration) result.Interval {
		rtt, _ := latency(500, 200*time.Microsecond+up)
		upL, _ := latency(500, 100*time.Microsecond+up)
		downL, _ := latency(500, 100*time.Microsecond)
		iv := res.Intervals[0]
		iv.Start, iv.End = time.Duration(i)*5*time.Second, time.Duration(i+1)*5*time.Second
		iv.RTT, iv.Up, iv.Down = rtt, upL, downL
		return iv
	}
	ivs := []result.Interval{phase(0, 0), phase(1, 3*time.Millisecond), phase(2, 0)}
	res.Intervals = ivs
	diff := func(a, b result.Latency) []result.Percentile {
		var out []result.Percentile
		for i, p := range a.Percentiles {
			out = append(out, result.Percentile{P: p.P, Value: p.Value - b.Percentiles[i].Value})
		}
		return out
	}
	l := &result.Load{Direction: "up", Streams: 4, Phase: 5 * time.Second, SeriesStep: 100 * time.Millisecond,
		Errors: []string{"load: stream 3: connection reset by peer"}}
	for i, name := range []string{"idle", "loaded", "idle-after"} {
		p := result.Phase{Name: name, Loaded: i == 1, Probes: ivs[i]}
		if i > 0 {
			p.Added = &result.Added{RTT: diff(ivs[i].RTT, ivs[0].RTT), Up: diff(ivs[i].Up, ivs[0].Up), Down: diff(ivs[i].Down, ivs[0].Down), Queue: "none"}
		}
		if p.Loaded {
			p.Streams, p.BytesUp, p.BitsPerSecUp = 4, 30_000_000, 48e6
			p.Added.Queue = "up"
		}
		l.Phases = append(l.Phases, p)
	}
	for i := range 3 {
		l.Series = append(l.Series, result.LoadPoint{At: time.Duration(51+i) * 100 * time.Millisecond, BitsPerSecUp: 47e6 + float64(i)*1e6})
	}
	l.Responsiveness = &result.Responsiveness{Draft: "draft-ietf-ippm-responsiveness-08", RPM: 18500, IdleRPM: 280000,
		TrimmedMean: 3240 * time.Microsecond, TrimmedUp: 3140 * time.Microsecond, TrimmedDown: 102 * time.Microsecond, Samples: 500, Queue: "up"}
	res.Load = l
	return res
}

// TestGoldenLoad: a --load run's text and JSON, and the text's load block
// says each phase, what the load added and where, and the score.
func TestGoldenLoad(t *testing.T) {
	res := loadFixture()
	added := "rtt p50 +" + Duration(median(res.Load.Phases[1].Added.RTT))
	var b bytes.Buffer
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "load.txt", b.Bytes())
	for _, want := range []string{"latency under load: 4 bulk stream(s) uploading", "\nloaded ", "\nidle-after ",
		"added by load (loaded less idle): " + added, "responsiveness 18500 RPM under load, 280000 RPM idle",
		"queue    built on the way up", "load     load: stream 3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteJSON(&b, loadFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "load.json", b.Bytes())
}

// median returns the 50th percentile of ps.
func median(ps []result.Percentile) time.Duration {
	for _, p := range ps {
		if p.P == 50 {
			return p.Value
		}
	}
	return 0
}
