package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// writeSVG uses fixed one-decimal coordinates so the output is byte-for-byte stable.
func writeSVG(s scene, title string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		s.width, s.height, s.width, s.height, textSize)
	if title != "" {
		// For screen readers and browser tabs.
		fmt.Fprintf(&b, "<title>%s</title>\n", escape(title))
	}
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="%s"/>`+"\n", s.width, s.height, background.hex())
	for _, shape := range s.shapes {
		switch sh := shape.(type) {
		case rect:
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
				sh.from.x, sh.from.y, sh.to.x-sh.from.x, sh.to.y-sh.from.y, sh.color.hex())
		case line:
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"`,
				sh.from.x, sh.from.y, sh.to.x, sh.to.y, sh.color.hex(), sh.width)
			if sh.dashed {
				fmt.Fprintf(&b, ` stroke-dasharray="%d %d"`, dashOn, dashPeriod-dashOn)
			}
			b.WriteString("/>\n")
		case polyline:
			b.WriteString(`<polyline points="`)
			for i, p := range sh.points {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%.1f,%.1f", p.x, p.y)
			}
			// Square caps and miter joins match the PNG's square brush.
			fmt.Fprintf(&b, `" fill="none" stroke="%s" stroke-width="%.1f" stroke-linecap="square"/>`+"\n", sh.color.hex(), sh.width)
		case label:
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f"`, sh.at.x, sh.at.y)
			switch sh.anchor {
			case anchorMiddle:
				b.WriteString(` text-anchor="middle"`)
			case anchorEnd:
				b.WriteString(` text-anchor="end"`)
			}
			if sh.size != textSize {
				fmt.Fprintf(&b, ` font-size="%g"`, sh.size)
			}
			if sh.bold {
				b.WriteString(` font-weight="bold"`)
			}
			if sh.halo {
				fmt.Fprintf(&b, ` stroke="%s" stroke-width="3" stroke-linejoin="round" paint-order="stroke"`, background.hex())
			}
			fmt.Fprintf(&b, ` fill="%s">%s</text>`+"\n", sh.color.hex(), escape(sh.text))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// escape makes s safe as XML character data (the title comes from the caller).
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
