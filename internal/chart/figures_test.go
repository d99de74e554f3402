package chart

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/volley-net/volley/internal/result"
)

// seriesOf returns the series names of each panel of figs, by figure id
// and panel index: "fig-throughput/1".
func seriesOf(figs []figure) map[string][]string {
	out := map[string][]string{}
	for _, f := range figs {
		for i, pn := range f.panels {
			out[f.id+"/"+string(rune('0'+i))] = pn.series
		}
	}
	return out
}

func TestFiguresOneRun(t *testing.T) {
	run := makeRun(t, synth{probes: 1000, intervals: 10, keep: true, base: 50 * time.Microsecond, lossEvery: 97})
	figs := figures([]Run{run})
	var ids []string
	for _, f := range figs {
		ids = append(ids, f.id)
	}
	if want := []string{"fig-latency", "fig-percentiles", "fig-histogram", "fig-throughput"}; !slices.Equal(ids, want) {
		t.Fatalf("figure ids = %q, want %q", ids, want)
	}
	want := map[string][]string{
		"fig-latency/0":     {"RTT", "up", "down", "lost up", "lost down", "lost probes"},
		"fig-percentiles/0": {"RTT", "up", "down"},
		"fig-histogram/0":   {"RTT"},
		"fig-throughput/0":  {"up", "down"},
		"fig-throughput/1":  {"lost up", "lost down"},
	}
	got := seriesOf(figs)
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("series of %s = %q, want %q", k, got[k], w)
		}
	}
	labels := []struct{ title, x, y string }{
		{"Latency over time", "time since the end of warm-up (s)", "delay (µs)"},
		{"Latency by percentile", "percentile", "delay (µs)"},
		{"RTT histogram", "RTT (µs, log scale)", "share of replies (%)"},
		{"Throughput per interval", "time since the end of warm-up (s)", "payload (kbit/s)"},
		{"Loss per interval", "time since the end of warm-up (s)", "lost (% of sent)"},
	}
	for i, pn := range panelsOf(figs) {
		p := pn.plot
		if got := [3]string{p.Title.Text, p.X.Label.Text, p.Y.Label.Text}; got != [3]string{labels[i].title, labels[i].x, labels[i].y} {
			t.Errorf("panel %d title and axes = %q, want %q", i, got, labels[i])
		}
		if len(pn.notes) != 0 {
			t.Errorf("panel %d notes = %q, want none", i, pn.notes)
		}
	}
}

func TestFiguresOverlay(t *testing.T) {
	a := makeRun(t, synth{label: "before", probes: 500, intervals: 5, keep: true, base: 40 * time.Microsecond, lossEvery: 50})
	b := makeRun(t, synth{label: "after", probes: 500, intervals: 5, base: 2 * time.Millisecond, lossEvery: 50})
	got := seriesOf(figures([]Run{a, b}))
	want := map[string][]string{
		"fig-latency/0": {"before RTT", "before up", "before down",
			"after RTT min–p99", "after RTT p99.9", "after RTT p50", "after up p50", "after down p50",
			"before lost up", "before lost down", "before lost probes", "after lost up", "after lost down"},
		"fig-percentiles/0": {"before RTT", "before up", "before down", "after RTT", "after up", "after down"},
		"fig-histogram/0":   {"before RTT", "after RTT"},
		"fig-throughput/0":  {"before up", "before down", "after up", "after down"},
		"fig-throughput/1":  {"before lost up", "before lost down", "after lost up", "after lost down"},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("series of %s = %q, want %q", k, got[k], w)
		}
	}
	// The unit follows the larger run, milliseconds, and the scale is a
	// log one: the larger run's tail is 50 times the smaller's median.
	// Nothing is left at or below zero on it (the loss marks sit at its
	// bottom).
	pn := figures([]Run{a, b})[0].panels[0]
	if y := pn.plot.Y.Label.Text; y != "delay (ms, log scale)" {
		t.Errorf("latency y axis = %q, want %q", y, "delay (ms, log scale)")
	}
	// The points are the delays' logarithms, the ticks labelled with the
	// delays.
	each(pn, func(xy *plotter.XY) {
		if xy.Y < pn.plot.Y.Min || xy.Y > pn.plot.Y.Max {
			t.Errorf("point %v outside the axis %v..%v", *xy, pn.plot.Y.Min, pn.plot.Y.Max)
		}
	})
	for _, tk := range pn.plot.Y.Tick.Marker.Ticks(math.Log10(0.05), math.Log10(2)) {
		if tk.Label != "" && math.Abs(math.Pow(10, tk.Value)-must(strconv.ParseFloat(tk.Label, 64))) > 1e-9 {
			t.Errorf("tick at %v labelled %q, want the delay 10^%v", tk.Value, tk.Label, tk.Value)
		}
	}
	// Runs without labels are told apart by their number.
	a.Label, b.Label = "", ""
	if got := seriesOf(figures([]Run{a, b}))["fig-histogram/0"]; !slices.Equal(got, []string{"run 1 RTT", "run 2 RTT"}) {
		t.Errorf("unlabelled runs' histogram series = %q, want run 1 and run 2", got)
	}
}

