package dashboard

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/rollingupdate"
	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// Row is one workload of the list: `kroll status`'s row, with the phase the rollout
// views compute and whether it fails `kroll status`.
type Row struct {
	Kind, Namespace, Name string
	// Phase is rolloutview's phase, Verdict `kroll status`'s word for it, Detail its
	// DETAIL column ("paused at step 1/5", "waiting on web-6f9c7d-abcde: ...").
	Phase                       string
	Verdict                     string
	Detail                      string
	Updated, Available, Desired int32
	// Failing: the row fails `kroll status` (failed, paused on failure, rolled back
	// and not yet healthy again); such rows come first.
	Failing bool
	// Link is the workload page; empty for a controller without one.
	Link string
}

// RowOf is p's row.
func RowOf(p rolloutview.Progress) Row {
	return Row{
		Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Phase: phaseWords(p), Verdict: string(rolloutview.VerdictOf(p)),
		Detail: rolloutview.Detail(p), Updated: p.Updated, Available: p.Available, Desired: p.Desired,
		Failing: p.Fails(nil), Link: fmt.Sprintf("/w/%s/%s/%s", p.Namespace, p.Kind, p.Name),
	}
}

// phaseWords is the phase as the list shows it: a staged rollout held at a step says
// which ("Staged at step 1/5"), at its partition "Staged at partition 10".
func phaseWords(p rolloutview.Progress) string {
	if p.Err == nil && p.Staged.Held() && p.Phase != rolloutview.PausedOnFailure && p.Phase != rolloutview.RolledBack {
		if p.Staged.Total > 0 {
			return fmt.Sprintf("Staged at step %d/%d", p.Staged.Step, p.Staged.Total)
		}
		return fmt.Sprintf("Staged at partition %d", p.Staged.Partition)
	}
	return string(p.Phase)
}

// controllerRow is a ReplicationController or ReplicaSet that a client-side rolling
// update moves pods to or from now.
func controllerRow(m metav1.Object, kind string, replicas, available int32) Row {
	return Row{
		Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), Phase: string(rolloutview.Progressing),
		Verdict: string(rolloutview.Updating), Updated: available, Available: available, Desired: replicas,
		Detail: "rolling-update to " + m.GetAnnotations()[rollingupdate.NextControllerAnnotation],
	}
}

// rollingUpdateInFlight: the controller names the one a rolling update moves its pods
// to (the annotation kubectl's rolling-update wrote, which kroll's keeps).
func rollingUpdateInFlight(m metav1.Object) bool {
	return m.GetAnnotations()[rollingupdate.NextControllerAnnotation] != ""
}

// Filter is what the list is narrowed to: a namespace (empty for all) and words each
// row must contain (in its kind/name, namespace, phase or detail), and which page of
// the rows that match it shows (from 1).
type Filter struct {
	Namespace string
	Search    string
	Page      int
}

// ListPageSize is how many rows one page of the list shows. The failing rows come
// first, so the first page is the one a user reads; at 1,000 workloads the whole list
// was 215 KB of markup that headless Chromium took over a second to parse and lay out
// on 2 cores, a page of 100 is some 22 KB.
const ListPageSize = 100

// Pagination is one page of the rows that match a filter.
type Pagination struct {
	Rows []Row
	// Page and Pages count from 1: an empty list is one empty page.
	Page, Pages int
	// First and Last are the positions of the page's rows among Matching (from 1;
	// both 0 when nothing matches).
	First, Last, Matching int
}

// PageOf is page number page of rows, size rows a page; a page out of range is the
// nearest one there is, so a link to page 7 of a list that shrank to 3 pages shows
// the last.
func PageOf(rows []Row, page, size int) Pagination {
	pages := max(1, (len(rows)+size-1)/size)
	page = min(max(page, 1), pages)
	p := Pagination{Page: page, Pages: pages, Matching: len(rows)}
	if len(rows) == 0 {
		return p
	}
	p.First = (page-1)*size + 1
	p.Last = min(page*size, len(rows))
	p.Rows = rows[p.First-1 : p.Last]
	return p
}

// ListRows filters rows and orders them: failing first, then by namespace, kind and
// name, as `kroll status -A` orders them within a kind.
func ListRows(rows []Row, f Filter) []Row {
	words := strings.Fields(strings.ToLower(f.Search))
	var out []Row
	for _, r := range rows {
		if f.Namespace != "" && r.Namespace != f.Namespace {
			continue
		}
		hay := strings.ToLower(strings.Join([]string{r.Kind + "/" + r.Name, r.Namespace, r.Phase, r.Verdict, r.Detail}, " "))
		match := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				match = false
				break
			}
		}
		if match {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Failing != b.Failing {
			return a.Failing
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out
}

// Segment is one revision's bar on the workload page, the same model as `kroll
// rollout status`'s bars: available pods, then pods there but not available, out of
// the desired count. Widths are in percent of the bar.
type Segment struct {
	rolloutview.RevisionPods
	AvailablePct, TherePct int
}

// Segments are p's revision bars, newest first.
func Segments(p rolloutview.Progress) []Segment {
	desired := p.Desired
	var out []Segment
	for _, r := range p.Revisions {
		d := desired
		if d <= 0 {
			d = max(r.Pods, 1)
		}
		pct := func(n int32) int { return min(int(n*100/d), 100) }
		there := max(pct(r.Pods), pct(r.Available))
		out = append(out, Segment{RevisionPods: r, AvailablePct: pct(r.Available), TherePct: there - pct(r.Available)})
	}
	return out
}

// EventRow is one event on the workload page.
type EventRow struct {
	Time, Type, Reason, Object, Message string
	Count                               int32
}

// healingReasons are the events of kroll's self-healing: the failure judged and what
// was done about it.
var healingReasons = map[string]bool{failure.EventRolledBack: true, failure.EventRolloutPaused: true, "AbortIgnored": true}

// EventRows are events newest first, at most limit, and the self-healing ones among
// them (newest first too).
func EventRows(events []*corev1.Event, limit int) (all, healing []EventRow) {
	sorted := append([]*corev1.Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return lastSeen(sorted[i]).After(lastSeen(sorted[j]).Time) })
	for _, e := range sorted {
		row := EventRow{Time: lastSeen(e).UTC().Format("15:04:05"), Type: e.Type, Reason: e.Reason,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, Message: e.Message, Count: max(e.Count, 1)}
		if healingReasons[e.Reason] {
			healing = append(healing, row)
		}
		if len(all) < limit {
			all = append(all, row)
		}
	}
	return all, healing
}

