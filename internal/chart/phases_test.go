package chart

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/volley-net/volley/internal/result"
)

// loadRate is the synthetic bulk streams' goodput in the loaded phase.
const loadRate = 40e6

// loadRun is a latency-under-load run: three one-second phases (idle,
// loaded, idle-after), each an interval of the run, the loaded one's down
// delays 5 ms longer; its bulk goodput (dir: "down", "up" or "both") a
// point every 100 ms, and its score.
func loadRun(t *testing.T, label, dir string, keep bool) Run {
	t.Helper()
	run := makeRun(t, synth{label: label, probes: 600, intervals: 3, keep: keep, base: 200 * time.Microsecond,
		lossEvery: 50, queue: 5 * time.Millisecond})
	res := run.Result
	l := &result.Load{Direction: dir, Streams: 4, Phase: time.Second, SeriesStep: 100 * time.Millisecond}
	up, down := dir != "down", dir != "up"
	for j, name := range []string{"idle", "loaded", "idle-after"} {
		ph := result.Phase{Name: name, Loaded: j == 1, Probes: res.Intervals[j]}
		if ph.Loaded {
			ph.Streams = 4
			if up {
				ph.BitsPerSecUp = loadRate
			}
			if down {
				ph.BitsPerSecDown = loadRate
			}
		}
		if j > 0 {
			ph.Added = &result.Added{RTT: diff(ph.Probes.RTT, res.Intervals[0].RTT), Up: diff(ph.Probes.Up, res.Intervals[0].Up),
				Down: diff(ph.Probes.Down, res.Intervals[0].Down), Queue: "none"}
			if ph.Loaded {
				ph.Added.Queue = "down"
			}
		}
		l.Phases = append(l.Phases, ph)
	}
	for at := 100 * time.Millisecond; at <= 3*time.Second; at += l.SeriesStep {
		p := result.LoadPoint{At: at}
		if at > time.Second && at <= 2*time.Second {
			if up {
				p.BitsPerSecUp = loadRate
			}
			if down {
				p.BitsPerSecDown = loadRate
			}
		}
		l.Series = append(l.Series, p)
	}
	l.Responsiveness = &result.Responsiveness{Draft: "draft-ietf-ippm-responsiveness-08", RPM: 11000, IdleRPM: 250000,
		TrimmedMean: 5400 * time.Microsecond, TrimmedUp: 90 * time.Microsecond, TrimmedDown: 5300 * time.Microsecond,
		Samples: 196, Queue: "down"}
	res.Load = l
	return run
}

// diff is a's percentiles less b's.
func diff(a, b result.Latency) []result.Percentile {
	out := make([]result.Percentile, len(a.Percentiles))
	for i, p := range a.Percentiles {
		out[i] = result.Percentile{P: p.P, Value: p.Value - b.Percentiles[i].Value}
	}
	return out
}

// labelsOf returns the panel's text labels: the phases' names.
func labelsOf(pn *panel) *plotter.Labels {
	for _, it := range pn.items {
		if l, ok := it.(*plotter.Labels); ok {
			return l
		}
	}
	return nil
}

