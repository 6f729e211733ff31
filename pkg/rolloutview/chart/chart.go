// Package chart draws a rollout's timeline (package timeline) as a chart of pod counts
// over time: SVG for browsers, PNG for places that only show images (chat, issue
// trackers, terminals with image support).
//
// Both formats come from one scene, a list of lines, polylines and labels in pixel
// coordinates, so they cannot drift apart: composing decides where everything goes,
// the two writers (svg.go, png.go) only decide how to put it on paper. Everything is a pure function of
// the timeline and the options, so the same input gives the same bytes (golden tests
// rely on that).
package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
	"time"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

// Options shape a chart.
type Options struct {
	// Title is drawn at the top, e.g. "deployment/web → revision 2".
	Title string
	// Width and Height are the size in pixels; 0 means 800×400.
	Width, Height int
	// Marks are moments to mark with a dashed vertical line and a short label: a
	// staged rollout's step boundaries ("1/5"), its analyses' verdicts ("analysis
	// passed"). Marks before the start or past the end
	// of the time axis are left out.
	Marks []Mark
}

// Mark is a labelled moment of the rollout.
type Mark struct {
	// At is since the rollout start, as a sample's At.
	At    time.Duration
	Label string
}

// SVG draws t as a standalone SVG document.
func SVG(t timeline.Timeline, o Options) []byte {
	return writeSVG(compose(t, o), o.Title)
}

// PNG draws t as a PNG image.
func PNG(t timeline.Timeline, o Options) ([]byte, error) {
	img := rasterize(compose(t, o))
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encoding chart as PNG: %w", err)
	}
	return buf.Bytes(), nil
}

const (
	defaultWidth, defaultHeight = 800, 400
	// Below this the legend runs into the y axis label and the plot has no room for its
	// ticks, so smaller sizes are raised to it rather than drawn garbled.
	minWidth, minHeight = 360, 200

	// Margins around the plot area: the title and the legend sit above it (so the
	// legend never covers a line), tick labels left of and below it.
	marginLeft, marginRight, marginTop, marginBottom = 56, 24, 64, 50

	titleBaseline  = 24
	legendBaseline = 44

	// maxIntervals bounds the ticks on an axis to maxIntervals+1. With the 1-2-5 style
	// steps below (never more than 2.5 apart) it also means at least 3 intervals, so
	// every axis gets 4 to 7 ticks.
	maxIntervals = 6

	// zeroSpan is the axis of a record whose samples all fall at one moment (one
	// sample): any span would do, and a second reads as "at once".
	zeroSpan = time.Second

	// charWidth estimates the advance of a 12px sans-serif character; it is exactly the
	// advance of basicfont's 7×13 face, so the legend fits in both formats.
	charWidth = 7

	// minBand is the narrowest a budget wait is drawn, in pixels.
	minBand = 2

	textSize, titleSize, noteSize = 12, 16, 14
	// titleCharWidth estimates the advance of a bold 16px sans-serif character, on the
	// wide side (0.6 em); basicfont's 7 px is narrower, so a title that fits the SVG
	// fits the PNG. titleMargin is kept clear at either end.
	titleCharWidth, titleMargin = 10, 20
	seriesWidth, swatchWidth    = 2, 3
	axisWidth                   = 1
)

// rgb is an opaque color.
type rgb struct{ r, g, b uint8 }

func (c rgb) hex() string             { return fmt.Sprintf("#%02x%02x%02x", c.r, c.g, c.b) }
func (c rgb) rgba() color.RGBA        { return color.RGBA{c.r, c.g, c.b, 0xff} }
func (c rgb) uniform() *image.Uniform { return image.NewUniform(c.rgba()) }

var (
	background = rgb{0xff, 0xff, 0xff}
	textInk    = rgb{0x22, 0x22, 0x22}
	axisInk    = rgb{0x44, 0x44, 0x44}
	gridInk    = rgb{0xe4, 0xe4, 0xe4}
	quietInk   = rgb{0x66, 0x66, 0x66}
	// A budget wait: a pale amber band, labelled in a dark amber that reads on it and
	// on white.
	waitFill = rgb{0xfc, 0xed, 0xcf}
	waitInk  = rgb{0x8a, 0x55, 0x00}
)

// series is one line of the chart.
type series struct {
	name  string
	color rgb
	value func(timeline.Counts) int32
}

