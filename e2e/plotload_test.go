//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// TestPlotLoadReport: a saved latency-under-load run (a real run's
// document, its three intervals made the phases of a Load) goes through
// volley report as it was, and its plot draws the phases: the SVG names
// them, and the HTML report, opened in headless Chromium, has the load
// figure and the table of the phases.
func TestPlotLoadReport(t *testing.T) {
	r := volleyRun(t, "client", "-t", "3s", "-i", "1s", "--rate", "200", "--format", "json")
	if r.code != 0 {
		t.Fatalf("volley client: exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	if len(res.Intervals) < 3 {
		t.Fatalf("a 3 s run of 1 s intervals has %d intervals", len(res.Intervals))
	}
	l := &result.Load{Direction: "down", Streams: 4, Phase: time.Second, SeriesStep: 100 * time.Millisecond}
	for i, name := range []string{"idle", "loaded", "idle-after"} {
		ph := result.Phase{Name: name, Loaded: i == 1, Probes: res.Intervals[i]}
		if ph.Loaded {
			ph.Streams, ph.BitsPerSecDown = 4, 90e6
			ph.Added = &result.Added{RTT: []result.Percentile{{P: 50, Value: 2 * time.Millisecond}}, Queue: "down"}
		}
		l.Phases = append(l.Phases, ph)
	}
	for at := l.SeriesStep; at <= 3*time.Second; at += l.SeriesStep {
		p := result.LoadPoint{At: at}
		if at > time.Second && at <= 2*time.Second {
			p.BitsPerSecDown = 90e6
		}
		l.Series = append(l.Series, p)
	}
	l.Responsiveness = &result.Responsiveness{Draft: "draft-ietf-ippm-responsiveness-08", RPM: 24000, IdleRPM: 300000,
		TrimmedMean: 2500 * time.Microsecond, Samples: 190, Queue: "down"}
	res.Load = l
	var doc bytes.Buffer
	if err := report.WriteJSON(&doc, res); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "load.json")
	if err := os.WriteFile(saved, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	svg, page := filepath.Join(dir, "load.svg"), filepath.Join(dir, "load.html")
	again := volleyRun(t, "report", "--format", "json", saved, "--plot", svg)
	if again.code != 0 || again.stdout != doc.String() {
		t.Fatalf("volley report --format json load.json: exit %d, %s; want the document as it was, load and all", again.code, again.stderr)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">Bulk goodput<", ">RTT under load<", ">One-way delay under load<", ">idle<", ">loaded<", ">idle-after<"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the SVG of a saved load run lacks %q", want)
		}
	}
	browser := chromium(t)
	if r := volleyRun(t, "report", "-q", saved, "--plot", page); r.code != 0 {
		t.Fatalf("volley report --plot load.html: exit %d: %s", r.code, r.stderr)
	}
	dom := string(headless(t, browser, page, "--dump-dom"))
	for _, id := range []string{"fig-load", "load", "phases", "fig-latency", "summary"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("the page Chromium built has no element with id %q", id)
		}
	}
	_, table, _ := strings.Cut(dom, `<table id="phases">`)
	table, _, _ = strings.Cut(table, "</table>")
	if rows := strings.Count(table, "<tr>") - 1; rows != 3 {
		t.Errorf("the phases table Chromium built has %d rows, want 3", rows)
	}
	for _, want := range []string{"idle-after", "24000", "90.0M", "responsiveness: 24000 RPM"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page Chromium built lacks %q", want)
		}
	}
	shot := filepath.Join(dir, "shot.png")
	headless(t, browser, page, "--window-size=1280,3000", "--screenshot="+shot)
	checkDrawn(t, shot)
}
