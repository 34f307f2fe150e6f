package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts are drawn by gonum/plot as SVG, in a sans-serif face; the
// file names the face and falls back to the reader's sans-serif fonts
// (nothing is fetched).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// maxGlyphs: a series of more points is drawn as a line alone (a long
// history's dots would hide it, and weigh on the file).
const maxGlyphs = 120

const (
	chartWidth  = 9.5 * vg.Inch
	chartHeight = 3.6 * vg.Inch
	legendWidth = 1.9 * vg.Inch
)

// chart is one figure of the report: its SVG, or why it has none.
type chart struct {
	ID, Title, Caption string
	Series             []string      // the legend's entries, in order
	SVG                template.HTML // empty: no data
	Empty              string        // what is missing, when SVG is empty
}

// series is one line of a chart over time.
type series struct {
	name   string
	pts    plotter.XYs
	dashed bool
	color  int // index into the palette
}

// mergeSame draws series with the same points (and the same dash) once:
// one line hidden under another would leave its legend entry pointing at
// nothing. The merged series is named by all of them, their common words
// said once ("with title, authors"; "title, DOI minimum"), in the colour
// of the first.
func mergeSame(ss []series) (out []series, merged bool) {
	var names [][]string
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		i := slices.IndexFunc(out, func(o series) bool { return o.dashed == s.dashed && slices.Equal(o.pts, s.pts) })
		if i < 0 {
			out = append(out, s)
			names = append(names, []string{s.name})
			continue
		}
		names[i] = append(names[i], s.name)
		merged = true
	}
	for i := range out {
		out[i].name = joinNames(names[i])
	}
	return out, merged
}

// joinNames names merged series: names that share a first or last word
// say it once ("with title, DOI"; "title, DOI minimum"), the groups
// joined by semicolons.
func joinNames(names []string) string {
	var parts []string
	done := make([]bool, len(names))
	for i, n := range names {
		if done[i] {
			continue
		}
		done[i] = true
		if !strings.Contains(n, " ") {
			parts = append(parts, n)
			continue
		}
		first, _, _ := strings.Cut(n, " ")
		last := n[strings.LastIndexByte(n, ' ')+1:]
		var byFirst, byLast []int
		for j := i + 1; j < len(names); j++ {
			if done[j] {
				continue
			}
			if strings.HasPrefix(names[j], first+" ") {
				byFirst = append(byFirst, j)
			}
			if strings.HasSuffix(names[j], " "+last) {
				byLast = append(byLast, j)
			}
		}
		group, trim := []int(nil), func(s string) string { return s }
		switch {
		case len(byFirst) > 0 && len(byFirst) >= len(byLast):
			group, trim = byFirst, func(s string) string { return strings.TrimPrefix(s, first+" ") }
		case len(byLast) > 0:
			group, trim = byLast, func(s string) string { return strings.TrimSuffix(s, " "+last) }
		}
		words := []string{trim(n)}
		for _, j := range group {
			done[j] = true
			words = append(words, trim(names[j]))
		}
		switch {
		case len(group) == 0:
			parts = append(parts, n)
		case len(byFirst) > 0 && len(byFirst) >= len(byLast):
			parts = append(parts, first+" "+strings.Join(words, ", "))
		default:
			parts = append(parts, strings.Join(words, ", ")+" "+last)
		}
	}
	return strings.Join(parts, "; ")
}

// addLegend adds an entry to p's legend, its name broken into lines that
// fit the legend's column (the lines after the first have no icon).
func addLegend(p *plot.Plot, name string, thumbs ...plot.Thumbnailer) {
	sty := p.Legend.TextStyle
	room := legendWidth - 8 - p.Legend.ThumbnailWidth - sty.Width("  ")
	var lines []string
	for _, w := range strings.Fields(name) {
		if n := len(lines); n > 0 && sty.Width(lines[n-1]+" "+w) <= room {
			lines[n-1] += " " + w
			continue
		}
		lines = append(lines, w)
	}
	for i, l := range lines {
		if i == 0 {
			p.Legend.Add(l, thumbs...)
		} else {
			p.Legend.Add(l)
		}
	}
}

// palette is Tableau 10's colours: ten that stay apart on a white page
// (gonum's default seven put two reds and two oranges close together).
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff}, {0x59, 0xa1, 0x4f, 0xff},
	{0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff}, {0x9c, 0x75, 0x5f, 0xff}, {0xba, 0xb0, 0xac, 0xff},
}

// seriesColor is the i-th series' colour.
func seriesColor(i int) color.Color { return palette[(i%len(palette)+len(palette))%len(palette)] }

// darker is c at 60% of its brightness: dashed lines drawn over a line
// of their own colour stay visible.
func darker(c color.Color) color.Color {
	r, g, b, a := c.RGBA()
	return color.RGBA64{R: uint16(r * 6 / 10), G: uint16(g * 6 / 10), B: uint16(b * 6 / 10), A: uint16(a)}
}

// newPlot makes a plot with the report's faces, a title and axis labels.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	for _, ts := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		ts.Typeface, ts.Variant = sans.Typeface, sans.Variant
	}
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.TextStyle.Font.Size = 13
	p.Title.Padding = 6
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = 10
	p.Add(plotter.NewGrid())
	return p
}

// xAxis is the X axis of the charts over runs: their start time, with
// dates (and times when the runs are close together); or, for runs less
// than a minute apart (a demo, a test), the run's number, oldest first.
type xAxis struct {
	byNumber bool
	span     time.Duration
	runs     int
}

