package saved

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// withLoad is run.json as a latency-under-load run: its first three
// intervals as the phases, a series every 100 ms and a score.
func withLoad(t *testing.T) *result.Result {
	t.Helper()
	res := read(t, "run.json", Options{}).Result
	if len(res.Intervals) < 3 {
		t.Fatalf("run.json has %d intervals, want at least 3", len(res.Intervals))
	}
	l := &result.Load{Direction: "both", Streams: 4, Phase: time.Second, SeriesStep: 100 * time.Millisecond,
		Errors: []string{"stream 2 (up): cut short"}}
	for i, name := range []string{"idle", "loaded", "idle-after"} {
		ph := result.Phase{Name: name, Loaded: i == 1, Probes: res.Intervals[i]}
		if ph.Loaded {
			ph.Streams, ph.BytesUp, ph.BytesDown, ph.BitsPerSecUp, ph.BitsPerSecDown = 8, 5e6, 6e6, 40e6, 48e6
		}
		if i > 0 {
			ph.Added = &result.Added{RTT: []result.Percentile{{P: 50, Value: -3 * time.Microsecond}, {P: 99, Value: 4 * time.Millisecond}},
				Up: []result.Percentile{{P: 50, Value: 2 * time.Millisecond}}, Down: []result.Percentile{{P: 50, Value: time.Microsecond}}, Queue: "up"}
		}
		l.Phases = append(l.Phases, ph)
	}
	for at := 100 * time.Millisecond; at <= 3*time.Second; at += l.SeriesStep {
		l.Series = append(l.Series, result.LoadPoint{At: at, BitsPerSecUp: 40e6, BitsPerSecDown: 48e6})
	}
	l.Responsiveness = &result.Responsiveness{Draft: "draft-ietf-ippm-responsiveness-08", RPM: 12345.5, IdleRPM: 200000,
		TrimmedMean: 4860 * time.Microsecond, TrimmedUp: 4 * time.Millisecond, TrimmedDown: 800 * time.Microsecond, Samples: 95, Queue: "up"}
	res.Load = l
	return res
}

// TestLoadRoundTrip: a latency-under-load run's Load survives a document
// and a stream read back, whole, and is written again byte for byte.
func TestLoadRoundTrip(t *testing.T) {
	res := withLoad(t)
	for _, tt := range []struct {
		kind  Kind
		write func(*bytes.Buffer, *result.Result) error
	}{
		{JSON, func(b *bytes.Buffer, r *result.Result) error { return report.WriteJSON(b, r) }},
		{JSONL, func(b *bytes.Buffer, r *result.Result) error { return report.WriteJSONL(b, r) }},
	} {
		var saved bytes.Buffer
		if err := tt.write(&saved, res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(saved.String(), `"load"`) {
			t.Fatalf("kind %v: the written result has no load", tt.kind)
		}
		f, err := ReadFrom(context.Background(), bytes.NewReader(saved.Bytes()), "load.json", Options{})
		if err != nil {
			t.Fatalf("kind %v: ReadFrom = %v", tt.kind, err)
		}
		if f.Kind != tt.kind || !reflect.DeepEqual(f.Result.Load, res.Load) {
			t.Errorf("kind %v: read back as %v, Load %+v; want %+v", tt.kind, f.Kind, f.Result.Load, res.Load)
		}
		var again bytes.Buffer
		if err := tt.write(&again, f.Result); err != nil {
			t.Fatal(err)
		}
		if again.String() != saved.String() {
			t.Errorf("kind %v: written again:\n%s\nwant:\n%s", tt.kind, again.String(), saved.String())
		}
	}
}

// TestLoadPercentiles: --percentiles reaches the phases' figures too.
func TestLoadPercentiles(t *testing.T) {
	var saved bytes.Buffer
	if err := report.WriteJSON(&saved, withLoad(t)); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrom(context.Background(), &saved, "load.json", Options{Percentiles: []float64{50, 100}})
	if err != nil {
		t.Fatal(err)
	}
	for i, ph := range f.Result.Load.Phases {
		var ps []float64
		for _, p := range ph.Probes.RTT.Percentiles {
			ps = append(ps, p.P)
		}
		if !reflect.DeepEqual(ps, []float64{50, 100}) {
			t.Errorf("phase %d RTT percentiles %v, want p50 and p100", i, ps)
		}
	}
}

// TestLoadChecked: a Load's values volley never writes are errors that
// name the field, and its text is cleaned as the rest's.
func TestLoadChecked(t *testing.T) {
	for _, tt := range []struct {
		name  string
		set   func(*result.Load)
		field string
	}{
		{"negative streams", func(l *result.Load) { l.Streams = -1 }, "load.streams"},
		{"negative phase", func(l *result.Load) { l.Phase = -time.Second }, "load.phase_ns"},
		{"negative step", func(l *result.Load) { l.SeriesStep = -1 }, "load.series_step_ns"},
		{"too many phases", func(l *result.Load) { l.Phases = make([]result.Phase, maxPhases+1) }, "load.phases"},
		{"negative rate", func(l *result.Load) { l.Phases[1].BitsPerSecDown = -1 }, "load.phases[1]"},
		{"series before the run", func(l *result.Load) { l.Series[3].At = -1 }, "load.series[3]"},
		{"phase counts", func(l *result.Load) { l.Phases[2].Probes.Counts.Lost = l.Phases[2].Probes.Counts.Sent + 1 }, "load.phases[2].probes.counts"},
		{"added percentile", func(l *result.Load) { l.Phases[1].Added.RTT[0].P = 101 }, "load.phases[1].added.rtt[0].p"},
	} {
		res := withLoad(t)
		tt.set(res.Load)
		var saved bytes.Buffer
		if err := report.WriteJSON(&saved, res); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFrom(context.Background(), &saved, "load.json", Options{})
		var e *Error
		if !errors.As(err, &e) || e.Field != tt.field || !errors.Is(err, ErrNotVolley) {
			t.Errorf("%s: ReadFrom = %v, want an error at %s", tt.name, err, tt.field)
		}
	}
	res := withLoad(t)
	res.Load.Phases[0].Name = "idle\x1b[2J"
	var saved bytes.Buffer
	if err := report.WriteJSON(&saved, res); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrom(context.Background(), &saved, "load.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Result.Load.Phases[0].Name; got != "idle\uFFFD[2J" {
		t.Errorf("phase name read as %q, want its control character replaced", got)
	}
}
