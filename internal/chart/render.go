package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The picture's size: 8 inches wide, each panel 2.6 high under the title
// block; a PNG at 144 dots an inch (1152 pixels wide). A figure of the
// HTML report is narrower, for its legend is text of the page beside
// it, and so its text is larger on a phone's screen.
const (
	pictureWidth = 8 * vg.Inch
	figureWidth  = 6.5 * vg.Inch
	panelHeight  = 2.6 * vg.Inch
	pngDPI       = 144
)

// Title block text sizes and the margin around it, in points.
const (
	headSize  = 11
	lineSize  = 8.5
	titlePad  = 8
	lineSpace = 1.45
)

// figures are the pictures drawn of runs, in the order they are shown:
// a latency-under-load run's phases first, when a run has them.
func figures(runs []Run) []figure {
	figs := []figure{latencyFigure(runs), percentileFigure(runs), histogramFigure(runs), throughputFigure(runs)}
	if f, ok := loadFigure(runs); ok {
		figs = append([]figure{f}, figs...)
	}
	return figs
}

// panelsOf lists the panels of figs in order.
func panelsOf(figs []figure) []*panel {
	var out []*panel
	for _, f := range figs {
		out = append(out, f.panels...)
	}
	return out
}

// titleHeight is the height the title block lines take.
func titleHeight(lines []string) vg.Length {
	if len(lines) == 0 {
		return 0
	}
	h := vg.Points(2*titlePad + headSize*lineSpace)
	return h + vg.Points(lineSize*lineSpace)*vg.Length(len(lines)-1)
}

// A picture is what one SVG or PNG document shows: the title block lines
// (none for a figure of the HTML report) and panels, with room on the
// right for the widest legend of its panels or of others it is shown with
// (none for a figure of the HTML report, whose legends are the page's
// text).
type picture struct {
	lines   []string
	panels  []*panel
	width   vg.Length
	legendW vg.Length
}

// newPicture returns the picture of lines and panels, its legend column
// as wide as the widest legend of all: its panels and those of the
// pictures it is shown with, so that their plots line up.
func newPicture(lines []string, panels, all []*panel) picture {
	w := vg.Inch
	for _, pn := range all {
		// Text measured in Liberation Sans, with room for a wider face
		// standing in for it.
		w = max(w, pn.legend.Rectangle(draw.Canvas{}).Size().X*1.15+vg.Points(12))
	}
	return picture{lines: lines, panels: panels, width: pictureWidth, legendW: min(w, pictureWidth*0.4)}
}

// plotsOnly returns the picture of a figure of the HTML report: its
// panels' plots, without their legends.
func plotsOnly(panels []*panel) picture {
	return picture{panels: panels, width: figureWidth}
}

// size is the size of the picture.
func (pic picture) size() (w, h vg.Length) {
	return pic.width, titleHeight(pic.lines) + panelHeight*vg.Length(len(pic.panels))
}

// drawPicture draws the title block and the panels, one under the other,
// on c, which is w by h. gonum/plot panics on what it cannot draw; that
// comes back as an error.
func drawPicture(c vg.Canvas, pic picture) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart: drawing the figures: %v", r)
		}
	}()
	w, h := pic.size()
	dc := draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	drawTitle(dc, pic.lines)
	dc.Max.Y -= titleHeight(pic.lines)
	drawPanels(dc, pic.panels, pic.legendW)
	return nil
}

// drawTitle writes the title block lines at the top of dc, the first
// larger.
func drawTitle(dc draw.Canvas, lines []string) {
	y := dc.Max.Y - vg.Points(titlePad)
	for i, l := range lines {
		size := lineSize
		if i == 0 {
			size = headSize
		}
		dc.FillText(titleStyle(size), vg.Point{X: dc.Min.X + vg.Points(titlePad), Y: y}, l)
		y -= vg.Points(size * lineSpace)
	}
}

// titleStyle is the style of a title block line of the given size.
func titleStyle(size float64) text.Style {
	return text.Style{Color: color.Black, Font: face(size), Handler: plot.DefaultTextHandler, YAlign: draw.YTop}
}

// wrapTitle breaks the title block lines (but the first) that are wider
// than the picture at their " · " separators; the parts after the first
// are indented.
func wrapTitle(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	room := pictureWidth - 2*vg.Points(titlePad)
	sty := titleStyle(lineSize)
	out := []string{lines[0]}
	for _, l := range lines[1:] {
		cur := ""
		for _, part := range strings.Split(l, " · ") {
			next := part
			if cur != "" {
				next = cur + " · " + part
			}
			if cur != "" && sty.Width(next) > room {
				out = append(out, cur)
				next = "      " + part
			}
			cur = next
		}
		out = append(out, cur)
	}
	return out
}

// ticks marks an axis as gonum's default does, labelled with no more
// digits than the value needs ("250", not "250.00").
type ticks struct{}

// Ticks returns the marks between min and max.
func (ticks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// drawPanels draws the panels one under the other on dc, their plots'
// data areas aligned, each legend in a column on the right beside its
// plot rather than over its data (none when legendW is 0).
func drawPanels(dc draw.Canvas, panels []*panel, legendW vg.Length) {
	if len(panels) == 0 {
		return
	}
	area := dc
	area.Max.X -= legendW
	rows := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		rows[i] = []*plot.Plot{pn.plot}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(6), PadY: vg.Points(14)}
	cs := plot.Align(rows, tiles, area)
	for i, pn := range panels {
		pn.plot.Draw(cs[i][0])
		if legendW <= 0 {
			continue
		}
		data := pn.plot.DataCanvas(cs[i][0])
		lc := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: area.Max.X + vg.Points(4), Y: data.Min.Y},
			Max: vg.Point{X: dc.Max.X - vg.Points(4), Y: data.Max.Y},
		}}
		pn.legend.Draw(lc)
	}
}

// writeSVG draws the title block and the panels as one SVG document.
func writeSVG(w io.Writer, pic picture) error {
	b, err := svgBytes(pic)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// svgBytes draws the title block and the panels as an SVG document. Its
// text names Liberation Sans and, for a reader without it, the fonts of
// the same metrics (no font is embedded or fetched).
func svgBytes(pic picture) ([]byte, error) {
	c := vgsvg.New(pic.size())
	if err := drawPicture(c, pic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")), nil
}

// writePNG draws the title block and the panels as a PNG picture.
func writePNG(w io.Writer, pic picture) error {
	c := vgimg.NewWith(vgimg.UseWH(pic.size()), vgimg.UseDPI(pngDPI))
	if err := drawPicture(c, pic); err != nil {
		return err
	}
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}
