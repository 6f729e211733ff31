package chart

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// rollingUpdate is a 10-replica Deployment rolled two pods at a time (maxSurge 2,
// maxUnavailable 2): each step adds two new pods, drops two old ones, and availability
// dips to 8 until the new pods are ready.
func rollingUpdate() timeline.Timeline {
	type row struct {
		ms                               int
		old, new, available, unavailable int32
	}
	rows := []row{
		{0, 10, 0, 10, 0},
		{1200, 10, 2, 10, 0},
		{3500, 8, 2, 8, 2},
		{6000, 8, 2, 10, 0},
		{8400, 6, 4, 8, 2},
		{11000, 6, 4, 10, 0},
		{13700, 4, 6, 8, 2},
		{16200, 4, 6, 10, 0},
		{19000, 2, 8, 8, 2},
		{21500, 2, 8, 10, 0},
		{24300, 0, 10, 8, 2},
		{27800, 0, 10, 10, 0},
	}
	t := timeline.Timeline{Revision: "web-7d4b9c", Start: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Desired: 10}
	for _, r := range rows {
		t.Samples = append(t.Samples, timeline.Sample{
			At:     time.Duration(r.ms) * time.Millisecond,
			Counts: timeline.Counts{Old: r.old, New: r.new, Available: r.available, Unavailable: r.unavailable},
		})
	}
	return t
}

func oneSample() timeline.Timeline {
	return timeline.Timeline{Revision: "api-5f6d", Desired: 3, Samples: []timeline.Sample{
		{At: 0, Counts: timeline.Counts{Old: 3, New: 0, Available: 3, Unavailable: 0}},
	}}
}

// rolledBack is a 4-replica rollout to revision 5 whose new pods crash-loop: at 12 s
// kroll rolls back, and revision 6 (revision 4's template) replaces them.
func rolledBack() timeline.Timeline {
	c := func(ms int, old, new, avail, unavail int32) timeline.Sample {
		return timeline.Sample{At: time.Duration(ms) * time.Millisecond, Counts: timeline.Counts{Old: old, New: new, Available: avail, Unavailable: unavail}}
	}
	return timeline.Timeline{Revision: "6", Start: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Desired: 4,
		Samples:  []timeline.Sample{c(0, 4, 0, 4, 0), c(800, 4, 1, 4, 0), c(2000, 3, 1, 3, 1), c(12100, 1, 3, 3, 1), c(14000, 1, 4, 4, 0), c(15000, 0, 4, 4, 0)},
		Rollback: &timeline.Rollback{At: 12 * time.Second, From: "5", Failed: "5"}}
}

// short is a 3-replica staged rollout over in 1.2 s, its first three steps 20 ms apart.
func short() timeline.Timeline {
	c := func(ms int, old, new, avail int32) timeline.Sample {
		return timeline.Sample{At: time.Duration(ms) * time.Millisecond, Counts: timeline.Counts{Old: old, New: new, Available: avail, Unavailable: 3 - avail}}
	}
	return timeline.Timeline{Revision: "2", Desired: 3, Samples: []timeline.Sample{
		c(0, 3, 0, 3), c(300, 2, 1, 2), c(340, 1, 2, 2), c(700, 1, 2, 3), c(1100, 0, 3, 2), c(1200, 0, 3, 3)}}
}

// heldByBudget is rollingUpdate held by web-pdb twice, and again at its end, where the
// wait is still on: three bands, one label.
func heldByBudget() timeline.Timeline {
	t := rollingUpdate()
	t.Waits = []timeline.Wait{
		{From: 3500 * time.Millisecond, To: 6 * time.Second, PDB: "web-pdb"},
		{From: 13700 * time.Millisecond, To: 16200 * time.Millisecond, PDB: "web-pdb"},
		{From: 24300 * time.Millisecond, To: 24300 * time.Millisecond, PDB: "web-pdb", Open: true},
	}
	return t
}

type chartCase struct {
	name string
	t    timeline.Timeline
	o    Options
}