func lastSeen(e *corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

// StepRow is one step of a staged rollout on the workload page.
type StepRow struct {
	// N is the step's number (1-based); Text as written in kroll.dev/rollout-steps.
	N    int
	Text string
	// Done: the rollout is past it; Next: the one it moves to when it moves on.
	Done, Next bool
}

// StepRows are the workload's kroll.dev/rollout-steps against where its rollout stands
// (staged's Step is the steps done); nil without steps.
func StepRows(annotations map[string]string, staged *rolloutview.Staged) []StepRow {
	steps := staging.SettingsOf(annotations).Steps
	done := 0
	if staged != nil {
		done = staged.Step
	}
	var out []StepRow
	for i, s := range steps {
		n := i + 1
		out = append(out, StepRow{N: n, Text: s.String(), Done: n <= done, Next: n == done+1 && staged != nil})
	}
	return out
}

// AnalysisBox is the workload page's analysis: the record its controller keeps in
// kroll.dev/analysis-status, as rolloutview reads it, in rows.
type AnalysisBox struct {
	// Heading says where it ran, its outcome and what it did: "step 2 of revision
	// 6d5f7c9b8: Failed, rolled back".
	Heading string
	// Outcome is the analysis's (Running, Successful, Failed, Inconclusive, Error,
	// Invalid), for its colour.
	Outcome string
	// Earlier: the record is of an analysis that no longer holds or failed the
	// rollout (a step it promoted, a revision before).
	Earlier bool
	// Problem is why it cannot judge; its checks are then not shown.
	Problem string
	Checks  []AnalysisCheckRow
}

// AnalysisCheckRow is one check: its decision, how far it is, the values it was
// judged by and the query asked.
type AnalysisCheckRow struct {
	Name, Outcome string
	// Progress is "2 of 3 measured", with the failed, inconclusive and errored ones.
	Progress string
	// Conditions are "want < 0.01, failure > 0.5".
	Conditions string
	Message    string
	Query      string
	// Measurements are the last few, oldest first.
	Measurements []MeasurementCell
}

// MeasurementCell is one measurement: when, the value or the error, and its outcome.
type MeasurementCell struct {
	At, Value, Outcome, Error string
}

// AnalysisBoxOf is a's box; nil for nil.
func AnalysisBoxOf(a *rolloutview.Analysis) *AnalysisBox {
	if a == nil {
		return nil
	}
	b := &AnalysisBox{Outcome: string(a.Outcome), Earlier: !a.Current, Problem: a.Problem}
	b.Heading = fmt.Sprintf("step %d of revision %s: %s", a.Step+1, a.Revision, a.Outcome)
	if words := analysisActionWords[a.Action]; words != "" {
		b.Heading += ", " + words
	}
	if b.Earlier {
		b.Heading += " (an earlier analysis)"
	}
	if a.Problem != "" {
		return b
	}
	for _, c := range a.Checks {
		row := AnalysisCheckRow{Name: c.Name, Outcome: string(c.Outcome), Message: c.Message, Query: c.Query,
			Progress: fmt.Sprintf("%d of %d measured", c.Taken, c.Count)}
		for _, n := range []struct {
			count int
			what  string
		}{{c.Failed, "failed"}, {c.Inconclusive, "inconclusive"}, {c.Errors, "errors in a row"}} {
			if n.count > 0 {
				row.Progress += fmt.Sprintf(", %d %s", n.count, n.what)
			}
		}
		var want []string
		if c.SuccessCondition != "" {
			want = append(want, "want "+c.SuccessCondition)
		}
		if c.FailureCondition != "" {
			want = append(want, "failure "+c.FailureCondition)
		}
		row.Conditions = strings.Join(want, ", ")
		for _, m := range c.Measurements {
			row.Measurements = append(row.Measurements, MeasurementCell{At: m.At.UTC().Format("15:04:05Z"), Value: m.Value,
				Outcome: string(m.Outcome), Error: m.Error})
		}
		b.Checks = append(b.Checks, row)
	}
	return b
}

// analysisActionWords say what an analysis's decision did to the rollout.
var analysisActionWords = map[rolloutview.AnalysisAction]string{
	rolloutview.Promoted:              "promoted the step",
	rolloutview.AnalysisRolledBack:    "rolled back",
	rolloutview.AnalysisPausedFailure: "paused on failure",
	rolloutview.Held:                  "held until promoted or aborted",
}