// allSeries is drawn in this order, from top to bottom where lines coincide (see dodge),
// the same order as the legend.
var allSeries = []series{
	{"old", rgb{0x88, 0x88, 0x88}, func(c timeline.Counts) int32 { return c.Old }},
	{"new", rgb{0x1f, 0x77, 0xb4}, func(c timeline.Counts) int32 { return c.New }},
	{"available", rgb{0x2c, 0xa0, 0x2c}, func(c timeline.Counts) int32 { return c.Available }},
	{"unavailable", rgb{0xd6, 0x27, 0x28}, func(c timeline.Counts) int32 { return c.Unavailable }},
}

// The scene: what both writers draw, in pixel coordinates with y growing downwards.

type point struct{ x, y float64 }

type line struct {
	from, to point
	color    rgb
	width    float64
	dashed   bool
}

// rect is a filled rectangle, corners from (top left) and to (bottom right).
type rect struct {
	from, to point
	color    rgb
}

type polyline struct {
	points []point
	color  rgb
	width  float64
}

type anchor int

const (
	anchorStart anchor = iota
	anchorMiddle
	anchorEnd
)

// label is text whose baseline starts at, is centered on, or ends at `at`.
type label struct {
	at     point
	text   string
	color  rgb
	size   float64
	anchor anchor
	bold   bool
	// halo outlines the glyphs in the background color, so that a label over the
	// series' lines stays readable.
	halo bool
}

type scene struct {
	width, height int
	shapes        []any // rect, line, polyline or label, in drawing order
}

func (s *scene) add(shape any) { s.shapes = append(s.shapes, shape) }

// frame is the plot area and the scales that map the timeline into it.
type frame struct {
	left, top, right, bottom float64
	span, timeStep           time.Duration // x axis: 0 to span
	maxPods, podStep         int64         // y axis: 0 to maxPods
}

// x is the horizontal position of d since the rollout start.
func (f frame) x(d time.Duration) float64 {
	return f.left + float64(max(d, 0))/float64(f.span)*(f.right-f.left)
}

// y is the vertical position of a pod count.
func (f frame) y(pods int64) float64 {
	return f.bottom - float64(pods)/float64(f.maxPods)*(f.bottom-f.top)
}

// compose lays out the whole chart.
func compose(t timeline.Timeline, o Options) scene {
	s := scene{width: orDefault(o.Width, defaultWidth, minWidth), height: orDefault(o.Height, defaultHeight, minHeight)}
	f := layout(t, s.width, s.height)
	// Back to front: budget waits' bands under everything, then the grid, series over
	// the desired line.
	addWaits(&s, f, t.Waits)
	addGrid(&s, f)
	addAxes(&s, f)
	addDesired(&s, f, t.Desired)
	markLabels := addMarks(&s, f, markList(t, o.Marks), t.Desired)
	for i, sr := range allSeries {
		if pts := steps(f, t.Samples, sr.value, dodge(i)); len(pts) > 0 {
			s.add(polyline{points: pts, color: sr.color, width: seriesWidth})
		}
	}
	for _, l := range markLabels {
		s.add(l)
	}
	if len(t.Samples) == 0 {
		s.add(label{at: point{(f.left + f.right) / 2, (f.top + f.bottom) / 2}, text: "no samples recorded", color: quietInk, size: noteSize, anchor: anchorMiddle})
	}
	addLegend(&s, f)
	if o.Title != "" {
		s.add(label{at: point{float64(s.width) / 2, titleBaseline}, text: fitTitle(o.Title, s.width), color: textInk, size: titleSize, anchor: anchorMiddle, bold: true})
	}
	return s
}

// fitTitle is title as drawn on a chart width pixels wide: whole when it fits between
// the margins, else cut with "…" (the SVG's <title> keeps it whole). A change-cause can
// be long (kubectl's --record puts the whole command there): at 800 px, 76 characters
// fit (800 − 2 × 20 margin, 10 px a bold 16px character).
func fitTitle(title string, width int) string {
	r := []rune(title)
	fit := max((width-2*titleMargin)/titleCharWidth, 1)
	if len(r) <= fit {
		return title
	}
	return string(r[:fit-1]) + "…"
}

// orDefault is a size from Options: def when unset, at least least otherwise.
func orDefault(v, def, least int) int {
	if v <= 0 {
		return def
	}
	return max(v, least)
}