func TestFiguresOneWay(t *testing.T) {
	for _, keep := range []bool{true, false} {
		run := makeRun(t, synth{probes: 600, intervals: 6, keep: keep, oneWay: true, base: 30 * time.Microsecond, lossEvery: 40})
		figs := figures([]Run{run})
		for k, names := range seriesOf(figs) {
			for _, n := range names {
				if strings.Contains(n, "RTT") || strings.Contains(n, "down") && !strings.Contains(n, "lost") {
					t.Errorf("keep=%v: %s has series %q, want no RTT or down in a one-way run", keep, k, n)
				}
			}
		}
		got := seriesOf(figs)
		if want := []string{"up"}; !slices.Equal(got["fig-percentiles/0"], want) {
			t.Errorf("keep=%v: percentile series = %q, want %q", keep, got["fig-percentiles/0"], want)
		}
		if want := []string{"up"}; !slices.Equal(got["fig-throughput/0"], want) {
			t.Errorf("keep=%v: throughput series = %q, want %q", keep, got["fig-throughput/0"], want)
		}
		if want := []string{"lost up"}; !slices.Equal(got["fig-throughput/1"], want) {
			t.Errorf("keep=%v: loss series = %q, want %q", keep, got["fig-throughput/1"], want)
		}
		if notes := figs[2].panels[0].notes; !slices.Equal(notes, []string{"no RTT in a one-way run"}) {
			t.Errorf("keep=%v: histogram notes = %q, want the one-way note", keep, notes)
		}
		if notes := figs[0].panels[0].notes; len(notes) != 0 {
			t.Errorf("keep=%v: latency notes = %q, want none (up delays drawn)", keep, notes)
		}
	}
}

func TestFiguresWithoutDistribution(t *testing.T) {
	run := makeRun(t, synth{probes: 1000, intervals: 4, base: 100 * time.Microsecond, noDist: true})
	figs := figures([]Run{run})
	pn := figs[1].panels[0]
	if want := []string{"RTT", "up", "down"}; !slices.Equal(pn.series, want) {
		t.Fatalf("percentile series = %q, want %q from the summary", pn.series, want)
	}
	// The RTT curve: the summary's min at p0, then its percentiles; its
	// max a mark of its own at the axis's end.
	s := run.Result.Summary.RTT
	line := firstLine(t, pn)
	wantX := append([]float64{0}, testPercentiles...)
	if len(line.XYs) != len(wantX) {
		t.Fatalf("RTT curve has %d points, want %d", len(line.XYs), len(wantX))
	}
	for i, xy := range line.XYs {
		if xy.X != wantX[i] {
			t.Errorf("RTT curve point %d at p%v, want p%v", i, xy.X, wantX[i])
		}
	}
	if got, want := line.XYs[0].Y, float64(s.Min)/1e3; got != want {
		t.Errorf("RTT curve at p0 = %v µs, want the min %v", got, want)
	}
	if notes := figs[2].panels[0].notes; !slices.Equal(notes, []string{"no replies"}) {
		t.Errorf("histogram notes = %q, want no replies (no histogram kept)", notes)
	}
	max := maxMark(t, pn)
	if max.X != pctMax || max.Y != float64(s.Max)/1e3 {
		t.Errorf("RTT max mark at (%v, %v), want (%v, %v)", max.X, max.Y, pctMax, float64(s.Max)/1e3)
	}
}

// firstLine is a panel's first line plotter.
func firstLine(t *testing.T, pn *panel) *plotter.Line {
	t.Helper()
	for _, d := range pn.items {
		if l, ok := d.(*plotter.Line); ok {
			return l
		}
	}
	t.Fatal("no line in the panel")
	return nil
}

// maxMark is the first single-point scatter of a panel: a curve's max.
func maxMark(t *testing.T, pn *panel) plotter.XY {
	t.Helper()
	for _, d := range pn.items {
		if s, ok := d.(*plotter.Scatter); ok && len(s.XYs) == 1 {
			return s.XYs[0]
		}
	}
	t.Fatal("no max mark in the panel")
	return plotter.XY{}
}

