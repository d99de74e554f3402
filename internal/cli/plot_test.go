package cli

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
)

// TestPlotIntervalsBounded feeds a plot more intervals than it keeps: it
// keeps at most maxPlotIntervals, each as wide as the others, and the
// counts, bytes and extremes of all of them.
func TestPlotIntervalsBounded(t *testing.T) {
	cfg := client.Config{ReportInterval: time.Second}
	var h client.Funcs
	var printed int
	h.OnInterval = func(result.Interval) { printed++ }
	p, asked := hookPlot(&cfg, &h)
	if asked || cfg.Samples == nil {
		t.Fatalf("hookPlot with -i 1s: asked %v, samples %v; want intervals as they were and samples kept", asked, cfg.Samples)
	}
	const n = 3*maxPlotIntervals + 5
	var sent, lostUp, bytes uint64
	for i := range n {
		lat := result.Latency{Count: 10, Min: time.Duration(i + 1), Mean: time.Duration(i + 5), Max: time.Duration(i + 100),
			Percentiles: []result.Percentile{{P: 50, Value: time.Duration(i + 4)}}}
		iv := result.Interval{Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second,
			Counts: result.Counts{Sent: 10, Received: 9, Lost: 1, LostUp: uint64(i % 2), LostDown: uint64(1 - i%2)},
			RTT:    lat, Throughput: result.Throughput{BytesUp: 640}}
		h.OnInterval(iv)
		sent += iv.Counts.Sent
		lostUp += iv.Counts.LostUp
		bytes += iv.Throughput.BytesUp
	}
	if printed != n {
		t.Fatalf("the format got %d intervals of %d", printed, n)
	}
	kept := p.thin.Intervals()
	// 2048 at 1, halved to 1024 at 2, filled to 2048 (4096 in all), halved
	// to 1024 at 4, and the last 2053 at 4.
	if len(kept) != 1024+(n-4096+3)/4 || p.thin.Stride() != 4 {
		t.Fatalf("kept %d intervals, each of %d; want %d, each of 4", len(kept), p.thin.Stride(), 1024+(n-4096+3)/4)
	}
	var gotSent, gotLostUp, gotBytes uint64
	for i, iv := range kept {
		gotSent += iv.Counts.Sent
		gotLostUp += iv.Counts.LostUp
		gotBytes += iv.Throughput.BytesUp
		if i > 0 && iv.Start != kept[i-1].End {
			t.Fatalf("interval %d starts at %v, not where the one before ended (%v)", i, iv.Start, kept[i-1].End)
		}
	}
	if gotSent != sent || gotLostUp != lostUp || gotBytes != bytes {
		t.Fatalf("kept sent %d, lost up %d, bytes %d; want the run's %d, %d, %d", gotSent, gotLostUp, gotBytes, sent, lostUp, bytes)
	}
	if last := kept[len(kept)-1]; last.End != time.Duration(n)*time.Second || last.RTT.Max != time.Duration(n-1+100) {
		t.Fatalf("last kept interval ends at %v with max %v, want the run's end and its last maximum", last.End, last.RTT.Max)
	}
	if first := kept[0]; first.RTT.Min != 1 || first.RTT.Count != 10*4 || first.RTT.Max != 3+100 {
		t.Fatalf("first kept interval: RTT %+v, want the minimum, maximum and count of the four it holds", first.RTT)
	}
}

// TestPlotAsksIntervals: with intervals off (-i 0), the plot asks the
// client for some, and the format prints none of them.
func TestPlotAsksIntervals(t *testing.T) {
	cfg := client.Config{ReportInterval: -1}
	var printed int
	h := client.Funcs{OnInterval: func(result.Interval) { printed++ }}
	p, asked := hookPlot(&cfg, &h)
	if !asked || cfg.ReportInterval <= 0 {
		t.Fatalf("hookPlot with -i 0: asked %v, interval %v; want intervals asked for", asked, cfg.ReportInterval)
	}
	h.OnInterval(result.Interval{Counts: result.Counts{Sent: 1}})
	if printed != 0 || len(p.thin.Intervals()) != 1 {
		t.Fatalf("printed %d, kept %d; want none printed and one kept", printed, len(p.thin.Intervals()))
	}
}
