package rolloutview

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Line is the plain, one-line form for logs and pipes: kubectl's own status line, the
// pod the rollout waits on when there is one, and the pods resizing in place when
// some are ("… (2 pods resizing; web-1 resize Deferred: …)"). A rollout that ends in
// an error (p.Err) has no line: kubectl prints that error once, on stderr, and so
// does the caller.
func Line(p Progress) string {
	if p.Err != nil {
		return ""
	}
	line := p.Message
	if p.Blocking != nil && !p.Done {
		line = fmt.Sprintf("%s (waiting on %s)", line, p.Blocking)
	}
	if p.Resizing != nil {
		line = fmt.Sprintf("%s (%s)", line, p.Resizing)
	}
	return line
}

// Plain is what `kroll rollout status` prints for p outside a terminal: Line, then
// the analysis's lines while one holds or failed the rollout, which come even when
// the rollout ends in an error (the caller prints that on stderr, after them):
//
//	deployment "web": step 1/5: 10% (2 of 20 updated), paused until promoted; ...
//	analysis "error-ratio": Running, 1 of 2 measured: 0.002 (want < 0.01)
func Plain(p Progress) string {
	out := Line(p)
	if out != "" {
		out += "\n"
	}
	return out + p.Analysis.Lines()
}

// barWidth is the cells of a bar; one cell is desired/barWidth pods.
const barWidth = 30

// Bar is the terminal form, redrawn in place as the rollout moves: a heading with the
// revision (and its change-cause when recorded: "revision 2 (configmap/app-config
// changed)"), the phase and ETA, and one bar per revision of its pods out of desired (█ available,
// ▒ there but not available), then what the rollout waits on.
//
//	deployment/web  revision 2  Progressing  5/10 updated  8/10 available  ETA 12s
//	  rev 2  web-6f9c7d  ███████▒▒▒▒▒░░░░░░░░░░░░░░░░░  5 pods, 3 available
//	  rev 1  web-5d8f4b  ███████████████░░░░░░░░░░░░░░░  5 pods, 5 available
//	  2 pods resizing
//	  web-5d8f4b-fghij resize Deferred: Node didn't have enough resources: cpu, …
//	  waiting on web-6f9c7d-abcde: ImagePullBackOff
//
// p.Err is not drawn: the caller reports it once, on stderr, under the last frame.
func Bar(p Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s  revision %s", p.Kind, p.Name, shortRevision(p.Revision))
	if p.Cause != "" {
		fmt.Fprintf(&b, " (%s)", p.Cause)
	}
	fmt.Fprintf(&b, "  %s  %d/%d updated  %d/%d available", p.Phase, p.Updated, p.Target, p.Available, p.Desired)
	if p.Partition != nil {
		fmt.Fprintf(&b, "  partition %d", *p.Partition)
	}
	if p.ETASeconds != nil {
		fmt.Fprintf(&b, "  ETA %s", eta(*p.ETASeconds))
	}
	b.WriteByte('\n')
	nameWidth := 0
	for _, r := range p.Revisions {
		nameWidth = max(nameWidth, len(r.Name))
	}
	for _, r := range p.Revisions {
		fmt.Fprintf(&b, "  rev %-3s %-*s  %s  %s, %d available\n", r.Revision, nameWidth, r.Name, bar(r.Available, r.Pods, p.Desired), pods(r.Pods), r.Available)
	}
	b.WriteString(indent("  ", p.Staged.Lines()))
	b.WriteString(indent("  ", p.Analysis.Lines()))
	b.WriteString(indent("  ", p.Resizing.Lines()))
	if p.Blocking != nil {
		fmt.Fprintf(&b, "  waiting on %s", p.Blocking)
		if p.Blocking.Message != "" {
			fmt.Fprintf(&b, " (%s)", firstLine(p.Blocking.Message, 100))
		}
		b.WriteByte('\n')
	}
	if p.Settling != nil {
		fmt.Fprintf(&b, "  all updated and available; %s\n", p.Settling.line)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	return b.String()
}

// Lines are a staged rollout's lines under a view's heading: where it stands, and what
// moves it on when it is held. Empty for nil.
//
//	step 1/5: 10% (2 of 20 updated), paused until promoted
//	to continue: kroll rollout promote deployment/web
func (s *Staged) Lines() string {
	if s == nil {
		return ""
	}
	out := s.Message + "\n"
	if s.Continue != "" {
		out += "to continue: " + s.Continue + "\n"
	}
	return out
}

// indent puts prefix before each line of text.
func indent(prefix, text string) string {
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n"+prefix) + "\n"
}

// bar draws available then not-yet-available pods out of desired cells (a revision
// may briefly hold more than desired: the bar is then full).
func bar(available, pods, desired int32) string {
	if desired <= 0 {
		desired = max(pods, 1)
	}
	cells := func(n int32) int {
		return min(int(math.Round(float64(n)*barWidth/float64(desired))), barWidth)
	}
	full, there := cells(available), cells(pods)
	there = max(there, full)
	return strings.Repeat("█", full) + strings.Repeat("▒", there-full) + strings.Repeat("░", barWidth-there)
}

// JSON is the -o json form: one object per line.
func JSON(p Progress) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// shortRevision keeps a ControllerRevision name readable in a heading: its hash.
func shortRevision(r string) string {
	if i := strings.LastIndexByte(r, '-'); i >= 0 && len(r)-i > 6 {
		return r[i+1:]
	}
	return r
}

func eta(seconds float64) string {
	return (time.Duration(math.Ceil(seconds)) * time.Second).String()
}

func firstLine(s string, limit int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

func pods(n int32) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