func newXAxis(first, last time.Time, runs int) xAxis {
	span := last.Sub(first)
	return xAxis{byNumber: span < time.Minute, span: span, runs: runs}
}

// x is the X value of the i-th run (oldest first) that started at t.
func (a xAxis) x(i int, t time.Time) float64 {
	if a.byNumber {
		return float64(i + 1)
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9 // UnixNano overflows outside 1678-2262
}

func (a xAxis) apply(p *plot.Plot) {
	if a.byNumber {
		p.X.Label.Text = "run (oldest first)"
		var ticks []plot.Tick
		step := max(1, a.runs/10)
		for i := 1; i <= a.runs; i += step {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: strconv.Itoa(i)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = 0.5, float64(a.runs)+0.5
		return
	}
	format := "2006-01-02"
	switch {
	case a.span < time.Hour:
		format = "15:04:05"
	case a.span < 2*24*time.Hour:
		format = "Jan 2 15:04"
	}
	p.X.Tick.Marker = distinctTicks{plot.TimeTicks{Format: format}}
}

// distinctTicks are m's ticks, a label that repeats the one before it
// left off (its tick kept, unlabelled): runs close together put several
// ticks within one minute or one day of the format.
type distinctTicks struct{ m plot.Ticker }

func (d distinctTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := d.m.Ticks(lo, hi)
	last := ""
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		if ts[i].Label == last {
			ts[i].Label = ""
			continue
		}
		last = ts[i].Label
	}
	return ts
}

// countTicks are the default ticks without fractions: for counts.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value == math.Trunc(t.Value) {
			if t.Label != "" {
				t.Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// render draws p with its legend to the right of it, as SVG for inline
// use.
func render(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend()                   // the plot draws none inside its area
	p.Draw(draw.Crop(dc, 3, -legendWidth, 0, -3)) // room for the title's and axis label's line boxes
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3.5)
	legend.YOffs = -vg.Length(p.Title.TextStyle.Font.Size) * 2
	legend.Draw(draw.Crop(dc, chartWidth-legendWidth+8, 0, 0, 0))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	}
	svg = strings.ReplaceAll(svg, "font-family:Liberation Sans", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif")
	svg = strings.Replace(svg, "<svg ", `<svg role="img" `, 1)
	return template.HTML(svg), nil //nolint:gosec // gonum's own SVG; every text in it is XML-escaped by svgo
}

// lineChart draws series over time; a chart whose series have no point
// is empty, with why.
func lineChart(id, title, caption, yLabel string, ss []series, ax xAxis, yMax float64, counts bool, empty string) (chart, error) {
	ch := chart{ID: id, Title: title, Caption: caption}
	n := 0
	for _, s := range ss {
		n += len(s.pts)
	}
	if n == 0 {
		ch.Empty = empty
		return ch, nil
	}
	ss, merged := mergeSame(ss)
	if merged {
		ch.Caption += " Lines with the same values are drawn once, under all their names."
	}
	p := newPlot(title, "run start (UTC)", yLabel)
	ax.apply(p)
	if counts {
		p.Y.Tick.Marker = countTicks{}
	}
	p.Y.Min = 0
	if yMax > 0 {
		p.Y.Max = yMax
	}
	var last []plot.Plotter // dashed lines, drawn over the others
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		col := seriesColor(s.color)
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return ch, fmt.Errorf("%s: %s: %w", id, s.name, err)
		}
		l.Color, l.Width = col, vg.Points(1.5)
		pts.Color, pts.Shape, pts.Radius = col, draw.CircleGlyph{}, vg.Points(2.2)
		switch {
		case s.dashed:
			l.Color, l.Width = darker(col), vg.Points(1.2)
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			last = append(last, l)
			addLegend(p, s.name, l)
		case len(s.pts) > maxGlyphs:
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(l)
			addLegend(p, s.name, l)
		default:
			p.Add(l, pts)
			addLegend(p, s.name, l, pts)
		}
		ch.Series = append(ch.Series, s.name)
	}
	p.Add(last...)
	switch {
	case p.Y.Max <= p.Y.Min:
		p.Y.Max = 1
	case yMax == 0:
		p.Y.Max *= 1.1 // room above the highest point
	}
	svg, err := render(p)
	ch.SVG = svg
	return ch, err
}

// barChart draws groups of bars over named categories.
func barChart(id, title, caption, xLabel, yLabel string, categories []string, groups []string, values [][]float64, empty string) (chart, error) {
	ch := chart{ID: id, Title: title, Caption: caption}
	total := 0.0
	for _, vs := range values {
		for _, v := range vs {
			total += v
		}
	}
	if total == 0 {
		ch.Empty = empty
		return ch, nil
	}
	p := newPlot(title, xLabel, yLabel)
	width := vg.Points(math.Min(28, 420/float64(len(categories)*len(groups))))
	for i, g := range groups {
		b, err := plotter.NewBarChart(plotter.Values(values[i]), width)
		if err != nil {
			return ch, fmt.Errorf("%s: %s: %w", id, g, err)
		}
		b.Color = seriesColor(i)
		b.LineStyle.Width = 0
		b.Offset = width * vg.Length(float64(i)-float64(len(groups)-1)/2)
		p.Add(b)
		addLegend(p, g, b)
		ch.Series = append(ch.Series, g)
	}
	p.NominalX(categories...)
	p.Y.Tick.Marker = countTicks{}
	p.Y.Min = 0
	p.Y.Max *= 1.1
	svg, err := render(p)
	ch.SVG = svg
	return ch, err
}
