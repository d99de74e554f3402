package monitor

import (
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	addr := loopback(t)
	rec := &fakeRec{}
	const rate, d = 200, 300 * time.Millisecond
	res, err := Probe(t.Context(), Target{Name: "p", URL: addr, Schedule: Schedule{Rate: rate, Duration: d}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary.Counts
	if want := uint64(rate * d.Seconds()); sum.Sent != want {
		t.Errorf("sent %d, want %d (rate × duration)", sum.Sent, want)
	}
	if len(res.Intervals) != 0 {
		t.Errorf("%d intervals kept in the result, want none (streamed)", len(res.Intervals))
	}
	ivs, c, opens, fails := rec.snapshot()
	if ivs != 1 || opens != 1 || fails != 0 {
		t.Errorf("the Recorder heard %d intervals, %d sessions, %d failures; want 1, 1, 0", ivs, opens, fails)
	}
	if c.Sent != sum.Sent || c.Received != sum.Received || rec.replies.Load() != int64(sum.Received) {
		t.Errorf("the Recorder's counts %+v and %d replies, want the result's %+v", c, rec.replies.Load(), sum)
	}
}

// TestProbeShort: /probe's count/rate may be far shorter than a round.
func TestProbeShort(t *testing.T) {
	addr := loopback(t)
	for _, tc := range []struct {
		rate float64
		d    time.Duration
		want uint64
	}{{1000, 5 * time.Millisecond, 5}, {1000, time.Millisecond, 1}, {3, time.Second, 3}} {
		res, err := Probe(t.Context(), Target{Name: "p", URL: addr, Schedule: Schedule{Rate: tc.rate, Duration: tc.d}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Summary.Counts.Sent; got != tc.want {
			t.Errorf("rate %g for %s: sent %d, want %d", tc.rate, tc.d, got, tc.want)
		}
	}
}

func TestProbeFails(t *testing.T) {
	rec := &fakeRec{}
	_, err := Probe(t.Context(), Target{Name: "p", URL: deadAddr(t), Schedule: Schedule{Timeout: 20 * time.Millisecond}}, rec)
	if err == nil || !strings.Contains(err.Error(), `"p"`) {
		t.Errorf("Probe of a peer down = %v, want an error naming the target", err)
	}
	if _, _, _, fails := rec.snapshot(); fails != 1 {
		t.Errorf("%d failures heard, want 1", fails)
	}
	if _, err := Probe(t.Context(), Target{Name: "p", URL: "ftp://x"}, nil); err == nil {
		t.Errorf("Probe of ftp://x = nil error, want one")
	}
}

func TestProbeDuration(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, DefaultProbeDuration},
		{2 * time.Second, 2 * time.Second},
		{time.Hour, MaxProbeDuration},
	} {
		if got := probeDuration(Schedule{Duration: tc.in}); got != tc.want {
			t.Errorf("probeDuration(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