func TestFiguresLoad(t *testing.T) {
	run := loadRun(t, "", "down", true)
	figs := figures([]Run{run})
	var ids []string
	for _, f := range figs {
		ids = append(ids, f.id)
	}
	if want := []string{"fig-load", "fig-latency", "fig-percentiles", "fig-histogram", "fig-throughput"}; !slices.Equal(ids, want) {
		t.Fatalf("figure ids = %q, want %q", ids, want)
	}
	got := seriesOf(figs)
	for k, w := range map[string][]string{"fig-load/0": {"down"}, "fig-load/1": {"RTT"}, "fig-load/2": {"up", "down"}} {
		if !slices.Equal(got[k], w) {
			t.Errorf("series of %s = %q, want %q", k, got[k], w)
		}
	}
	labels := [][3]string{
		{"Bulk goodput", "time since the start of the measurement (s)", "goodput (Mbit/s)"},
		{"RTT under load", "time since the start of the measurement (s)", "delay (ms)"},
		{"One-way delay under load", "time since the start of the measurement (s)", "delay (ms)"},
	}
	for i, pn := range figs[0].panels {
		p := pn.plot
		if got := [3]string{p.Title.Text, p.X.Label.Text, p.Y.Label.Text}; got != labels[i] {
			t.Errorf("load panel %d title and axes = %q, want %q", i, got, labels[i])
		}
		if p.X.Min != 0 || p.X.Max != 3 {
			t.Errorf("load panel %d time axis %v..%v, want 0..3 s", i, p.X.Min, p.X.Max)
		}
		checkPhaseMarks(t, pn)
	}
	// The goodput follows the series: 40 Mbit/s over the loaded phase's
	// steps, none outside it.
	line := lineNamed(t, figs[0].panels[0], "down")
	if len(line.XYs) != 2*len(run.Result.Load.Series) {
		t.Errorf("goodput line has %d points, want two a step (%d steps)", len(line.XYs), len(run.Result.Load.Series))
	}
	for k, p := range run.Result.Load.Series {
		from, to := line.XYs[2*k], line.XYs[2*k+1]
		want := p.BitsPerSecDown / 1e6
		if from.X != (p.At-100*time.Millisecond).Seconds() || to.X != p.At.Seconds() || from.Y != want || to.Y != want {
			t.Errorf("goodput step %d = %v to %v, want %v Mbit/s over the 100 ms to %v", k, from, to, want, p.At)
		}
	}
	// The delays are the probes', in ms: the down delay of each probe
	// received, longer in the loaded phase.
	var want plotter.XYs
	for _, p := range run.Probes {
		if !p.Lost {
			want = append(want, plotter.XY{X: p.Sent.Seconds(), Y: float64(p.Down) / 1e6})
		}
	}
	down := scatterNamed(t, figs[0].panels[2], "down")
	if !slices.Equal(down, want) {
		t.Errorf("down delays drawn = %d points, want the %d probes' down delays", len(down), len(want))
	}
	if mid, idle := meanY(down, 1, 2), meanY(down, 0, 1); mid < idle+4 {
		t.Errorf("down delay %v ms in the loaded phase, %v ms idle: want 5 ms more", mid, idle)
	}
}

// checkPhaseMarks checks a load panel's phase marks: the three names over
// the middle of their phases at the top, the loaded phase (1 s to 2 s)
// shaded from the bottom of the axis to its top, a line where each phase
// but the first starts.
func checkPhaseMarks(t *testing.T, pn *panel) {
	t.Helper()
	lb := labelsOf(pn)
	if lb == nil {
		t.Fatalf("%s: no phase names", pn.plot.Title.Text)
	}
	if want := []string{"idle", "loaded", "idle-after"}; !slices.Equal(lb.Labels, want) {
		t.Errorf("%s: phase names %q, want %q", pn.plot.Title.Text, lb.Labels, want)
	}
	for i, xy := range lb.XYs {
		if xy.X != float64(i)+0.5 || xy.Y != pn.plot.Y.Max {
			t.Errorf("%s: phase name %d at %v, want (%v, the axis's top %v)", pn.plot.Title.Text, i, xy, float64(i)+0.5, pn.plot.Y.Max)
		}
	}
	var bands []plotter.XYs
	var lines []float64
	for _, it := range pn.items {
		switch it := it.(type) {
		case *plotter.Polygon:
			if it.Color == phaseShade {
				bands = append(bands, it.XYs[0])
			}
		case *plotter.Line:
			if len(it.XYs) == 2 && it.XYs[0].X == it.XYs[1].X {
				lines = append(lines, it.XYs[0].X)
				if it.XYs[0].Y != pn.plot.Y.Min || it.XYs[1].Y != pn.plot.Y.Max {
					t.Errorf("%s: phase line %v, want the axis's height", pn.plot.Title.Text, it.XYs)
				}
			}
		}
	}
	if len(bands) != 1 {
		t.Fatalf("%s: %d shaded phases, want 1", pn.plot.Title.Text, len(bands))
	}
	b := bands[0]
	if b[0].X != 1 || b[1].X != 2 || b[0].Y != pn.plot.Y.Min || b[2].Y != pn.plot.Y.Max {
		t.Errorf("%s: loaded phase shaded over %v, want 1..2 s, the axis's height", pn.plot.Title.Text, b)
	}
	if !slices.Equal(lines, []float64{1, 2}) {
		t.Errorf("%s: phase lines at %v s, want 1 and 2", pn.plot.Title.Text, lines)
	}
}