func cases() []chartCase {
	return []chartCase{
		{"rolling_update", rollingUpdate(), Options{Title: "deployment/web → revision 2"}},
		{"empty", timeline.Timeline{}, Options{Title: "deployment/idle → revision 1"}},
		{"one_sample", oneSample(), Options{Title: "statefulset/api → revision 5", Width: 640, Height: 320}},
		{"rolled_back", rolledBack(), Options{Title: "deployment/web → revision 6, rolled back from 5"}},
		{"short", short(), Options{Title: "deployment/tiny → revision 2", Marks: []Mark{
			{At: 300 * time.Millisecond, Label: "1/4"}, {At: 320 * time.Millisecond, Label: "2/4"}, {At: 340 * time.Millisecond, Label: "3/4"},
			{At: 1100 * time.Millisecond, Label: "partition 0"}}}},
		{"budget_waits", heldByBudget(), Options{Title: "deployment/web → revision 2 (configmap/app-config changed)", Marks: []Mark{
			{At: 2 * time.Second, Label: "1/3"}, {At: 6 * time.Second, Label: "2/3"}}}},
		{"steps_marked", rollingUpdate(), Options{Title: "deployment/web → revision 2", Marks: []Mark{
			{At: 2 * time.Second, Label: "1/3"}, {At: 6 * time.Second, Label: "2/3"}, {At: time.Hour, Label: "past the end: left out"}}}},
	}
}

func TestSVGGolden(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			got := SVG(c.t, c.o)
			path := filepath.Join("testdata", c.name+".svg")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("SVG differs from %s (run with -update if the change is intended)\ngot:\n%s", path, got)
			}
		})
	}
}

// TestSVGIsXML also checks escaping, with a title that is not valid XML as it stands.
func TestSVGIsXML(t *testing.T) {
	all := append(cases(), chartCase{"hostile title", rollingUpdate(), Options{Title: `a<b & "c" ]]> →`}})
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			var root xml.Name
			var title, texts []string
			var inTitle bool
			d := xml.NewDecoder(bytes.NewReader(SVG(c.t, c.o)))
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("SVG is not XML: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if root.Local == "" {
						root = tok.Name
					}
					inTitle = tok.Name.Local == "title" || (tok.Name.Local == "text" && hasAttr(tok, "font-weight", "bold"))
				case xml.CharData:
					if inTitle {
						title = append(title, string(tok))
					}
					texts = append(texts, string(tok))
				case xml.EndElement:
					inTitle = false
				}
			}
			if want := (xml.Name{Space: "http://www.w3.org/2000/svg", Local: "svg"}); root != want {
				t.Errorf("root element = %v, want %v", root, want)
			}
			// Once as <title>, once as the drawn heading.
			if len(title) != 2 || title[0] != c.o.Title || title[1] != c.o.Title {
				t.Errorf("title text = %q, want %q twice", title, c.o.Title)
			}
			all := strings.Join(texts, "|")
			for _, want := range []string{"time since rollout start", "pods", "old", "new", "available", "unavailable"} {
				if !strings.Contains(all, want) {
					t.Errorf("SVG has no text %q", want)
				}
			}
			if empty := len(c.t.Samples) == 0; strings.Contains(all, "no samples recorded") != empty {
				t.Errorf("\"no samples recorded\" shown = %v, want %v", !empty, empty)
			}
		})
	}
}

func hasAttr(e xml.StartElement, name, value string) bool {
	for _, a := range e.Attr {
		if a.Name.Local == name && a.Value == value {
			return true
		}
	}
	return false
}

func TestPNG(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			img := decodePNG(t, c.t, c.o)
			w, h := orDefault(c.o.Width, defaultWidth, minWidth), orDefault(c.o.Height, defaultHeight, minHeight)
			if got := img.Bounds().Size(); got != (image.Point{w, h}) {
				t.Errorf("size = %v, want %dx%d", got, w, h)
			}
			// Axes, grid and labels alone are thousands of pixels.
			if n := inked(img); n < 2000 {
				t.Errorf("only %d non-white pixels: the chart looks blank", n)
			}
		})
	}
}

