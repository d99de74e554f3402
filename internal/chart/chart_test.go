package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

func TestFormatOf(t *testing.T) {
	for _, c := range []struct {
		path string
		want Format
		ok   bool
	}{
		{"a.svg", SVG, true}, {"dir/B.PNG", PNG, true}, {"r.html", HTML, true}, {"r.htm", HTML, true},
		{"r.pdf", 0, false}, {"noext", 0, false},
	} {
		got, err := FormatOf(c.path)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("FormatOf(%q) = %v, %v; want %v, ok %v", c.path, got, err, c.want, c.ok)
		}
	}
}

func TestTitleBlock(t *testing.T) {
	run := makeRun(t, synth{probes: 10, intervals: 1, base: time.Millisecond})
	text := strings.Join(titleLines([]Run{run}), "\n")
	for _, want := range []string{"2026-11-30 14:05:06 UTC", "192.0.2.1:40000 → 192.0.2.2:2112",
		"target reflector.example:2112", "udp", "64-byte probes", "200-byte replies", "closed loop, window 4", "v9.8.7-test"} {
		if !strings.Contains(text, want) {
			t.Errorf("title block %q lacks %q", text, want)
		}
	}
	c := result.Config{Window: 1, Size: 32, Transport: "udp"}
	for _, s := range []struct {
		name string
		set  func(*result.Result)
		want string
	}{
		{"closed", func(*result.Result) {}, "closed loop, window 1"},
		{"rate", func(r *result.Result) { r.Config.Rate, r.Config.Poisson = 1000, true }, "open loop, 1.00k pps (Poisson)"},
		{"burst", func(r *result.Result) { r.Config.Burst, r.Config.Period = 8, 10*time.Millisecond }, "bursts of 8 every 10.0ms, window 1"},
		{"one-way", func(r *result.Result) { r.Config.OneWay, r.Config.Rate = true, 50 }, "one-way, open loop, 50 pps"},
		{"workload", func(r *result.Result) { r.Workload = make([]result.WorkloadEntry, 3) }, "closed loop, window 1, workload of 3 shapes"},
		{"flows", func(r *result.Result) { r.Config.Parallel = 4 }, "closed loop, window 1, -P 4 flows"},
	} {
		r := &result.Result{Config: c}
		s.set(r)
		if got := load(r); got != s.want {
			t.Errorf("%s: load = %q, want %q", s.name, got, s.want)
		}
	}
	// A result volley report rebuilt from a probe log knows none of it.
	log := &result.Result{Config: result.Config{Target: "run.csv", Parallel: 2}}
	if got := strings.Join(titleLines([]Run{{Result: log}}), "\n"); !strings.Contains(got, "rebuilt from the probe log run.csv") ||
		!strings.Contains(got, "sizes not in a probe log · load not in a probe log, 2 flows") || strings.Contains(got, "?") {
		t.Errorf("title block of a rebuilt probe log = %q, want it to say what a log does not hold", got)
	}
	two := makeRun(t, synth{label: "after", probes: 10, intervals: 1, base: time.Millisecond})
	run.Label = "before"
	lines := titleLines([]Run{run, two})
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "before: 2026-11-30") || !strings.HasPrefix(lines[2], "after: 2026-11-30") {
		t.Errorf("title block of two runs = %q, want a heading and a line per run led by its label", lines)
	}
	for _, l := range wrapTitle(lines)[1:] {
		if w := titleStyle(lineSize).Width(l); w > pictureWidth {
			t.Errorf("wrapped title line %q is %v wide, more than the picture's %v", l, w, pictureWidth)
		}
	}
}