// lineNamed is the line of the panel's series name.
func lineNamed(t *testing.T, pn *panel, name string) *plotter.Line {
	t.Helper()
	i := slices.Index(pn.series, name)
	if i < 0 {
		t.Fatalf("%s: no series %q", pn.plot.Title.Text, name)
	}
	l, ok := pn.thumbs[i][0].(*plotter.Line)
	if !ok {
		t.Fatalf("%s: series %q is a %T, not a line", pn.plot.Title.Text, name, pn.thumbs[i][0])
	}
	return l
}

// scatterNamed is the points of the panel's series name.
func scatterNamed(t *testing.T, pn *panel, name string) plotter.XYs {
	t.Helper()
	i := slices.Index(pn.series, name)
	if i < 0 {
		t.Fatalf("%s: no series %q", pn.plot.Title.Text, name)
	}
	s, ok := pn.thumbs[i][0].(*plotter.Scatter)
	if !ok {
		t.Fatalf("%s: series %q is a %T, not points", pn.plot.Title.Text, name, pn.thumbs[i][0])
	}
	return s.XYs
}

// meanY is the mean value of the points from x0 to x1.
func meanY(xys plotter.XYs, x0, x1 float64) float64 {
	sum, n := 0.0, 0
	for _, xy := range xys {
		if xy.X >= x0 && xy.X < x1 {
			sum += xy.Y
			n++
		}
	}
	return sum / float64(max(n, 1))
}

// TestFiguresLoadSaved: a saved run has no probes; its delays under load
// are each phase's band and median, and without a series its goodput is
// each phase's.
func TestFiguresLoadSaved(t *testing.T) {
	run := loadRun(t, "", "both", false)
	run.Result.Load.Series = nil
	f, ok := loadFigure([]Run{run})
	if !ok {
		t.Fatal("no load figure for a run with a Load")
	}
	got := seriesOf([]figure{f})
	for k, w := range map[string][]string{
		"fig-load/0": {"up", "down"},
		"fig-load/1": {"RTT min–p99", "RTT p50"},
		"fig-load/2": {"up min–p99", "up p50", "down min–p99", "down p50"},
	} {
		if !slices.Equal(got[k], w) {
			t.Errorf("series of %s = %q, want %q", k, got[k], w)
		}
	}
	for _, pn := range f.panels {
		checkPhaseMarks(t, pn)
	}
	up := lineNamed(t, f.panels[0], "up")
	if want := (plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 40}, {X: 2, Y: 40}, {X: 2, Y: 0}, {X: 3, Y: 0}}); !slices.Equal(up.XYs, want) {
		t.Errorf("goodput up from the phases = %v, want %v", up.XYs, want)
	}
	// The RTT median over the loaded phase is the phase's p50.
	p50 := lineNamed(t, f.panels[1], "RTT p50")
	wantP50 := float64(valueAt(run.Result.Load.Phases[0].Probes.RTT, 50)) / 1e6
	if p50.XYs[0] != (plotter.XY{X: 0, Y: wantP50}) {
		t.Errorf("RTT p50 step starts at %v, want (0, %v ms), the idle phase's", p50.XYs[0], wantP50)
	}
}