// TestPNGNewLine finds the "new" series where it runs apart from the others and
// expects blue there.
func TestPNGNewLine(t *testing.T) {
	tl, o := rollingUpdate(), Options{}
	img := decodePNG(t, tl, o)

	// Between samples 1 and 2 new is 2 and no other series is.
	s := tl.Samples[1]
	for _, other := range []int32{s.Old, s.Available, s.Unavailable} {
		if other == s.New {
			t.Fatalf("test data: another series equals new (%d) at sample 1", s.New)
		}
	}
	f := layout(tl, defaultWidth, defaultHeight)
	const newSeries = 1
	off := dodge(newSeries)
	p := pixel(point{f.x((tl.Samples[1].At+tl.Samples[2].At)/2) + off, f.y(int64(s.New)) + off})

	r, g, b, _ := img.At(p.X, p.Y).RGBA()
	r, g, b = r>>8, g>>8, b>>8
	if !(b > 150 && b > r+60 && b > g+30) {
		t.Errorf("pixel %v = rgb(%d,%d,%d), want the blue of the new series %s", p, r, g, b, allSeries[newSeries].color.hex())
	}
}

func decodePNG(t *testing.T, tl timeline.Timeline, o Options) image.Image {
	t.Helper()
	data, err := PNG(tl, o)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	return img
}

func inked(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r&g&bl != 0xffff {
				n++
			}
		}
	}
	return n
}

func TestDeterministic(t *testing.T) {
	tl, o := rollingUpdate(), Options{Title: "deployment/web → revision 2"}
	if !bytes.Equal(SVG(tl, o), SVG(tl, o)) {
		t.Error("SVG differs between two calls")
	}
	a, errA := PNG(tl, o)
	b, errB := PNG(tl, o)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("PNG differs between two calls (errors %v, %v)", errA, errB)
	}
}

