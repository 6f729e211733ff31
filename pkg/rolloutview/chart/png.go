package chart

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"strings"
	"unicode"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The dash pattern, in pixels, shared with the SVG's stroke-dasharray.
const dashOn, dashPeriod = 6, 10

func rasterize(s scene) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.width, s.height))
	draw.Draw(img, img.Bounds(), background.uniform(), image.Point{}, draw.Src)
	for _, shape := range s.shapes {
		switch sh := shape.(type) {
		case rect:
			draw.Draw(img, image.Rectangle{Min: pixel(sh.from), Max: pixel(sh.to)}, sh.color.uniform(), image.Point{}, draw.Src)
		case line:
			stroke(img, pixel(sh.from), pixel(sh.to), sh.color.rgba(), brush(sh.width), sh.dashed)
		case polyline:
			for i := 1; i < len(sh.points); i++ {
				stroke(img, pixel(sh.points[i-1]), pixel(sh.points[i]), sh.color.rgba(), brush(sh.width), false)
			}
		case label:
			text(img, sh)
		}
	}
	return img
}

func pixel(p point) image.Point {
	return image.Point{int(math.Round(p.x)), int(math.Round(p.y))}
}

func brush(width float64) int { return max(1, int(math.Round(width))) }

// stroke walks from a to b with Bresenham's algorithm and stamps a width×width square at
// each step. Nearly all lines here are horizontal or vertical, where a square brush gives
// exactly the width an SVG stroke has.
func stroke(img *image.RGBA, a, b image.Point, c color.RGBA, width int, dashed bool) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	err := dx + dy
	p := a
	for i := 0; ; i++ {
		if !dashed || i%dashPeriod < dashOn {
			stamp(img, p, c, width)
		}
		if p == b {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			p.X += sx
		}
		if e2 <= dx {
			err += dx
			p.Y += sy
		}
	}
}

// stamp centers the square like an SVG stroke straddles its path: a 2px line at y covers
// the rows y-1 and y.
func stamp(img *image.RGBA, p image.Point, c color.RGBA, width int) {
	lo := -width / 2
	for y := lo; y < lo+width; y++ {
		for x := lo; x < lo+width; x++ {
			img.SetRGBA(p.X+x, p.Y+y, c) // ignores points outside the image
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// text draws a label in basicfont's single 7×13 size; bold is the text drawn twice, one
// pixel apart.
func text(img *image.RGBA, l label) {
	face := basicfont.Face7x13
	s := toASCII(l.text)
	d := font.Drawer{Dst: img, Src: l.color.uniform(), Face: face}
	x, y := pixel(l.at).X, pixel(l.at).Y
	switch w := d.MeasureString(s).Round(); l.anchor {
	case anchorMiddle:
		x -= w / 2
	case anchorEnd:
		x -= w
	}
	if l.halo {
		halo := font.Drawer{Dst: img, Src: background.uniform(), Face: face}
		for _, o := range []image.Point{{-1, 0}, {1, 0}, {0, -1}, {0, 1}, {-1, -1}, {1, 1}, {-1, 1}, {1, -1}} {
			halo.Dot = fixed.P(x+o.X, y+o.Y)
			halo.DrawString(s)
		}
	}
	d.Dot = fixed.P(x, y)
	d.DrawString(s)
	if l.bold {
		d.Dot = fixed.P(x+1, y)
		d.DrawString(s)
	}
}

// asciiFallbacks spell the non-ASCII characters likely in a title (the CLI puts an arrow
// between workload and revision) the way one would type them.
var asciiFallbacks = map[rune]string{
	'→': "->", '←': "<-", '↔': "<->", '⇒': "=>",
	'–': "-", '—': "-", '…': "...", '•': "*", '·': "*", '×': "x",
	'≤': "<=", '≥': ">=", '≠': "!=",
	'‘': "'", '’': "'", '“': `"`, '”': `"`,
}

// toASCII replaces what basicfont cannot draw (it has printable ASCII only, and would
// draw a box for the rest).
func toASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case asciiFallbacks[r] != "":
			b.WriteString(asciiFallbacks[r])
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}