// parseXML reads every token of b and returns the text and the id
// attributes it holds; html reads it as HTML (void elements, entities).
func parseXML(t *testing.T, b []byte, html bool) (text string, ids map[string]bool) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	if html {
		d.AutoClose, d.Entity = xml.HTMLAutoClose, xml.HTMLEntity
	}
	var sb strings.Builder
	ids = map[string]bool{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return sb.String(), ids
		}
		if err != nil {
			t.Fatalf("the document does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.CharData:
			sb.Write(tok)
			sb.WriteByte('\n')
		case xml.StartElement:
			for _, a := range tok.Attr {
				if a.Name.Local == "id" {
					ids[a.Value] = true
				}
				if v := strings.ToLower(a.Value); (a.Name.Local == "src" || a.Name.Local == "href") && !strings.HasPrefix(v, "#") && !strings.HasPrefix(v, "data:") {
					t.Errorf("<%s %s=%q> fetches from elsewhere", tok.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	}
}

func TestSVG(t *testing.T) {
	run := makeRun(t, synth{probes: 10000, intervals: 10, keep: true, base: 80 * time.Microsecond, lossEvery: 500})
	var b bytes.Buffer
	if err := Write(&b, SVG, []Run{run}); err != nil {
		t.Fatal(err)
	}
	// 10,000 probes, three series of them: lines, not 30,000 glyphs.
	if b.Len() > 3<<20 {
		t.Errorf("SVG of 10,000 probes is %d bytes, want at most 3 MiB", b.Len())
	}
	text, _ := parseXML(t, b.Bytes(), false)
	for _, want := range []string{"2026-11-30 14:05:06 UTC", "Latency over time", "Latency by percentile", "RTT histogram",
		"Throughput per interval", "Loss per interval", "99.999%", "v9.8.7-test"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

func TestPNG(t *testing.T) {
	run := makeRun(t, synth{probes: 500, intervals: 5, keep: true, base: 80 * time.Microsecond, lossEvery: 100})
	var b bytes.Buffer
	if err := Write(&b, PNG, []Run{run}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatalf("png.Decode: %v", err)
	}
	all := panelsOf(figures([]Run{run}))
	w, h := newPicture(wrapTitle(titleLines([]Run{run})), all, all).size()
	wantW, wantH := int(w.Dots(pngDPI)+0.5), int(h.Dots(pngDPI)+0.5)
	if got := img.Bounds().Size(); got.X != wantW || got.Y != wantH {
		t.Errorf("PNG is %v, want %dx%d", got, wantW, wantH)
	}
	colors := map[color.Color]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && len(colors) < 10; y += 7 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 3 {
			colors[img.At(x, y)] = true
		}
	}
	if len(colors) < 10 {
		t.Errorf("PNG has %d colours, want a picture (at least 10)", len(colors))
	}
}

func TestHTML(t *testing.T) {
	hostile := `<script>alert(1)</script>`
	a := makeRun(t, synth{label: "before " + hostile, probes: 500, intervals: 5, keep: true, base: 80 * time.Microsecond, lossEvery: 100})
	target := `"><img src=x onerror=alert(2)>`
	a.Result.Config.Target = target
	b := makeRun(t, synth{label: "after", probes: 500, intervals: 4, oneWay: true, base: 90 * time.Microsecond})
	for _, runs := range [][]Run{{a}, {a, b}} {
		var buf bytes.Buffer
		if err := Write(&buf, HTML, runs); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		text, ids := parseXML(t, buf.Bytes(), true)
		for _, id := range []string{"volley-report", "fig-latency", "fig-percentiles", "fig-histogram", "fig-throughput",
			"summary", "config", "intervals"} {
			if !ids[id] {
				t.Errorf("%d runs: no element with id %q", len(runs), id)
			}
		}
		for _, bad := range []string{"<script", "<link", "<img", "url(", "http://", "https://", "@import"} {
			if strings.Contains(strings.ToLower(page), bad) {
				t.Errorf("%d runs: the page holds %q: it must fetch nothing and escape the result", len(runs), bad)
			}
		}
		for _, want := range []string{`name="viewport"`, "2026-11-30 14:05:06 UTC", "overflow-x:auto", "system-ui"} {
			if !strings.Contains(page, want) {
				t.Errorf("%d runs: the page lacks %q", len(runs), want)
			}
		}
		for _, want := range []string{hostile, target} {
			if !strings.Contains(text, want) {
				t.Errorf("%d runs: %q is not in the page's text (escaped in its markup)", len(runs), want)
			}
		}
		// A row per interval of every run.
		if got, want := strings.Count(sectionOf(page, "intervals"), "<tr>")-1, 5+4*(len(runs)-1); got != want {
			t.Errorf("%d runs: the interval table has %d rows, want %d", len(runs), got, want)
		}
	}
}

// sectionOf is the table with the given id in page.
func sectionOf(page, id string) string {
	_, after, _ := strings.Cut(page, `<table id="`+id+`">`)
	body, _, _ := strings.Cut(after, "</table>")
	return body
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	run := makeRun(t, synth{probes: 100, intervals: 2, base: 80 * time.Microsecond})
	for _, name := range []string{"r.svg", "r.png", "r.html"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, []Run{run}); err != nil {
			t.Fatalf("WriteFile(%s) = %v", name, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v; want a non-empty file, mode 0644", name, fi, err)
		}
	}
	if err := WriteFile(filepath.Join(dir, "r.pdf"), []Run{run}); err == nil || !strings.Contains(err.Error(), ".pdf") {
		t.Errorf("WriteFile(r.pdf) = %v, want an error naming the extension", err)
	}
	if err := WriteFile(filepath.Join(dir, "none.svg"), nil); !errors.Is(err, ErrNoRuns) {
		t.Errorf("WriteFile(no runs) = %v, want ErrNoRuns", err)
	}
	if err := WriteFile(filepath.Join(dir, "nil.svg"), []Run{{Label: "x"}}); err == nil || !strings.Contains(err.Error(), "no result") {
		t.Errorf("WriteFile(run without a result) = %v, want an error saying so", err)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.svg"), []Run{run}); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "r.html r.png r.svg" {
		t.Errorf("directory holds %q, want the three pictures and no temporary file", names)
	}
}

func TestConfigTable(t *testing.T) {
	run := makeRun(t, synth{probes: 10, intervals: 1, base: time.Millisecond})
	run.Result.Config.Granted.MaxRate = 1e6
	run.Result.Config.Socket = &result.Socket{TTL: 64, Asked: []string{"--ttl", "64"}}
	rows := map[string]string{}
	for _, r := range configTable([]Run{run}).Rows {
		rows[r[0]] = r[1]
	}
	for name, want := range map[string]string{
		"volley version": "v9.8.7-test", "percentiles": "50, 90, 99, 99.9", "duration": "1.00s",
		"granted.max_rate_pps": "1000000", "socket.ttl": "64", "socket.asked": "--ttl, 64", "reply_size": "200",
	} {
		if got, ok := rows[name]; !ok || got != want {
			t.Errorf("config row %q = %q (present: %v), want %q", name, got, ok, want)
		}
	}
	for _, unset := range []string{"hold", "oneway", "rate_pps", "tcp.rtt", "stopped"} {
		if v, ok := rows[unset]; ok {
			t.Errorf("config has row %q = %q for a field not set", unset, v)
		}
	}
}

func TestHTMLLegends(t *testing.T) {
	plain := makeRun(t, synth{probes: 1000, intervals: 4, base: 80 * time.Microsecond, lossEvery: 90})
	for _, run := range []Run{plain, loadRun(t, "", "both", false)} {
		htmlLegends(t, []Run{run})
	}
}

// htmlLegends checks the legends of the HTML report of runs.
func htmlLegends(t *testing.T, runs []Run) {
	t.Helper()
	var page, file bytes.Buffer
	if err := Write(&page, HTML, runs); err != nil {
		t.Fatal(err)
	}
	if err := Write(&file, SVG, runs); err != nil {
		t.Fatal(err)
	}
	for _, f := range figures(runs) {
		_, body, _ := strings.Cut(page.String(), `<figure id="`+f.id+`">`)
		body, _, _ = strings.Cut(body, "</figure>")
		plots, caption, ok := strings.Cut(body, "<figcaption>")
		if !ok {
			t.Fatalf("%s: no caption", f.id)
		}
		// The legends are the page's text under the figure, a key each
		// (drawn as an SVG swatch), and not in the figure's drawing as
		// they are in the picture files.
		var want []string
		for _, pn := range f.panels {
			want = append(want, pn.series...)
			if !strings.Contains(caption, `<span class="panel">`+pn.plot.Title.Text+"</span>") {
				t.Errorf("%s: caption lacks the panel title %q", f.id, pn.plot.Title.Text)
			}
		}
		if got := strings.Count(caption, `<span class="key"><svg`); got != len(want) {
			t.Errorf("%s: caption has %d keys with a swatch, want %d (%q)", f.id, got, len(want), want)
		}
		for _, name := range want {
			if !strings.Contains(caption, "</svg>"+name+"</span>") {
				t.Errorf("%s: caption lacks the key %q", f.id, name)
			}
			if !strings.Contains(file.String(), ">"+name+"</text>") {
				t.Errorf("%s: the SVG file lacks the legend's %q", f.id, name)
			}
			if strings.Contains(plots, ">"+name+"</text>") {
				t.Errorf("%s: the page's figure draws the legend's %q too", f.id, name)
			}
		}
	}
}