func TestTimeAxis(t *testing.T) {
	tests := []struct {
		last time.Duration
		want string // tick labels
	}{
		{0, "0s 0.2s 0.4s 0.6s 0.8s 1s"}, // one sample: a second, "at once"
		{300 * time.Millisecond, "0ms 50ms 100ms 150ms 200ms 250ms 300ms"},
		{1200 * time.Millisecond, "0s 0.2s 0.4s 0.6s 0.8s 1s 1.2s"},
		{3500 * time.Millisecond, "0s 1s 2s 3s 4s"},
		{27800 * time.Millisecond, "0s 5s 10s 15s 20s 25s 30s"},
		{45 * time.Second, "0s 10s 20s 30s 40s 50s"},
		{90 * time.Second, "0s 15s 30s 45s 60s 75s 90s"},
		{2*time.Minute + time.Second, "0 30s 1m 1m30s 2m 2m30s"},
		{3 * time.Minute, "0 30s 1m 1m30s 2m 2m30s 3m"},
		{11 * time.Minute, "0 2m 4m 6m 8m 10m 12m"},
		{100 * time.Minute, "0 20m 40m 1h 1h20m 1h40m"},
		{5 * time.Hour, "0 1h 2h 3h 4h 5h"},
		{60 * time.Hour, "0 12h 24h 36h 48h 60h"},
		{10 * 24 * time.Hour, "0 2d 4d 6d 8d 10d"},
	}
	for _, tt := range tests {
		t.Run(tt.last.String(), func(t *testing.T) {
			tl := timeline.Timeline{Samples: []timeline.Sample{{At: 0}, {At: tt.last}}}
			f := layout(tl, defaultWidth, defaultHeight)
			var got []string
			for d := time.Duration(0); d <= f.span; d += f.timeStep {
				got = append(got, f.tickLabel(d))
			}
			if n := len(got); n < 4 || n > 8 {
				t.Errorf("%d ticks, want 4 to 8", n)
			}
			if f.span < tt.last {
				t.Errorf("axis ends at %v, before the last sample at %v", f.span, tt.last)
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("ticks = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestPodAxis(t *testing.T) {
	tests := []struct {
		desired, peak int32
		step, top     int64
	}{
		{0, 0, 1, 4},
		{3, 3, 1, 4},
		{10, 10, 2, 12},
		{10, 12, 5, 15}, // surge above desired
		{7, 7, 2, 8},
		{100, 100, 20, 120},
		{1000, 1000, 200, 1200},
	}
	for _, tt := range tests {
		tl := timeline.Timeline{Desired: tt.desired, Samples: []timeline.Sample{{Counts: timeline.Counts{New: tt.peak}}}}
		f := layout(tl, defaultWidth, defaultHeight)
		if f.podStep != tt.step || f.maxPods != tt.top {
			t.Errorf("desired %d, peak %d: axis 0..%d step %d, want 0..%d step %d", tt.desired, tt.peak, f.maxPods, f.podStep, tt.top, tt.step)
		}
		if f.maxPods <= int64(max(tt.desired, tt.peak)) {
			t.Errorf("desired %d, peak %d: no headroom above %d", tt.desired, tt.peak, f.maxPods)
		}
	}
}

func TestSteps(t *testing.T) {
	f := frame{left: 0, top: 0, right: 100, bottom: 100, span: 10 * time.Second, timeStep: 2 * time.Second, maxPods: 10, podStep: 2}
	samples := []timeline.Sample{
		{At: 0, Counts: timeline.Counts{New: 0}},
		{At: 2 * time.Second, Counts: timeline.Counts{New: 5}},
		{At: 4 * time.Second, Counts: timeline.Counts{New: 5}}, // unchanged: no corner
		{At: 6 * time.Second, Counts: timeline.Counts{New: 10}},
	}
	tests := []struct {
		name   string
		offset float64
		want   []point
	}{
		// Zero is raised above the axis (see lineY): 100 − 0.5 − 1 − (3 − 0)/2.
		{"in place", 0, []point{{0, 97}, {20, 97}, {20, 50}, {60, 50}, {60, 0}, {100, 0}}},
		// Down by the offset everywhere but at zero, right by it only at the corners.
		{"dodged right", 3, []point{{0, 98.5}, {23, 98.5}, {23, 53}, {63, 53}, {63, 3}, {100, 3}}},
		{"dodged left", -3, []point{{0, 95.5}, {17, 95.5}, {17, 47}, {57, 47}, {57, -3}, {100, -3}}},
	}
	for _, tt := range tests {
		got := steps(f, samples, func(c timeline.Counts) int32 { return c.New }, tt.offset)
		if !samePoints(got, tt.want) {
			t.Errorf("%s: steps = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := steps(f, nil, func(c timeline.Counts) int32 { return c.New }, 0); got != nil {
		t.Errorf("no samples: steps = %v, want none", got)
	}
}

func samePoints(a, b []point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i].x-b[i].x) > 1e-9 || math.Abs(a[i].y-b[i].y) > 1e-9 {
			return false
		}
	}
	return true
}

func TestToASCII(t *testing.T) {
	tests := []struct{ in, want string }{
		{"deployment/web → revision 2", "deployment/web -> revision 2"},
		{"plain ascii", "plain ascii"},
		{"a\tb", "a b"},
		{"café", "caf?"},
		{"“quoted” – done…", `"quoted" - done...`},
	}
	for _, tt := range tests {
		if got := toASCII(tt.in); got != tt.want {
			t.Errorf("toASCII(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSize(t *testing.T) {
	tests := []struct {
		o    Options
		w, h int
	}{
		{Options{}, 800, 400},
		{Options{Width: 1200}, 1200, 400},
		{Options{Width: 100, Height: 50}, minWidth, minHeight},
		{Options{Width: -1, Height: 600}, 800, 600},
	}
	for _, tt := range tests {
		s := compose(rollingUpdate(), tt.o)
		if s.width != tt.w || s.height != tt.h {
			t.Errorf("%+v: %dx%d, want %dx%d", tt.o, s.width, s.height, tt.w, tt.h)
		}
	}
}

func TestLineY(t *testing.T) {
	// 286 px for 12 pods: 23.8 px a pod; 1,200 pods: 0.24 px a pod.
	small := frame{top: 64, bottom: 350, maxPods: 12}
	large := frame{top: 64, bottom: 350, maxPods: 1200}
	tests := []struct {
		name   string
		f      frame
		v      int32
		offset float64
		want   float64
	}{
		{"0 pods, lowest series (unavailable): its stroke ends on the axis", small, 0, 3, 348.5},
		{"0 pods, highest series (old): the top stripe, 4.5 px up", small, 0, -3, 345.5},
		{"0 pods, undodged", small, 0, 0, 347},
		{"1 pod of 12 is well above zero: only dodged", small, 1, 3, 350 - 286.0/12 + 3},
		{"12 of 12 at the top: dodged above the plot's edge, as before", small, 12, -3, 61},
		{"1 pod of 1200 would run under the axis: held at zero's place", large, 1, 3, 348.5},
		{"30 pods of 1200: above zero's place, dodged", large, 30, 3, 350 - 7.15 + 3},
	}
	for _, tt := range tests {
		got := lineY(tt.f, tt.v, tt.offset)
		if math.Abs(got-tt.want) > 1e-3 {
			t.Errorf("%s: y = %.3f, want %.3f", tt.name, got, tt.want)
		}
		// Nothing is drawn below the axis: the stroke's lower edge is at most the
		// axis line's upper edge.
		if got+seriesWidth/2.0 > tt.f.bottom-axisWidth/2.0 {
			t.Errorf("%s: the stroke reaches %.2f, under the axis at %.2f", tt.name, got+seriesWidth/2.0, tt.f.bottom-axisWidth/2.0)
		}
	}
}

func TestPlaceLabels(t *testing.T) {
	tests := []struct {
		name  string
		xs, w []float64
		rows  int
		taken [][]span
		want  []placement
	}{
		{"far apart: all in row 0, right of their lines", []float64{100, 300}, []float64{21, 21}, 3, nil,
			[]placement{{0, false}, {0, false}}},
		{"steps 10 px apart: each in the next row", []float64{100, 110, 120}, []float64{21, 21, 21}, 3, nil,
			[]placement{{0, false}, {1, false}, {2, false}}},
		{"a fourth with three rows full: left out, never drawn over another", []float64{100, 110, 120, 125}, []float64{21, 21, 21, 21}, 3, nil,
			[]placement{{0, false}, {1, false}, {2, false}, {-1, false}}},
		{"near the right edge: left of its line", []float64{690}, []float64{21}, 2, nil,
			[]placement{{0, true}}},
		{"row 0 taken by the desired label there: row 1", []float64{600}, []float64{21}, 2, [][]span{{{600, 700}}},
			[]placement{{1, false}}},
		{"a row freed further right is used again", []float64{100, 105, 200}, []float64{70, 21, 21}, 2, nil,
			[]placement{{0, false}, {1, false}, {0, false}}},
	}
	for _, tt := range tests {
		got := placeLabels(tt.xs, tt.w, 700, tt.rows, tt.taken)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Across a dense set of marks, no two drawn labels overlap.
func TestMarkLabelsNeverOverlap(t *testing.T) {
	var marks []Mark
	for i := range 30 {
		marks = append(marks, Mark{At: time.Duration(i*37) * time.Millisecond, Label: fmt.Sprintf("%d/30", i+1)})
	}
	tl := short()
	tl.Rollback = &timeline.Rollback{At: 500 * time.Millisecond, From: "2", Failed: "2"}
	tl.Waits = []timeline.Wait{{From: 320 * time.Millisecond, To: 400 * time.Millisecond, PDB: "web-pdb"},
		{From: 400 * time.Millisecond, To: 450 * time.Millisecond, PDB: "zone-pdb"}, {From: 900 * time.Millisecond, To: 900 * time.Millisecond, PDB: "web-pdb", Open: true}}
	s := compose(tl, Options{Marks: marks})
	type box struct{ x0, x1, y float64 }
	var boxes []box
	for _, sh := range s.shapes {
		l, ok := sh.(label)
		if !ok || !l.halo {
			continue
		}
		w := labelWidth(l.text)
		x0 := l.at.x
		if l.anchor == anchorEnd {
			x0 -= w
		}
		for _, b := range boxes {
			if math.Abs(b.y-l.at.y) < rowHeight && x0 < b.x1 && b.x0 < x0+w {
				t.Fatalf("label %q at (%.1f, %.1f) overlaps one at %v", l.text, x0, l.at.y, b)
			}
		}
		boxes = append(boxes, box{x0, x0 + w, l.at.y})
	}
	svg := string(SVG(tl, Options{Marks: marks}))
	if len(boxes) < 4 || !strings.Contains(svg, "rolled back from 2") || !strings.Contains(svg, "waiting on PDB zone-pdb") {
		t.Errorf("%d mark labels drawn, want the rollback's, the waits' and several steps'", len(boxes))
	}
	if n := strings.Count(svg, "waiting on PDB web-pdb"); n != 1 {
		t.Errorf("web-pdb labelled %d times, want once for its two waits", n)
	}
}

// Each wait is a band from its start to its end, an open one to the plot's edge, under
// the grid; a wait of one moment is still minBand wide.
func TestWaitBands(t *testing.T) {
	tl := heldByBudget()
	tl.Waits = append(tl.Waits[:2:2], timeline.Wait{From: 20 * time.Second, To: 20 * time.Second, PDB: "web-pdb"}, tl.Waits[2])
	s := compose(tl, Options{})
	f := layout(tl, defaultWidth, defaultHeight)
	var got []rect
	firstLine := -1
	for i, sh := range s.shapes {
		switch sh := sh.(type) {
		case rect:
			if firstLine >= 0 {
				t.Errorf("band %v drawn over the grid", sh)
			}
			got = append(got, sh)
		case line:
			if firstLine < 0 {
				firstLine = i
			}
		}
	}
	want := []rect{
		{point{f.x(3500 * time.Millisecond), f.top}, point{f.x(6 * time.Second), f.bottom}, waitFill},
		{point{f.x(13700 * time.Millisecond), f.top}, point{f.x(16200 * time.Millisecond), f.bottom}, waitFill},
		{point{f.x(20 * time.Second), f.top}, point{f.x(20*time.Second) + minBand, f.bottom}, waitFill},
		{point{f.x(24300 * time.Millisecond), f.top}, point{f.right, f.bottom}, waitFill},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bands\n%v\nwant\n%v", got, want)
	}
	// The PNG shades the band: amber where no line runs (just under the top of the
	// plot, half way through the first wait, between gridlines).
	img := decodePNG(t, tl, Options{})
	p := pixel(point{f.x(4 * time.Second), f.top + 40})
	if r, g, b, _ := img.At(p.X, p.Y).RGBA(); uint8(r>>8) != waitFill.r || uint8(g>>8) != waitFill.g || uint8(b>>8) != waitFill.b {
		t.Errorf("pixel %v = rgb(%d,%d,%d), want the band's %s", p, r>>8, g>>8, b>>8, waitFill.hex())
	}
}

func TestFitTitle(t *testing.T) {
	long := "deployment/web → revision 7 (kubectl set image deployment/web web=registry.example.com/team/web:2026-12-07 --record=true)"
	tests := []struct {
		name  string
		title string
		width int
		want  string
	}{
		{"a change-cause that fits is whole", "deployment/web → revision 2 (configmap/app-config changed)", 800, "deployment/web → revision 2 (configmap/app-config changed)"},
		{"a long one is cut to 76 characters at 800 px", long, 800, string([]rune(long)[:75]) + "…"},
		{"narrower, shorter: 32 at 360 px", long, 360, string([]rune(long)[:31]) + "…"},
	}
	for _, tt := range tests {
		got := fitTitle(tt.title, tt.width)
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if n := len([]rune(got)); n*titleCharWidth > tt.width-2*titleMargin {
			t.Errorf("%s: %d characters do not fit %d px", tt.name, n, tt.width)
		}
	}
}