func TestPercentileAxis(t *testing.T) {
	// tail(p) = log10(1/(1-p/100)): 99% is 100, two decades of six.
	for _, c := range []struct{ p, want float64 }{
		{0, 0}, {90, 1.0 / 6}, {99, 2.0 / 6}, {99.9, 3.0 / 6}, {99.99, 4.0 / 6}, {99.999, 5.0 / 6}, {pctMax, 1},
	} {
		if got := (pctScale{}).Normalize(0, pctMax, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Normalize(0, %v, %v) = %v, want %v", pctMax, c.p, got, c.want)
		}
	}
	var labels []string
	for _, tk := range (pctTicks{}).Ticks(0, pctMax) {
		labels = append(labels, tk.Label)
	}
	if want := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "max"}; !slices.Equal(labels, want) {
		t.Errorf("percentile ticks = %q, want %q", labels, want)
	}
	// The curve follows the distribution's ladder to 99.999; the 99th
	// percentile sits at x=99 with the distribution's value.
	run := makeRun(t, synth{probes: 2000, intervals: 2, base: 200 * time.Microsecond})
	pn := figures([]Run{run})[1].panels[0]
	line := firstLine(t, pn)
	var want99 time.Duration
	for _, p := range run.Result.Distribution.RTT {
		if p.P == 99 {
			want99 = p.Value
		}
	}
	found := false
	for _, xy := range line.XYs {
		if xy.X > pctLast {
			t.Errorf("curve point at p%v, beyond p%v", xy.X, pctLast)
		}
		if xy.X == 99 {
			found = true
			if xy.Y != float64(want99)/1e3 {
				t.Errorf("curve at p99 = %v µs, want %v", xy.Y, float64(want99)/1e3)
			}
		}
	}
	if !found || len(line.XYs) != len(result.DistributionLadder)-1 {
		t.Errorf("curve has %d points (p99 found: %v), want the ladder's %d without p100", len(line.XYs), found, len(result.DistributionLadder)-1)
	}
}

func TestFiguresNothingReceived(t *testing.T) {
	lost := makeRun(t, synth{probes: 100, intervals: 2, keep: true, base: 50 * time.Microsecond, lossEvery: 1})
	empty := Run{Result: &result.Result{Version: "v1", Config: result.Config{Transport: "udp", Percentiles: testPercentiles}},
		Probes: []result.Probe{}}
	for name, run := range map[string]Run{"all lost": lost, "no intervals": empty} {
		figs := figures([]Run{run})
		for _, i := range []int{0, 1, 2} {
			if notes := figs[i].panels[0].notes; !slices.Equal(notes, []string{"no replies"}) {
				t.Errorf("%s: %s notes = %q, want no replies", name, figs[i].id, notes)
			}
		}
		for _, f := range []Format{SVG, PNG, HTML} {
			var b strings.Builder
			if err := Write(&b, f, []Run{run}); err != nil {
				t.Errorf("%s: Write(%v) = %v, want the picture of nothing", name, f, err)
			}
		}
	}
	if got := seriesOf(figures([]Run{lost}))["fig-latency/0"]; !slices.Equal(got, []string{"lost up", "lost down", "lost probes"}) {
		t.Errorf("all lost: latency series = %q, want the loss marks alone", got)
	}
	if notes := figures([]Run{empty})[3].panels[0].notes; !slices.Equal(notes, []string{"no intervals"}) {
		t.Errorf("no intervals: throughput notes = %q, want no intervals", notes)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestFiguresRebuiltLog: a result rebuilt from a probe log has no sizes
// and no way of loss; its throughput says so, and its loss is drawn whole.
func TestFiguresRebuiltLog(t *testing.T) {
	run := makeRun(t, synth{probes: 1000, intervals: 10, base: 50 * time.Microsecond, lossEvery: 97})
	run.Result.Config = result.Config{Target: "run.csv", Percentiles: testPercentiles, Parallel: 1}
	figs := figures([]Run{run})
	got := seriesOf(figs)
	if len(got["fig-throughput/0"]) != 0 || !slices.Equal(got["fig-throughput/1"], []string{"lost (way not known)"}) {
		t.Errorf("throughput and loss series of a rebuilt log = %q, %q; want none, and loss whole", got["fig-throughput/0"], got["fig-throughput/1"])
	}
	if title := figs[3].panels[0].plot.Title.Text; !strings.Contains(title, "no sizes in a probe log") {
		t.Errorf("throughput title of a rebuilt log = %q, want it to say the log has no sizes", title)
	}
}

// TestFiguresForeignPeer: a run against a peer whose answers do not say
// which way a probe was lost (an echo service) draws its loss whole, and
// its rates up and down; only its RTT is drawn over time.
func TestFiguresForeignPeer(t *testing.T) {
	run := makeRun(t, synth{probes: 1000, intervals: 10, base: 50 * time.Microsecond, lossEvery: 97})
	run.Result.Config.Peer = &result.Peer{Protocol: "echo"}
	got := seriesOf(figures([]Run{run}))
	if !slices.Equal(got["fig-throughput/1"], []string{"lost (way not known)"}) || len(got["fig-throughput/0"]) != 2 {
		t.Errorf("throughput and loss series against an echo service = %q, %q; want up and down, and loss whole", got["fig-throughput/0"], got["fig-throughput/1"])
	}
}
