package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// page is what the HTML report's template fills in.
type page struct {
	Heading string
	Lines   []string // the title block, but its heading
	Figures []htmlFigure
	Load    []string // a latency-under-load run's score and load
	Phases  table    // their phases (shown when Load has lines)
	Summary table
	Counts  table
	Config  table
	Steps   table // the intervals
}

// htmlFigure is one figure of the page: an inline SVG document of its
// plots, and their legends as the page's text, which wraps to the screen
// and reads at the page's size however small the figure is drawn.
type htmlFigure struct {
	ID      string
	SVG     template.HTML
	Legends []htmlLegend
}

// htmlLegend is the legend of a panel: its title and its series.
type htmlLegend struct {
	Title string
	Keys  []htmlKey
}

// htmlKey is a series of a legend: its name and its swatch, drawn as
// the plot draws the series.
type htmlKey struct {
	Name   string
	Swatch template.HTML
}

// table is a table of text cells: a header row and the rows.
type table struct {
	Head []string
	Rows [][]string
}

// reportPage is the HTML report: nothing in it is fetched (no script,
// stylesheet, font or image comes from elsewhere: the figures are inline
// SVG documents, the style is in the page), and it reads on a phone (the
// figures shrink to the screen, to a width where their text still reads,
// and then scroll sideways, as the tables do; their legends are text
// under them) as on a large screen (the page stops growing at 1400 CSS
// pixels, a figure at 960; both grow with the text on a 4K screen).
var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"pair": func(id string, t table) idTable { return idTable{id, t} },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Heading}}</title>
<style>
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;line-height:1.45;color:#111;background:#fff}
main{box-sizing:border-box;max-width:1400px;margin:0 auto;padding:1rem}
h1{font-size:1.3em;margin:0 0 .4rem}
h2{font-size:1.1em;margin:2rem 0 .5rem}
header p{margin:.1rem 0;color:#333;overflow-wrap:anywhere}
figure{margin:1.5rem 0}
.plot{overflow-x:auto;-webkit-overflow-scrolling:touch}
.plot svg{display:block;width:100%;height:auto;min-width:460px;max-width:960px}
figcaption{font-size:.9em;color:#333;max-width:960px}
figcaption p{margin:.15rem 0}
.panel{font-weight:600;margin-right:.4rem}
.key{display:inline-block;white-space:nowrap;margin-right:1rem}
.key svg{width:1.8em;height:1em;vertical-align:-.15em;margin-right:.3em}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%}
table{border-collapse:collapse;font-size:.85em;font-variant-numeric:tabular-nums;margin-bottom:1rem}
th,td{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3}
#config th,#config td{text-align:left}
#load p{margin:.2rem 0}
@media (max-width:600px){main{padding:.6rem}}
@media (min-width:2200px){body{font-size:1.3rem}main{max-width:1820px}.plot svg,figcaption{max-width:1250px}}
</style>
</head>
<body>
<main id="volley-report">
<header id="title-block">
<h1>{{.Heading}}</h1>
{{range .Lines}}<p>{{.}}</p>
{{end}}</header>
{{range .Figures}}<figure id="{{.ID}}">
<div class="plot">{{.SVG}}</div>
<figcaption>{{range .Legends}}<p><span class="panel">{{.Title}}</span>
{{range .Keys}}<span class="key">{{.Swatch}}{{.Name}}</span>
{{end}}</p>
{{end}}</figcaption>
</figure>
{{end}}{{if .Load}}<section id="load">
<h2>Latency under load</h2>
{{range .Load}}<p>{{.}}</p>
{{end}}<div class="scroll">{{template "table" (pair "phases" .Phases)}}</div>
</section>
{{end}}<section>
<h2>Summary</h2>
<div class="scroll">{{template "table" (pair "summary" .Summary)}}</div>
<div class="scroll">{{template "table" (pair "counts" .Counts)}}</div>
</section>
<section>
<h2>Configuration</h2>
<div class="scroll">{{template "table" (pair "config" .Config)}}</div>
</section>
<section>
<h2>Intervals</h2>
<div class="scroll">{{template "table" (pair "intervals" .Steps)}}</div>
</section>
</main>
</body>
</html>
{{define "table"}}<table id="{{.ID}}">
<thead><tr>{{range .T.Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .T.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}`))

// idTable is a table and the id of its element.
type idTable struct {
	ID string
	T  table
}

// writeHTML writes the HTML report of runs: the title block, the
// figures, a latency-under-load run's phases, the summary, the
// configuration and the intervals.
func writeHTML(w io.Writer, runs []Run, figs []figure) error {
	lines := titleLines(runs)
	pg := page{Heading: lines[0], Lines: lines[1:], Load: loadLines(runs), Phases: phasesTable(runs),
		Summary: summaryTable(runs), Counts: countsTable(runs),
		Config: configTable(runs), Steps: intervalsTable(runs)}
	for _, f := range figs {
		b, err := svgBytes(plotsOnly(f.panels))
		if err != nil {
			return err
		}
		hf := htmlFigure{ID: f.id, SVG: inlineSVG(b)}
		for _, pn := range f.panels {
			l := htmlLegend{Title: pn.plot.Title.Text}
			for i, name := range pn.series {
				sw, err := swatch(pn.thumbs[i])
				if err != nil {
					return err
				}
				l.Keys = append(l.Keys, htmlKey{Name: name, Swatch: sw})
			}
			hf.Legends = append(hf.Legends, l)
		}
		pg.Figures = append(pg.Figures, hf)
	}
	return reportPage.Execute(w, pg)
}

// The size of a swatch: a legend's thumbnail in the pictures (the page
// scales it to its text).
const (
	swatchWidth  = 16 * vg.Length(1) // points
	swatchHeight = 9 * vg.Length(1)
)

// swatch draws thumbs as the key of a series in a legend of the page: an
// inline SVG element, the series' line, glyph or fill as its plot draws
// it.
func swatch(thumbs []plot.Thumbnailer) (h template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart: drawing a legend's key: %v", r)
		}
	}()
	c := vgsvg.New(swatchWidth, swatchHeight)
	dc := draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{Max: vg.Point{X: swatchWidth, Y: swatchHeight}}}
	for _, t := range thumbs {
		t.Thumbnail(&dc)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(bytes.TrimSpace(buf.Bytes())), nil
}

// inlineSVG is an SVG document as an element of an HTML page: without
// its XML declaration, the comment before its root and its namespace
// declarations (an HTML parser puts <svg> in its namespace itself; and
// so the page names no address at all). gonum's SVG canvas escapes every
// text it draws.
func inlineSVG(b []byte) template.HTML {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	for _, ns := range []string{"\n\txmlns=\"http://www.w3.org/2000/svg\"", "\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\""} {
		b = bytes.Replace(b, []byte(ns), nil, 1)
	}
	return template.HTML(b)
}
