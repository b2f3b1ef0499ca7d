// Package plot draws small line charts as SVG with the standard library
// only: the soak's and the benchmark's curves in docs/, for people who
// would rather look than read. A chart is a grid of panels, one quantity
// each, sharing the x axis's label; every series is a polyline with its
// points marked, and the legend names it. Only tests and test harnesses
// import it.
package plot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Point is one sample.
type Point struct{ X, Y float64 }

// Series is one named line.
type Series struct {
	Name   string
	Points []Point
}

// Panel is one quantity against x.
type Panel struct {
	Title  string // e.g. "RSS (MiB)"
	Series []Series
	// YZero starts the y axis at 0 (else at the smallest value).
	YZero bool
}

// Chart is panels in a grid of Columns columns.
type Chart struct {
	Title   string
	XLabel  string
	Columns int // default 2
	Panels  []Panel
}

// palette holds distinguishable colours for the series, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	panelW, panelH = 420, 240
	marginL        = 58
	marginR        = 14
	marginT        = 30
	marginB        = 40
	titleH         = 34
)

// WriteSVG renders the chart.
func (c Chart) WriteSVG(w io.Writer) error {
	cols := c.Columns
	if cols <= 0 {
		cols = 2
	}
	if cols > len(c.Panels) && len(c.Panels) > 0 {
		cols = len(c.Panels)
	}
	rows := (len(c.Panels) + cols - 1) / cols
	width, height := cols*panelW, titleH+rows*panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(c.Title))
	for i, p := range c.Panels {
		x0, y0 := (i%cols)*panelW, titleH+(i/cols)*panelH
		p.render(&b, x0, y0, c.XLabel)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (p Panel) render(b *strings.Builder, x0, y0 int, xlabel string) {
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			minX, maxX = math.Min(minX, pt.X), math.Max(maxX, pt.X)
			minY, maxY = math.Min(minY, pt.Y), math.Max(maxY, pt.Y)
		}
	}
	if math.IsInf(minX, 1) { // no points
		minX, maxX, minY, maxY = 0, 1, 0, 1
	}
	if p.YZero && minY > 0 {
		minY = 0
	}
	if maxX == minX {
		maxX = minX + 1
	}
	if maxY == minY {
		maxY = minY + 1
	}
	// Round the y range out to nice ticks.
	step := niceStep((maxY - minY) / 4)
	minY = math.Floor(minY/step) * step
	maxY = math.Ceil(maxY/step) * step
	plotW := float64(panelW - marginL - marginR)
	plotH := float64(panelH - marginT - marginB)
	sx := func(x float64) float64 { return float64(x0+marginL) + (x-minX)/(maxX-minX)*plotW }
	sy := func(y float64) float64 { return float64(y0+marginT) + plotH - (y-minY)/(maxY-minY)*plotH }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" font-weight="bold">%s</text>`+"\n", x0+marginL, y0+18, html.EscapeString(p.Title))
	// Axes, horizontal grid lines and y ticks.
	for y := minY; y <= maxY+step/2; y += step {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", sx(minX), sy(y), sx(maxX), sy(y))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", sx(minX)-4, sy(y)+4, formatTick(y))
	}
	xstep := niceStep((maxX - minX) / 5)
	for x := math.Ceil(minX/xstep) * xstep; x <= maxX+xstep/100; x += xstep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", sx(x), sy(minY), sx(x), sy(minY)+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", sx(x), sy(minY)+15, formatTick(x))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#666"/>`+"\n", sx(minX), sy(maxY), plotW, plotH)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", sx(minX)+plotW/2, y0+panelH-6, html.EscapeString(xlabel))
	// Series, then the legend in the panel's top right corner.
	for i, s := range p.Series {
		color := palette[i%len(palette)]
		var pts []string
		for _, pt := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(pt.X), sy(pt.Y)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		if len(s.Points) <= 40 {
			for _, pt := range s.Points {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"/>`+"\n", sx(pt.X), sy(pt.Y), color)
			}
		}
		lx, ly := x0+panelW-marginR-130, y0+marginT+12+14*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, ly-4, lx+16, ly-4, color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", lx+20, ly, html.EscapeString(s.Name))
	}
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// formatTick prints a tick label without needless decimals.
func formatTick(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
