package bench

import (
	"fmt"
	"html"
	"strings"
)

// armColours are the bar colours of the chart, by arm.
var armColours = map[string]string{
	krollArm.Name:    "#326ce5",
	upstreamArm.Name: "#9e9e9e",
	inPlaceArm.Name:  "#2e9e5b",
	configArm.Name:   "#8e44ad",
	apiArm.Name:      "#e08a00",
}

// Chart draws the results as an SVG: a group of bars per scenario, one bar per arm
// (the median, with a line over the min–max), each group scaled to its own longest
// bar. Rollouts and the raw ceiling show seconds to done, steady state the
// controllers' memory.
func (r *Results) Chart() string {
	const (
		width, labelWidth, barHeight, gap, top = 980, 430, 14, 12, 40
		barSpace                               = width - labelWidth - 90
	)
	type bar struct {
		arm string
		st  stat
	}
	type group struct {
		title, unit string
		bars        []bar
	}
	var groups []group
	for _, s := range r.Scenarios {
		value, unit := func(x Sample) float64 { return x.Seconds }, "s"
		if steadyOnly(s) {
			value, unit = func(x Sample) float64 { return x.ControllerMiB }, "MiB"
		}
		g := group{title: s.Title, unit: unit}
		for _, a := range s.Arms {
			if st := r.statOf(s.Name, a.Name, value); st.n > 0 {
				g.bars = append(g.bars, bar{a.Name, st})
			}
		}
		if len(g.bars) > 0 {
			groups = append(groups, g)
		}
	}
	height := top + 40
	for _, g := range groups {
		height += len(g.bars)*(barHeight+2) + gap
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">kroll vs upstream: time to done (steady state: controller memory); median, line = min–max</text>`+"\n")
	x := 10
	for _, arm := range []string{krollArm.Name, upstreamArm.Name, inPlaceArm.Name, configArm.Name, apiArm.Name} {
		fmt.Fprintf(&b, `<rect x="%d" y="28" width="10" height="10" fill="%s"/><text x="%d" y="37">%s</text>`+"\n", x, armColours[arm], x+14, arm)
		x += 14 + 8*len(arm) + 16
	}
	y := top + 10
	for _, g := range groups {
		longest := 0.0
		for _, br := range g.bars {
			longest = max(longest, br.st.max)
		}
		groupHeight := len(g.bars) * (barHeight + 2)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+groupHeight/2+4, html.EscapeString(g.title))
		for _, br := range g.bars {
			scale := func(v float64) float64 { return v / longest * barSpace }
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", labelWidth, y, scale(br.st.median), barHeight, armColours[br.arm])
			if br.st.n > 1 {
				mid := y + barHeight/2
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", float64(labelWidth)+scale(br.st.min), mid, float64(labelWidth)+scale(br.st.max), mid)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s %s</text>`+"\n", float64(labelWidth)+scale(br.st.max)+6, y+barHeight-3, format(br.st.median), g.unit)
			y += barHeight + 2
		}
		y += gap
	}
	b.WriteString("</svg>\n")
	return b.String()
}