// TestFiguresLoadOverlay: a loaded run and a plain one drawn together:
// the load figure draws the loaded run alone, named by its label.
func TestFiguresLoadOverlay(t *testing.T) {
	a := loadRun(t, "bloat", "up", true)
	b := makeRun(t, synth{label: "plain", probes: 300, intervals: 3, keep: true, base: time.Millisecond})
	got := seriesOf(figures([]Run{b, a}))
	for k, w := range map[string][]string{
		"fig-load/0": {"bloat up"}, "fig-load/1": {"bloat RTT"}, "fig-load/2": {"bloat up", "bloat down"},
	} {
		if !slices.Equal(got[k], w) {
			t.Errorf("series of %s = %q, want %q", k, got[k], w)
		}
	}
	tab := phasesTable([]Run{b, a})
	if tab.Head[0] != "run" || len(tab.Rows) != 3 {
		t.Fatalf("phases table of a plain and a loaded run: head %q, %d rows; want a run column, the loaded run's 3 phases", tab.Head, len(tab.Rows))
	}
	for _, row := range tab.Rows {
		if row[0] != "bloat" {
			t.Errorf("phases row %q, want it led by the loaded run's label", row)
		}
	}
	if got := titleLines([]Run{a})[2]; !strings.HasSuffix(got, "under load: 4 bulk streams uploading, phases of 1.00s") {
		t.Errorf("title line %q, want it to end with the load", got)
	}
}

// TestFiguresLoadEmpty: a Load without phases or series (a run whose
// streams were all refused, or a hostile file) is drawn with notes, and
// writes.
func TestFiguresLoadEmpty(t *testing.T) {
	run := makeRun(t, synth{probes: 100, intervals: 2, base: time.Millisecond})
	run.Result.Load = &result.Load{Direction: "down", Streams: 4, Errors: []string{"refused: the reflector serves no load"},
		Series: []result.LoadPoint{{At: -time.Second, BitsPerSecDown: math.MaxFloat64}}}
	f, ok := loadFigure([]Run{run})
	if !ok {
		t.Fatal("no load figure for a run with a Load")
	}
	for _, pn := range f.panels[1:] {
		if !slices.Equal(pn.notes, []string{"no replies"}) {
			t.Errorf("%s notes = %q, want no replies", pn.plot.Title.Text, pn.notes)
		}
	}
	for _, fm := range []Format{SVG, PNG, HTML} {
		var b bytes.Buffer
		if err := Write(&b, fm, []Run{run}); err != nil {
			t.Errorf("Write(%v) of an empty load = %v", fm, err)
		}
	}
}

