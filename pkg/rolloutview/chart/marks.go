package chart

import (
	"fmt"
	"time"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

// The labelled vertical lines over the plot: a staged rollout's step boundaries
// (Options.Marks) and kroll's automatic rollback (timeline.Rollback); and the labels of
// the budget waits' bands (timeline.Waits, drawn by addWaits), placed by the same rules.

const (
	// markGap is between a mark's line and its label; labelGap is the least room
	// between two labels in one row.
	markGap, labelGap = 3, 6
	// rowHeight is the distance between two rows of labels (12px text, 2px apart).
	rowHeight = textSize + 2
)

var rollbackInk = rgb{0xb0, 0x12, 0x12}

// vmark is a mark as drawn: where, what, in which ink.
type vmark struct {
	at    time.Duration
	text  string
	color rgb
	width float64
	// band: the label of a budget wait starting at at, whose band addWaits draws; no
	// line.
	band bool
}

// markList is what addMarks draws: the rollback first (its label gets the first
// choice of place), then the budget waits' labels, then the marks in the order given,
// without those before the start. A budget's label is on its first wait only: a
// rollout held at every step waits on one budget many times, and one label a budget
// says what the bands mean without filling the label rows.
func markList(t timeline.Timeline, marks []Mark) []vmark {
	var out []vmark
	if r := t.Rollback; r != nil {
		out = append(out, vmark{at: r.At, text: "rolled back from " + r.Failed, color: rollbackInk, width: 2})
	}
	labelled := map[string]bool{}
	for _, w := range t.Waits {
		if !labelled[w.PDB] {
			labelled[w.PDB] = true
			out = append(out, vmark{at: w.From, text: "waiting on PDB " + w.PDB, color: waitInk, band: true})
		}
	}
	for _, m := range marks {
		if m.At >= 0 {
			out = append(out, vmark{at: m.At, text: m.Label, color: quietInk, width: 1})
		}
	}
	return out
}

// span is a horizontal stretch of pixels a label covers, or that is taken.
type span struct{ from, to float64 }

func (s span) overlaps(o span) bool { return s.from < o.to && o.from < s.to }

// placement is where placeLabels put a label.
type placement struct {
	// row counts down from the top of the plot; -1 when no row had room for the label
	// (its line is drawn all the same).
	row int
	// leftOfLine: the label ends at its line instead of starting there, since starting
	// there it would pass the plot's right edge.
	leftOfLine bool
}

// placeLabels places labels of widths w at lines xs (pixels), in the order given:
// each just right of its line (just left of it where that would pass right), in the
// first of rows rows where it keeps labelGap from every label placed before it and
// from the spans taken[row]; none when no row has room. So labels never overlap, and
// earlier ones get the higher rows. Worked numbers: lines at 100 and 110, labels 21 px
// wide ("1/3", "2/3"), right edge 700: the first takes row 0 at 103..124, the second
// would start at 113, inside it, and takes row 1.
func placeLabels(xs, w []float64, right float64, rows int, taken [][]span) []placement {
	used := make([][]span, rows)
	for r := range min(rows, len(taken)) {
		used[r] = append(used[r], taken[r]...)
	}
	out := make([]placement, len(xs))
	for i, x := range xs {
		s, left := span{x + markGap, x + markGap + w[i]}, false
		if s.to > right {
			s, left = span{x - markGap - w[i], x - markGap}, true
		}
		padded := span{s.from - labelGap, s.to + labelGap}
		out[i] = placement{row: -1, leftOfLine: left}
		for r := range rows {
			free := true
			for _, u := range used[r] {
				if u.overlaps(padded) {
					free = false
					break
				}
			}
			if free {
				used[r] = append(used[r], s)
				out[i].row = r
				break
			}
		}
	}
	return out
}

// labelWidth estimates a 12px label's width (see charWidth).
func labelWidth(text string) float64 { return float64(len([]rune(text)) * charWidth) }

// rowBaseline is the baseline of label row r at the top of the plot.
func (f frame) rowBaseline(r int) float64 { return f.top + textSize + float64(r*rowHeight) }

// labelRows is how many rows of labels the plot's upper half holds.
func (f frame) labelRows() int {
	return max(1, int((f.bottom-f.top)/2)/rowHeight)
}

// desiredTaken is the stretch of each label row the "desired N" label covers (see
// addDesired), so that no mark's label is written over it.
func desiredTaken(f frame, desired int32, rows int) [][]span {
	if desired <= 0 {
		return nil
	}
	baseline := f.y(int64(desired)) - 6
	text := span{f.right - 4 - labelWidth(fmt.Sprintf("desired %d", desired)), f.right - 4}
	taken := make([][]span, rows)
	for r := range rows {
		// Two rows of text overlap when their baselines are less than a line apart.
		if b := f.rowBaseline(r); b-baseline < rowHeight && baseline-b < rowHeight {
			taken[r] = []span{text}
		}
	}
	return taken
}

// addMarks draws each mark as a dashed vertical line over the plot (a wait's label
// has its band instead), and returns its label, placed by placeLabels at the top of
// the plot, to be drawn over the series. Marks past the end of the time axis are left
// out.
func addMarks(s *scene, f frame, marks []vmark, desired int32) []label {
	var xs, ws []float64
	var shown []vmark
	for _, m := range marks {
		if m.at > f.span {
			continue
		}
		x := f.x(m.at)
		if m.band {
			xs, ws, shown = append(xs, x), append(ws, labelWidth(m.text)), append(shown, m)
			continue
		}
		s.add(line{from: point{x, f.top}, to: point{x, f.bottom}, color: m.color, width: m.width, dashed: true})
		xs, ws, shown = append(xs, x), append(ws, labelWidth(m.text)), append(shown, m)
	}
	rows := f.labelRows()
	var labels []label
	for i, p := range placeLabels(xs, ws, f.right, rows, desiredTaken(f, desired, rows)) {
		if p.row < 0 {
			continue
		}
		l := label{at: point{xs[i] + markGap, f.rowBaseline(p.row)}, text: shown[i].text, color: shown[i].color, size: textSize, halo: true}
		if p.leftOfLine {
			l.at.x, l.anchor = xs[i]-markGap, anchorEnd
		}
		labels = append(labels, l)
	}
	return labels
}