// layout sizes both axes to the data: time up to the last sample (or the rollback or
// a budget wait's end, should one come later), pods up to the largest count or Desired,
// each rounded up to a whole number of nice steps. A rollout of 1.2 s gets an axis of
// 1.2 s in steps of 0.2 s, not a fixed minimum that would squeeze it into a corner.
func layout(t timeline.Timeline, width, height int) frame {
	f := frame{left: marginLeft, top: marginTop, right: float64(width - marginRight), bottom: float64(height - marginBottom)}

	var last time.Duration
	if t.Rollback != nil {
		last = max(last, t.Rollback.At)
	}
	for _, w := range t.Waits {
		last = max(last, w.To)
	}
	peak := int64(t.Desired)
	for _, s := range t.Samples {
		last = max(last, s.At)
		for _, sr := range allSeries {
			peak = max(peak, int64(sr.value(s.Counts)))
		}
	}

	span := last
	if span <= 0 {
		span = zeroSpan
	}
	f.timeStep = timeStep(span)
	f.span = time.Duration(ceilDiv(int64(span), int64(f.timeStep))) * f.timeStep

	// Headroom keeps the top line (usually Desired) off the plot's edge and leaves room
	// for the "desired N" label above it.
	top := max(peak+max(1, peak/10), 4)
	f.podStep = countStep(top)
	f.maxPods = ceilDiv(top, f.podStep) * f.podStep
	return f
}

// timeSteps are the steps a clock reader expects; beyond a day, countStep picks days.
var timeSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// timeStep is the smallest nice step that covers span in at most maxIntervals.
func timeStep(span time.Duration) time.Duration {
	for _, s := range timeSteps {
		if ceilDiv(int64(span), int64(s)) <= maxIntervals {
			return s
		}
	}
	const day = 24 * time.Hour
	return day * time.Duration(countStep(ceilDiv(int64(span), int64(day))))
}

// countStep is the smallest of 1, 2, 5, 10, 20, 50, … that covers n in at most
// maxIntervals.
func countStep(n int64) int64 {
	for decade := int64(1); ; decade *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if ceilDiv(n, m*decade) <= maxIntervals {
				return m * decade
			}
		}
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// tickLabel names a time tick. Axes shorter than a second count milliseconds ("0ms
// 200ms … 800ms"); axes with steps below a second count seconds with decimals ("0s
// 0.2s … 1.2s"); axes up to two minutes count seconds ("0s 15s … 90s"), which read
// faster than mixed units there; longer ones use "1m30s"-style units and drop the
// unit at zero ("0 1m 2m") because the other ticks carry it.
func (f frame) tickLabel(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case f.span < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case f.timeStep < time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	case f.span <= 2*time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d == 0:
		return "0"
	case f.timeStep >= day:
		return fmt.Sprintf("%dd", d/day)
	}
	var b strings.Builder
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.suffix)
			d -= n * u.unit
		}
	}
	return b.String()
}

// addGrid draws gridlines and tick labels for both axes; none at zero, where the axes
// themselves are.
func addGrid(s *scene, f frame) {
	for d := time.Duration(0); d <= f.span; d += f.timeStep {
		x := f.x(d)
		if d > 0 {
			s.add(line{from: point{x, f.top}, to: point{x, f.bottom}, color: gridInk, width: 1})
		}
		s.add(line{from: point{x, f.bottom}, to: point{x, f.bottom + 4}, color: axisInk, width: 1})
		s.add(label{at: point{x, f.bottom + 18}, text: f.tickLabel(d), color: textInk, size: textSize, anchor: anchorMiddle})
	}
	for n := int64(0); n <= f.maxPods; n += f.podStep {
		y := f.y(n)
		if n > 0 {
			s.add(line{from: point{f.left, y}, to: point{f.right, y}, color: gridInk, width: 1})
		}
		s.add(line{from: point{f.left - 4, y}, to: point{f.left, y}, color: axisInk, width: 1})
		// +4 moves the digits' middle, not their baseline, onto the gridline.
		s.add(label{at: point{f.left - 8, y + 4}, text: fmt.Sprint(n), color: textInk, size: textSize, anchor: anchorEnd})
	}
}

// addAxes draws the axis lines over the grid, and their names.
func addAxes(s *scene, f frame) {
	s.add(line{from: point{f.left, f.top}, to: point{f.left, f.bottom}, color: axisInk, width: 1})
	s.add(line{from: point{f.left, f.bottom}, to: point{f.right, f.bottom}, color: axisInk, width: 1})
	s.add(label{at: point{(f.left + f.right) / 2, f.bottom + 40}, text: "time since rollout start", color: textInk, size: textSize, anchor: anchorMiddle})
	// Horizontal above the axis rather than rotated along it: basicfont cannot rotate,
	// and both formats should look alike.
	s.add(label{at: point{f.left - 8, f.top - 12}, text: "pods", color: textInk, size: textSize, anchor: anchorEnd})
}