func TestHTMLLoad(t *testing.T) {
	run := loadRun(t, "", "down", true)
	run.Result.Load.Phases[1].Name = `<b>loaded</b>`
	run.Result.Load.Errors = []string{"stream 3: cut short"}
	var page bytes.Buffer
	if err := Write(&page, HTML, []Run{run}); err != nil {
		t.Fatal(err)
	}
	text, ids := parseXML(t, page.Bytes(), true)
	for _, id := range []string{"fig-load", "load", "phases"} {
		if !ids[id] {
			t.Errorf("no element with id %q", id)
		}
	}
	if strings.Contains(page.String(), "<b>loaded") {
		t.Error("a phase's name is in the page's markup unescaped")
	}
	for _, want := range []string{"responsiveness: 11000 RPM (draft-ietf-ippm-responsiveness-08), idle 250000 RPM",
		"queue built: down", "stream 3: cut short", "load: 4 bulk streams downloading, phases of 1.00s"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
	tab := phasesTable([]Run{run})
	if len(tab.Rows) != 3 {
		t.Fatalf("phases table has %d rows, want 3", len(tab.Rows))
	}
	col := func(name string) int { return slices.Index(tab.Head, name) }
	l := run.Result.Load
	for i, row := range tab.Rows {
		ph := l.Phases[i]
		if row[col("phase")] != ph.Name {
			t.Errorf("row %d names phase %q, want %q", i, row[col("phase")], ph.Name)
		}
		for name, want := range map[string]string{
			"RTT p99": at(ph.Probes.RTT, 99), "down p50": at(ph.Probes.Down, 50), "up p99": at(ph.Probes.Up, 99),
			"goodput down (bit/s)": map[bool]string{true: "40.0M", false: "0"}[ph.Loaded],
			"lost up":              lossShare(ph.Probes.Counts.LostUp, ph.Probes.Counts.Sent),
			"RPM":                  []string{"250000", "11000", ""}[i],
			"added down p99":       map[bool]string{true: at(result.Latency{Percentiles: addedDown(ph)}, 99), false: ""}[i > 0],
			"queue":                []string{"", "down", "none"}[i],
		} {
			if got := row[col(name)]; got != want || got == "" && (name == "RTT p99" || name == "lost up") {
				t.Errorf("row %d %s = %q, want %q", i, name, got, want)
			}
		}
	}
	if strings.Contains(tab.Rows[1][col("lost down")], "(0.000%)") && l.Phases[1].Probes.Counts.LostDown > 0 {
		t.Errorf("lost down %q, want its share", tab.Rows[1][col("lost down")])
	}
	// The legends of the load figure are the page's text, as the others'.
	_, body, _ := strings.Cut(page.String(), `<figure id="fig-load">`)
	caption, _, _ := strings.Cut(body, "</figure>")
	for _, name := range []string{"RTT", "up", "down"} {
		if !strings.Contains(caption, "</svg>"+name+"</span>") {
			t.Errorf("the load figure's caption lacks the key %q", name)
		}
	}
	// A run without a Load has no such section.
	plain := makeRun(t, synth{probes: 100, intervals: 2, base: time.Millisecond})
	page.Reset()
	if err := Write(&page, HTML, []Run{plain}); err != nil {
		t.Fatal(err)
	}
	if _, ids := parseXML(t, page.Bytes(), true); ids["phases"] || ids["load"] || ids["fig-load"] {
		t.Error("a run without a Load has a load section or figure")
	}
}

func addedDown(ph result.Phase) []result.Percentile {
	if ph.Added == nil {
		return nil
	}
	return ph.Added.Down
}

func TestSVGLoad(t *testing.T) {
	run := loadRun(t, "", "both", true)
	var b bytes.Buffer
	if err := Write(&b, SVG, []Run{run}); err != nil {
		t.Fatal(err)
	}
	text, _ := parseXML(t, b.Bytes(), false)
	for _, want := range []string{"Bulk goodput", "RTT under load", "One-way delay under load", "idle", "loaded", "idle-after", "Latency over time"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

// TestLoadStepsThinned: a series of more steps than a picture needs is
// drawn with neighbours averaged, over the same time.
func TestLoadStepsThinned(t *testing.T) {
	l := &result.Load{Direction: "up", SeriesStep: 10 * time.Millisecond}
	for i := 1; i <= 5000; i++ {
		l.Series = append(l.Series, result.LoadPoint{At: time.Duration(i) * l.SeriesStep, BitsPerSecUp: float64(1e6 * (i % 2 * 2))})
	}
	xys := loadSteps(l, kindUp, unit{"Mbit/s", 1e6})
	if len(xys) > 2*maxLoadSteps {
		t.Errorf("%d points drawn of 5000 steps, want at most %d", len(xys), 2*maxLoadSteps)
	}
	if xys[0].X != 0 || xys[len(xys)-1].X != 50 {
		t.Errorf("steps drawn from %v s to %v s, want 0 to 50", xys[0].X, xys[len(xys)-1].X)
	}
	sum, span := 0.0, 0.0
	for i := 0; i < len(xys); i += 2 {
		sum += xys[i].Y * (xys[i+1].X - xys[i].X)
		span += xys[i+1].X - xys[i].X
	}
	if mean := sum / span; math.Abs(mean-1) > 0.01 {
		t.Errorf("mean goodput drawn %v Mbit/s, want the series' 1", mean)
	}
}
