package chart

import (
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/volley-net/volley/internal/result"
)

// A figure is one of the pictures drawn for the runs: one panel, or
// panels stacked over a shared axis. Tests inspect figures before they
// are drawn.
type figure struct {
	id     string // the HTML element's id: "fig-latency", ...
	panels []*panel
}

// A panel is one plot and its legend, drawn beside it rather than over
// the data.
type panel struct {
	plot   *plot.Plot
	legend plot.Legend
	series []string             // the legend's names, in order
	thumbs [][]plot.Thumbnailer // how each is drawn in the legend
	items  []plot.Plotter       // what the plot draws, in order
	notes  []string             // what the panel could not draw, such as "no replies"
}

// newPanel returns an empty panel titled title, its axes labelled x and y,
// in the sans-serif face every text of a figure uses.
func newPanel(title, x, y string) *panel {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = face(11)
	p.Title.Padding = vg.Points(4)
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = face(9)
		a.Tick.Label.Font = face(8)
		a.Tick.Length = vg.Points(4)
		a.Tick.Marker = ticks{}
	}
	l := plot.NewLegend()
	l.TextStyle.Font = face(8)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(16)
	return &panel{plot: p, legend: l}
}

// add draws pl and names it in the legend (name "" keeps it out of the
// legend: a second part of a series already named).
func (pn *panel) add(name string, pl plot.Plotter) {
	pn.draw(pl)
	if name == "" {
		return
	}
	if t, ok := pl.(plot.Thumbnailer); ok {
		pn.name(name, t)
	} else {
		pn.name(name)
	}
}

// name adds name to the legend, drawn as thumbs.
func (pn *panel) name(name string, thumbs ...plot.Thumbnailer) {
	pn.legend.Add(name, thumbs...)
	pn.series = append(pn.series, name)
	pn.thumbs = append(pn.thumbs, thumbs)
}

// draw has the plot draw pls, in the legend or not.
func (pn *panel) draw(pls ...plot.Plotter) {
	pn.plot.Add(pls...)
	pn.items = append(pn.items, pls...)
}

// note adds what the panel could not draw to its title.
func (pn *panel) note(s string) {
	pn.notes = append(pn.notes, s)
	pn.plot.Title.Text += " (" + s + ")"
}

// sans is the face of every text: Liberation Sans, metric-compatible with
// Arial and Helvetica, the fallbacks an SVG names for it.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func face(points float64) font.Font { return font.From(sans, vg.Points(points)) }

// The kinds of series a run draws.
const (
	kindRTT  = "RTT"
	kindUp   = "up"
	kindDown = "down"
)

// palette is the colour of each series (one run: by kind) or of each run
// (several runs).
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0x7f, 0x7f, 0x7f, 0xff}, // grey
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// kindIndex is a kind's place among the three: its colour when one run
// is drawn, its dashes and glyph when several are.
func kindIndex(kind string) int {
	switch kind {
	case kindUp:
		return 1
	case kindDown:
		return 2
	}
	return 0
}

// A look is how one series of one run is drawn.
type look struct {
	color  color.RGBA
	dashes []vg.Length
	shape  draw.GlyphDrawer
}

// lookOf returns the look of run i's (of n) series of kind.
func lookOf(i, n int, kind string) look {
	k := kindIndex(kind)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, downTriangle{}}
	if n == 1 {
		return look{color: palette[k], shape: shapes[k]}
	}
	dashes := [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}}
	return look{color: palette[i%len(palette)], dashes: dashes[k], shape: shapes[k]}
}

// translucent returns c at the given opacity (0 to 1), premultiplied as
// color.RGBA wants.
func translucent(c color.RGBA, a float64) color.RGBA {
	return color.RGBA{uint8(float64(c.R) * a), uint8(float64(c.G) * a), uint8(float64(c.B) * a), uint8(255 * a)}
}

// seriesName names run i's (of n) series: name alone for one run, else
// prefixed with the run's label.
func seriesName(runs []Run, i int, name string) string {
	if len(runs) == 1 {
		return name
	}
	return label(runs, i) + " " + name
}

// label is run i's label, or "run N" when it has none.
func label(runs []Run, i int) string {
	if runs[i].Label != "" {
		return runs[i].Label
	}
	return "run " + strconv.Itoa(i+1)
}

// A unit is the unit an axis shows durations in.
type unit struct {
	name string
	ns   float64 // nanoseconds in one unit
}

// durationUnit picks the unit that reads best for values up to max.
func durationUnit(max time.Duration) unit {
	switch {
	case max < time.Millisecond:
		return unit{"µs", 1e3}
	case max < time.Second:
		return unit{"ms", 1e6}
	}
	return unit{"s", 1e9}
}

func (u unit) of(d time.Duration) float64 { return float64(d) / u.ns }

// rateUnit picks the unit that reads best for bit rates up to max.
func rateUnit(max float64) unit {
	switch {
	case max >= 1e9:
		return unit{"Gbit/s", 1e9}
	case max >= 1e6:
		return unit{"Mbit/s", 1e6}
	case max >= 1e3:
		return unit{"kbit/s", 1e3}
	}
	return unit{"bit/s", 1}
}

// seconds is d as seconds, a time axis's value.
func seconds(d time.Duration) float64 { return d.Seconds() }

// finite keeps the points whose coordinates are numbers.
func finite(xys plotter.XYs) plotter.XYs {
	out := xys[:0]
	for _, p := range xys {
		if !math.IsNaN(p.X) && !math.IsInf(p.X, 0) && !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
			out = append(out, p)
		}
	}
	return out
}

// downTriangle is a glyph pointing down, the mark of a loss on the way
// down (gonum's TriangleGlyph, pointing up, marks one on the way up).
type downTriangle struct{}

// DrawGlyph draws the glyph at pt.
func (downTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.5)})
	r := sty.Radius * 1.25
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r*0.866, Y: pt.Y + r/2})
	p.Line(vg.Point{X: pt.X + r*0.866, Y: pt.Y + r/2})
	p.Close()
	c.Stroke(p)
}

// offsetFix returns what to take from a run's raw up delays (and add to
// its down delays) to show them as one-way delays: the clock offset when
// the run estimated it, else 0 (same clock, or no estimate).
func offsetFix(res *result.Result) time.Duration {
	if co := res.ClockOffset; co != nil && co.Method == "estimate" {
		return co.Offset
	}
	return 0
}