// addDesired draws the target the rollout converges on; nothing for zero replicas,
// where the line would hide under the x axis.
func addDesired(s *scene, f frame, desired int32) {
	if desired <= 0 {
		return
	}
	y := f.y(int64(desired))
	s.add(line{from: point{f.left, y}, to: point{f.right, y}, color: axisInk, width: 1, dashed: true})
	// At the right end, where a finished rollout's lines meet it; above it, where the
	// headroom keeps the lines away.
	s.add(label{at: point{f.right - 4, y - 6}, text: fmt.Sprintf("desired %d", desired), color: axisInk, size: textSize, anchor: anchorEnd})
}

// dodge is how far series i is moved right and down, in pixels. The series often
// coincide (old and available at the start of a rollout, new and available at its end,
// old and unavailable at zero), and drawn exactly on top of each other all but the last
// would vanish; moved apart by a line width they run side by side as stripes. A pixel
// or three is a small fraction of a pod or a second on any useful chart size.
func dodge(i int) float64 {
	return (float64(i) - float64(len(allSeries)-1)/2) * seriesWidth
}

// lineY is where a series dodged by offset draws the count v: offset below v's place,
// but never below where it draws zero. At zero the series lie just above the x axis,
// a pixel apart (half their dodge), so that each shows a stripe of itself and the
// lowest one's stroke ends on the axis instead of crossing it. With 12 pods on 286 px
// a pod is 24 px and only zero is held: the four series at 0 lie 4.5, 3.5, 2.5 and
// 1.5 px above the axis (a fifth of a pod at most), where they used to run up to 3 px
// under it and read as a negative count. With 1,200 pods a pod is a quarter pixel,
// and a line at 1 or 2 pods is held at zero's place too.
func lineY(f frame, v int32, offset float64) float64 {
	zero := f.bottom - axisWidth/2.0 - seriesWidth/2.0 - (dodge(len(allSeries)-1)-offset)/2
	return min(f.y(int64(v))+offset, zero)
}

// steps is a series as a step line: each value holds until the next sample changes it,
// and the last one holds to the end of the axis since it is the workload's current state.
// offset moves the line down and its corners right (see dodge); the ends stay where they
// are, so all series start at their first sample and end at the plot's edge together.
func steps(f frame, samples []timeline.Sample, value func(timeline.Counts) int32, offset float64) []point {
	y := func(v int32) float64 { return lineY(f, v, offset) }
	var pts []point
	var prev int32
	for i, s := range samples {
		v := value(s.Counts)
		switch {
		case i == 0:
			pts = append(pts, point{f.x(s.At), y(v)})
		case v != prev:
			x := min(max(f.x(s.At)+offset, f.left), f.right)
			pts = append(pts, point{x, y(prev)}, point{x, y(v)})
		default:
			continue // no corner, the horizontal run goes on
		}
		prev = v
	}
	if len(pts) > 0 {
		pts = append(pts, point{f.right, y(prev)})
	}
	return pts
}

// addWaits shades the stretches a PodDisruptionBudget held the rollout, over the plot's
// full height: a closed wait from its start to its end, an open one to the plot's right
// edge (it goes on now, as the series' last values hold to the edge), each at least
// minBand wide so that a wait seen at one stamp only still shows. Their labels are
// placed with the marks' (markList).
func addWaits(s *scene, f frame, waits []timeline.Wait) {
	for _, w := range waits {
		if w.From > f.span {
			continue
		}
		from, to := f.x(w.From), f.x(w.To)
		if w.Open {
			to = f.right
		}
		to = min(max(to, from+minBand), f.right)
		s.add(rect{from: point{from, f.top}, to: point{to, f.bottom}, color: waitFill})
	}
}

// addLegend lines the series' names up right-aligned above the plot.
func addLegend(s *scene, f frame) {
	const swatch, gap, spacing = 16, 6, 14
	width := -spacing
	for _, sr := range allSeries {
		width += swatch + gap + len(sr.name)*charWidth + spacing
	}
	x := f.right - float64(width)
	for _, sr := range allSeries {
		// -4 centers the swatch on the lowercase letters beside it.
		s.add(line{from: point{x, legendBaseline - 4}, to: point{x + swatch, legendBaseline - 4}, color: sr.color, width: swatchWidth})
		s.add(label{at: point{x + swatch + gap, legendBaseline}, text: sr.name, color: textInk, size: textSize})
		x += float64(swatch + gap + len(sr.name)*charWidth + spacing)
	}
}

// SVG writer.

// PNG writer.
