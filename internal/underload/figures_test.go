package underload

import (
	"errors"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

func TestQueue(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		idleRTT, up, down time.Duration
		want              string
	}{
		{200 * time.Microsecond, 3 * ms, 50 * time.Microsecond, "up"},
		{200 * time.Microsecond, 50 * time.Microsecond, 3 * ms, "down"},
		{200 * time.Microsecond, 3 * ms, 2 * ms, "both"},
		{200 * time.Microsecond, 12 * ms, 2 * ms, "up"},             // down grew by less than a quarter of up's
		{200 * time.Microsecond, 900 * time.Microsecond, 0, "none"}, // under the floor
		{100 * ms, 5 * ms, 0, "none"},                               // under a tenth of a long idle RTT
		{100 * ms, 15 * ms, 0, "up"},
	} {
		if got := queue(tt.idleRTT, tt.up, tt.down); got != tt.want {
			t.Errorf("queue(%v, %v, %v) = %q, want %q", tt.idleRTT, tt.up, tt.down, got, tt.want)
		}
	}
}

// TestFigures feeds the observer and the intervals of a run whose loaded
// phase queued 5 ms on the way up, and checks the phases, the added
// delay and the score that come out.
func TestFigures(t *testing.T) {
	const phase = 5 * time.Second
	lc := Config{Directions: []load.Direction{load.Up}, Streams: 4, Phase: phase}
	o := newObserver(phase)
	queued := [phases]time.Duration{0, 5 * time.Millisecond, 0}
	var ivs []result.Interval
	for i := range phases {
		var iv result.Interval
		iv.Start, iv.End = time.Duration(i)*phase, time.Duration(i+1)*phase
		rtt, up, down := stats.NewDist(), stats.NewDist(), stats.NewDist()
		for k := range 500 {
			u := 100*time.Microsecond + queued[i] + time.Duration(k)*time.Microsecond
			r := client.Reply{Sent: iv.Start + time.Duration(k)*10*time.Millisecond, RTT: u + 100*time.Microsecond,
				Up: u, Down: 100 * time.Microsecond, OneWay: true}
			o.Reply(r)
			rtt.Record(int64(r.RTT))
			up.Record(int64(r.Up))
			down.Record(int64(r.Down))
		}
		iv.RTT, iv.Up, iv.Down = rtt.Summary([]float64{50, 99}), up.Summary([]float64{50, 99}), down.Summary([]float64{50, 99})
		ivs = append(ivs, iv)
	}
	began := time.Now()
	sc := &schedule{granted: 4, movedUp: 25_000_000, began: began, ended: began.Add(phase - 100*time.Millisecond)}
	l := lc.figures(ivs, o, sc, time.Second)
	if len(l.Phases) != phases || !l.Phases[phaseLoaded].Loaded || l.Phases[phaseIdle].Loaded {
		t.Fatalf("phases = %+v, want idle, loaded, idle-after", l.Phases)
	}
	if got, want := l.Phases[phaseLoaded].BitsPerSecUp, float64(sc.movedUp)*8/(phase-100*time.Millisecond).Seconds(); got != want {
		t.Errorf("loaded goodput up = %v, want %v: the bytes over the span the streams ran", got, want)
	}
	a := l.Phases[phaseLoaded].Added
	if d := median(result.Latency{Count: 1, Percentiles: a.Up}); d < 4900*time.Microsecond || d > 5100*time.Microsecond {
		t.Errorf("added up p50 = %v, want about %v", d, queued[phaseLoaded])
	}
	if a.Queue != "up" || l.Phases[phaseAfter].Added.Queue != "none" {
		t.Errorf("queue loaded %q, after %q; want up, none", a.Queue, l.Phases[phaseAfter].Added.Queue)
	}
	r := l.Responsiveness
	if r == nil || r.Queue != "up" || r.Samples != 500 || r.Draft != Draft {
		t.Fatalf("responsiveness = %+v", r)
	}
	// The trimmed mean keeps the fastest 475 of 500 RTTs: 5.2 ms + 237 µs
	// on average.
	want := 5*time.Millisecond + 200*time.Microsecond + 237*time.Microsecond
	if d := r.TrimmedMean - want; d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("trimmed mean = %v, want %v", r.TrimmedMean, want)
	}
	if r.RPM != float64(time.Minute)/float64(r.TrimmedMean) || r.IdleRPM <= r.RPM {
		t.Errorf("rpm %v, idle %v: want 60 s over the trimmed mean, and more when idle", r.RPM, r.IdleRPM)
	}
}

// TestFiguresLostAndUnloaded: a probe lost under load counts in the score
// as a round trip of the timeout; a run whose streams never started has
// its idle phase only, and no score.
func TestFiguresLostAndUnloaded(t *testing.T) {
	const phase = time.Second
	lc := Config{Directions: []load.Direction{load.Down}, Streams: 1, Phase: phase}
	ivs := make([]result.Interval, phases)
	score := func(lost uint64) float64 {
		o := newObserver(phase)
		for k := range 100 {
			o.Reply(client.Reply{Sent: phase + time.Duration(k)*time.Millisecond, RTT: time.Millisecond})
		}
		ivs[phaseLoaded].Counts.Lost = lost
		l := lc.figures(ivs, o, &schedule{granted: 1}, time.Second)
		return l.Responsiveness.RPM
	}
	if clean, lossy := score(0), score(20); lossy >= clean/10 {
		t.Errorf("rpm %v with 20 of 120 probes lost, %v with none: want loss to weigh as the timeout", lossy, clean)
	}
	for name, sc := range map[string]*schedule{
		"no stream started": {},
		"some refused":      {granted: 14, err: errors.New("--load: refused by the reflector: too many load streams")},
	} {
		l := lc.figures(ivs, newObserver(phase), sc, time.Second)
		if len(l.Phases) != 1 || l.Responsiveness != nil {
			t.Errorf("%s: %d phases, score %+v; want the idle phase only", name, len(l.Phases), l.Responsiveness)
		}
	}
}

func TestCheck(t *testing.T) {
	lc := Config{Directions: []load.Direction{load.Down}, Streams: 4, Phase: 2 * time.Second}
	ok := client.Config{Rate: 100, ReportInterval: 2 * time.Second, Duration: 6 * time.Second}
	if err := lc.Check(ok); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	bad := map[string]func(*Config, *client.Config){
		"no direction":   func(l *Config, _ *client.Config) { l.Directions = nil },
		"too many":       func(l *Config, _ *client.Config) { l.Streams = MaxStreams + 1 },
		"short phase":    func(l *Config, _ *client.Config) { l.Phase = time.Millisecond },
		"closed loop":    func(_ *Config, c *client.Config) { c.Rate = 0 },
		"other interval": func(_ *Config, c *client.Config) { c.ReportInterval = time.Second },
		"warm-up":        func(_ *Config, c *client.Config) { c.WarmupCount = 10 },
	}
	for name, change := range bad {
		l, c := lc, ok
		change(&l, &c)
		if err := l.Check(c); err == nil {
			t.Errorf("%s: Check = nil, want an error", name)
		}
	}
}
