package dashboard

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestListRowsFiltersAndPutsFailingFirst(t *testing.T) {
	rows := []Row{
		{Kind: "deployment", Namespace: "b", Name: "web", Phase: "Complete"},
		{Kind: "statefulset", Namespace: "a", Name: "db", Phase: "Progressing", Detail: "waiting on db-1: ContainerCreating"},
		{Kind: "deployment", Namespace: "c", Name: "shop", Phase: "RolledBack", Failing: true},
		{Kind: "deployment", Namespace: "a", Name: "api", Phase: "Staged at step 1/5"},
	}
	for _, tc := range []struct {
		name   string
		filter Filter
		want   string
	}{
		{"every namespace: the rolled-back one first, then by namespace, kind, name", Filter{}, "[c/shop a/api a/db b/web]"},
		{"namespace a only", Filter{Namespace: "a"}, "[a/api a/db]"},
		{"search matches the detail", Filter{Search: "containercreating"}, "[a/db]"},
		{"search matches the phase, every word must match", Filter{Search: "staged 1/5"}, "[a/api]"},
		{"search by kind/name", Filter{Search: "deployment/web"}, "[b/web]"},
		{"nothing matches", Filter{Search: "nope"}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range ListRows(rows, tc.filter) {
				got = append(got, r.Namespace+"/"+r.Name)
			}
			if fmt.Sprint(got) != tc.want && !(len(got) == 0 && tc.want == "[]") {
				t.Errorf("ListRows = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestPageOfCutsTheListIntoPages(t *testing.T) {
	var rows []Row
	for i := range 7 {
		rows = append(rows, Row{Name: fmt.Sprint(i)})
	}
	for _, tc := range []struct {
		name       string
		rows       []Row
		page, size int
		want       string
	}{
		{"the first page", rows, 1, 3, "page 1/3: 1–3 of 7 [0 1 2]"},
		{"a middle page", rows, 2, 3, "page 2/3: 4–6 of 7 [3 4 5]"},
		{"the last page, short", rows, 3, 3, "page 3/3: 7–7 of 7 [6]"},
		{"past the end: the last page", rows, 9, 3, "page 3/3: 7–7 of 7 [6]"},
		{"before the first (or no page asked): the first", rows, 0, 3, "page 1/3: 1–3 of 7 [0 1 2]"},
		{"exactly full pages", rows[:6], 2, 3, "page 2/2: 4–6 of 6 [3 4 5]"},
		{"fewer rows than a page: one page", rows, 1, 100, "page 1/1: 1–7 of 7 [0 1 2 3 4 5 6]"},
		{"nothing matches: one empty page", nil, 4, 3, "page 1/1: 0–0 of 0 []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PageOf(tc.rows, tc.page, tc.size)
			var names []string
			for _, r := range p.Rows {
				names = append(names, r.Name)
			}
			got := fmt.Sprintf("page %d/%d: %d–%d of %d %v", p.Page, p.Pages, p.First, p.Last, p.Matching, names)
			if got != tc.want {
				t.Errorf("PageOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPhaseWordsNameTheStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    rolloutview.Progress
		want string
	}{
		{"complete", rolloutview.Progress{Phase: rolloutview.Complete}, "Complete"},
		{"held at a pause: the step", rolloutview.Progress{Phase: rolloutview.Progressing, Staged: &rolloutview.Staged{Phase: staging.StepPaused, Step: 1, Total: 5}}, "Staged at step 1/5"},
		{"held at a partition", rolloutview.Progress{Phase: rolloutview.Progressing, Staged: &rolloutview.Staged{Phase: staging.PartitionReached, Partition: 10}}, "Staged at partition 10"},
		{"staged but moving: the phase", rolloutview.Progress{Phase: rolloutview.Progressing, Staged: &rolloutview.Staged{Phase: staging.Progressing, Step: 2, Total: 5}}, "Progressing"},
		{"paused on failure wins over the step", rolloutview.Progress{Phase: rolloutview.PausedOnFailure, Staged: &rolloutview.Staged{Phase: staging.StepPaused, Step: 1, Total: 5}}, "PausedOnFailure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := phaseWords(tc.p); got != tc.want {
				t.Errorf("phaseWords = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSegmentsAreTheProgressBars(t *testing.T) {
	p := rolloutview.Progress{Desired: 20, Revisions: []rolloutview.RevisionPods{
		{Revision: "2", Pods: 10, Available: 6, Latest: true},
		{Revision: "1", Pods: 12, Available: 12},
	}}
	got := fmt.Sprint(Segments(p)[0].AvailablePct, Segments(p)[0].TherePct, Segments(p)[1].AvailablePct, Segments(p)[1].TherePct)
	// rev 2: 6 of 20 available (30%), 4 more there (20%); rev 1: 12 of 20 (60%).
	if got != "30 20 60 0" {
		t.Errorf("segments = %s, want 30 20 60 0", got)
	}
	over := Segments(rolloutview.Progress{Desired: 4, Revisions: []rolloutview.RevisionPods{{Pods: 5, Available: 5}}})
	if over[0].AvailablePct != 100 || over[0].TherePct != 0 {
		t.Errorf("a revision over desired: %+v, want a full bar", over[0])
	}
}

func TestActionOfReadsTheFormAndSaysWhatItWrites(t *testing.T) {
	for _, tc := range []struct {
		name        string
		form        url.Values
		writes, cmd string
		wantErr     bool
	}{
		{"promote", url.Values{"verb": {"promote"}}, "the step record kroll.dev/rollout-step of deployment/web in namespace shop, one step on: the controller then rolls out the next step", "kroll rollout promote deployment/web -n shop", false},
		{"undo to 3", url.Values{"verb": {"undo"}, "revision": {"3"}}, "the pod template of revision 3 into deployment/web in namespace shop", "kroll rollout undo deployment/web --to-revision=3 -n shop", false},
		{"undo to the previous", url.Values{"verb": {"undo"}, "revision": {"0"}}, "the pod template of the previous revision into deployment/web in namespace shop", "kroll rollout undo deployment/web -n shop", false},
		{"set image", url.Values{"verb": {"set-image"}, "container": {"app"}, "image": {"nginx:1.27"}}, "image nginx:1.27 for container app in the pod template of deployment/web in namespace shop", "kroll set image deployment/web app=nginx:1.27 -n shop", false},
		{"set image without an image", url.Values{"verb": {"set-image"}, "container": {"app"}}, "", "", true},
		{"undo to a word", url.Values{"verb": {"undo"}, "revision": {"latest"}}, "", "", true},
		{"an unknown verb", url.Values{"verb": {"delete"}}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ActionOf(tc.form, "deployment", "shop", "web")
			if (err != nil) != tc.wantErr {
				t.Fatalf("ActionOf error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if a.Writes() != tc.writes || a.Command() != tc.cmd {
				t.Errorf("writes %q, command %q\nwant %q, %q", a.Writes(), a.Command(), tc.writes, tc.cmd)
			}
			back, err := ActionOf(a.Values(), "deployment", "shop", "web")
			if err != nil || back != a {
				t.Errorf("the confirmation's fields read back as %+v (%v), want %+v", back, err, a)
			}
		})
	}
}

func TestEventRowsNewestFirstWithTheHealingOnes(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 12, 0, s, 0, time.UTC)) }
	events := []*corev1.Event{
		{Reason: "ScalingReplicaSet", LastTimestamp: at(1), Message: "Scaled up"},
		{Reason: "RolledBack", Type: "Warning", LastTimestamp: at(3), Message: "rolled back from revision 2 to 1"},
		{Reason: "RolloutStep", LastTimestamp: at(2), Message: "step 1/3"},
	}
	all, healing := EventRows(events, 2)
	if len(all) != 2 || all[0].Reason+" "+all[1].Reason != "RolledBack RolloutStep" {
		t.Errorf("events = %+v, want the 2 newest, newest first", all)
	}
	if len(healing) != 1 || healing[0].Message != "rolled back from revision 2 to 1" || healing[0].Time != "12:00:03" {
		t.Errorf("healing = %+v, want the RolledBack event", healing)
	}
}

func TestStepRowsMarkTheStepsDoneAndTheNext(t *testing.T) {
	ann := map[string]string{staging.StepsAnnotation: "10%, pause, 50%, pause: 5s, 100%"}
	for _, tc := range []struct {
		name   string
		staged *rolloutview.Staged
		want   string
	}{
		{"held at step 1/5: the pause is next", &rolloutview.Staged{Step: 1, Total: 5}, "1 10% done|2 pause next|3 50%|4 pause: 5s|5 100%"},
		{"steps done", &rolloutview.Staged{Step: 5, Total: 5}, "1 10% done|2 pause done|3 50% done|4 pause: 5s done|5 100% done"},
		{"not staged now (a rollback): nothing marked", nil, "1 10%|2 pause|3 50%|4 pause: 5s|5 100%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range StepRows(ann, tc.staged) {
				s := fmt.Sprintf("%d %s", r.N, r.Text)
				if r.Done {
					s += " done"
				}
				if r.Next {
					s += " next"
				}
				got = append(got, s)
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Errorf("steps %q, want %q", g, tc.want)
			}
		})
	}
	if StepRows(map[string]string{}, nil) != nil {
		t.Errorf("steps without the annotation, want none")
	}
}

func TestAnalysisBoxSaysWhereItRanWhatItMeasuredAndDid(t *testing.T) {
	at := time.Date(2026, 12, 7, 16, 0, 30, 0, time.UTC)
	failed := rolloutview.AnalysisCheck{Name: "error-ratio", Query: "sum(rate(x[30s]))", SuccessCondition: "< 0.01", FailureCondition: "> 0.5",
		Outcome: analysis.Failed, Message: `check "error-ratio" failed: 0.6 is not < 0.01`, Count: 3, Taken: 2, Failed: 1,
		Measurements: []analysis.Sample{{At: at, Value: "0.002", Outcome: analysis.Successful}, {At: at.Add(10 * time.Second), Value: "0.6", Outcome: analysis.Failed}}}
	unreachable := rolloutview.AnalysisCheck{Name: "p99", SuccessCondition: "< 0.25", Outcome: analysis.Error, Count: 2, Errors: 2,
		Measurements: []analysis.Sample{{At: at, Outcome: analysis.Error, Error: "Prometheus at http://127.0.0.1:9090/api/v1/query unreachable"}}}
	for _, tc := range []struct {
		name string
		a    *rolloutview.Analysis
		want string
	}{
		{"none", nil, "<nil>"},
		{"rolled back", &rolloutview.Analysis{Revision: "6d5f7c9b8", Step: 1, Outcome: analysis.Failed, Action: rolloutview.AnalysisRolledBack, Current: true,
			Checks: []rolloutview.AnalysisCheck{failed}},
			`step 2 of revision 6d5f7c9b8: Failed, rolled back|Failed|earlier=false|` +
				`error-ratio Failed "2 of 3 measured, 1 failed" "want < 0.01, failure > 0.5" [16:00:30Z 0.002 Successful  ; 16:00:40Z 0.6 Failed ]`},
		{"Prometheus unreachable", &rolloutview.Analysis{Revision: "7c", Step: 0, Outcome: analysis.Error, Action: rolloutview.Held, Current: true,
			Checks: []rolloutview.AnalysisCheck{unreachable}},
			`step 1 of revision 7c: Error, held until promoted or aborted|Error|earlier=false|` +
				`p99 Error "0 of 2 measured, 2 errors in a row" "want < 0.25" [16:00:30Z  Error Prometheus at http://127.0.0.1:9090/api/v1/query unreachable]`},
		{"an earlier step's, promoted", &rolloutview.Analysis{Revision: "6d", Step: 3, Outcome: analysis.Successful, Action: rolloutview.Promoted},
			`step 4 of revision 6d: Successful, promoted the step (an earlier analysis)|Successful|earlier=true|`},
		{"a problem", &rolloutview.Analysis{Revision: "6d", Outcome: rolloutview.Invalid, Action: rolloutview.Held, Current: true, Problem: "ConfigMap ns/x does not exist",
			Checks: []rolloutview.AnalysisCheck{failed}},
			`step 1 of revision 6d: Invalid, held until promoted or aborted|Invalid|earlier=false|ConfigMap ns/x does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AnalysisBoxOf(tc.a)
			got := "<nil>"
			if b != nil {
				got = fmt.Sprintf("%s|%s|earlier=%v|%s", b.Heading, b.Outcome, b.Earlier, b.Problem)
				for _, c := range b.Checks {
					var ms []string
					for _, m := range c.Measurements {
						ms = append(ms, fmt.Sprintf("%s %s %s %s", m.At, m.Value, m.Outcome, m.Error))
					}
					got += fmt.Sprintf("%s %s %q %q [%s]", c.Name, c.Outcome, c.Progress, c.Conditions, strings.Join(ms, " ; "))
				}
			}
			if got != tc.want {
				t.Errorf("box\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
