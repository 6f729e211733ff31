package failure

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlanSet(t *testing.T) {
	rollback := map[string]string{OnFailureAnnotation: "Rollback"}
	withDeadline := map[string]string{OnFailureAnnotation: "Rollback", ProgressDeadlineAnnotation: "600"}
	crashing := []*corev1.Pod{pod("web-3", waiting("CrashLoopBackOff")), pod("web-2", nil)}
	progressing := func(rev string, ago time.Duration) Condition {
		return Condition{Type: ConditionProgressing, Status: corev1.ConditionTrue, Reason: ReasonReplicasUpdated,
			Message: `ControllerRevision "` + rev + `" is progressing.`, LastTransitionTime: metav1.NewTime(t0.Add(-ago))}
	}
	failed := Condition{Type: ConditionRolloutFailed, Status: corev1.ConditionTrue, Reason: ReasonPodsFailing, Message: "1 of 1 new pods failed"}
	for _, tc := range []struct {
		name string
		v    SetView
		// want: the action, the conditions as "Type/Status/Reason", the policy event, the
		// recheck after t0 (0 for none).
		act          Action
		conditions   string
		event        string
		recheck      time.Duration
		markComplete bool
	}{
		{name: "not opted in: a crash-looping rollout waits, as upstream's does",
			v:   SetView{Annotations: nil, InProgress: true, Revision: 2, Desired: 4, NewPods: crashing, Target: 1},
			act: None},
		{name: "Rollback: 1 failed pod of 4 at threshold 1 rolls back to the current revision",
			v:   SetView{Policy: PolicyOf(rollback), Annotations: rollback, InProgress: true, Revision: 2, Desired: 4, NewPods: crashing, Target: 1},
			act: Rollback},
		{name: "threshold 2: 1 failed pod does not fail the rollout",
			v: SetView{Policy: PolicyOf(map[string]string{OnFailureAnnotation: "Pause", ThresholdAnnotation: "2"}), InProgress: true, Revision: 2, Desired: 4,
				NewPods: crashing, Target: 1},
			act: None},
		{name: "Rollback with no earlier revision pauses instead",
			v:   SetView{Policy: PolicyOf(rollback), Annotations: rollback, InProgress: true, Revision: 1, Desired: 4, NewPods: crashing},
			act: Pause},
		{name: "already rolled back from revision 2: not judged again, RolloutFailed kept",
			v: SetView{Policy: PolicyOf(rollback), Annotations: map[string]string{OnFailureAnnotation: "Rollback", RolledBackFromAnnotation: "2"},
				InProgress: true, Revision: 2, Desired: 4, NewPods: crashing, Target: 1, Conditions: []Condition{failed}},
			act: None, conditions: "RolloutFailed/True/PodsFailing"},
		{name: "paused on revision 2 and resumed by the user: not paused again",
			v: SetView{Policy: PolicyOf(rollback), Annotations: map[string]string{OnFailureAnnotation: "Pause", PausedOnFailureAnnotation: "2"},
				InProgress: true, Revision: 2, Desired: 4, NewPods: crashing, Target: 1, Conditions: []Condition{failed}},
			act: None, conditions: "RolloutFailed/True/PodsFailing"},
		{name: "a restore of the revision rolled back to is never judged",
			v: SetView{Policy: PolicyOf(rollback), Annotations: map[string]string{OnFailureAnnotation: "Rollback", RolledBackFromAnnotation: "2"},
				InProgress: true, Revision: 3, Desired: 4, NewPods: crashing, Target: 2, Conditions: []Condition{failed}},
			act: None, conditions: "RolloutFailed/True/PodsFailing"},
		{name: "rolled back, no rollout in progress: RolloutFailed stays",
			v: SetView{Policy: PolicyOf(rollback), Annotations: map[string]string{RolledBackFromAnnotation: "2"}, Revision: 3, Desired: 4,
				Conditions: []Condition{failed}},
			act: None, conditions: "RolloutFailed/True/PodsFailing"},
		{name: "the user's next change (revision 4) removes RolloutFailed and is judged afresh",
			v: SetView{Policy: PolicyOf(rollback), Annotations: map[string]string{OnFailureAnnotation: "Rollback", RolledBackFromAnnotation: "2"},
				InProgress: true, Revision: 4, Desired: 4, NewPods: []*corev1.Pod{pod("web-3", nil)}, Target: 3, Conditions: []Condition{failed}},
			act: None, conditions: ""},
		{name: "invalid threshold: FailurePolicy False with an event, behaves as None",
			v: SetView{Policy: PolicyOf(map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "abc"}), InProgress: true, Revision: 2,
				Desired: 4, NewPods: crashing, Target: 1},
			act: None, conditions: "FailurePolicy/False/InvalidAnnotation", event: `kroll.dev/failure-threshold="abc" is not valid`},
		{name: "invalid and already reported: no second event",
			v: SetView{Policy: PolicyOf(map[string]string{OnFailureAnnotation: "Sometimes"}), Revision: 2, Desired: 4,
				Conditions: []Condition{{Type: ConditionFailurePolicy, Status: corev1.ConditionFalse, Reason: ReasonInvalidAnnotation,
					Message: PolicyOf(map[string]string{OnFailureAnnotation: "Sometimes"}).Problem()}}},
			act: None, conditions: "FailurePolicy/False/InvalidAnnotation"},
		{name: "deadline 600s, a new rollout starts its clock: look again in 600s",
			v: SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, InProgress: true, Revision: 2, RevisionName: "web-2", Desired: 4,
				NewPods: []*corev1.Pod{pod("web-3", notReady)}, Target: 1},
			act: None, conditions: "Progressing/True/ReplicasUpdated", recheck: 600 * time.Second},
		{name: "deadline 600s, last progress 500s ago: look again in 100s",
			v: SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, InProgress: true, Revision: 2, RevisionName: "web-2", Desired: 4,
				NewPods: []*corev1.Pod{pod("web-3", notReady)}, Target: 1, Conditions: []Condition{progressing("web-2", 500*time.Second)}},
			act: None, conditions: "Progressing/True/ReplicasUpdated", recheck: 100 * time.Second},
		{name: "deadline 600s, last progress 600s ago: past the deadline, rolled back",
			v: SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, InProgress: true, Revision: 2, RevisionName: "web-2", Desired: 4,
				NewPods: []*corev1.Pod{pod("web-3", notReady)}, Target: 1, Conditions: []Condition{progressing("web-2", 600*time.Second)}},
			act: Rollback, conditions: "Progressing/False/ProgressDeadlineExceeded"},
		{name: "deadline 600s, held at a staged partition 700s after the last progress: no deadline, PartitionReached",
			v: SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, InProgress: true, Held: true, Revision: 2, RevisionName: "web-2", Desired: 4,
				NewPods: []*corev1.Pod{pod("web-3", nil)}, Target: 1, Conditions: []Condition{progressing("web-2", 700*time.Second)}},
			act: None, conditions: "Progressing/True/PartitionReached"},
		{name: "deadline 600s, moving on from a held partition: the clock starts again",
			v: SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, InProgress: true, Revision: 2, RevisionName: "web-2", Desired: 4,
				NewPods: []*corev1.Pod{pod("web-3", nil)}, Target: 1, Conditions: []Condition{{Type: ConditionProgressing, Status: corev1.ConditionTrue,
					Reason: "PartitionReached", Message: `ControllerRevision "web-2" reached its partition.`, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}},
			act: None, conditions: "Progressing/True/ReplicasUpdated", recheck: 600 * time.Second},
		{name: "deadline without on-failure: the condition is reported, nothing acts",
			v: SetView{Policy: PolicyOf(map[string]string{ProgressDeadlineAnnotation: "600"}), InProgress: true, Revision: 2, RevisionName: "web-2",
				Desired: 4, Target: 1, Conditions: []Condition{progressing("web-2", 700*time.Second)}},
			act: None, conditions: "Progressing/False/ProgressDeadlineExceeded"},
		{name: "deadline, no rollout in progress: NewRevisionAvailable",
			v:   SetView{Policy: PolicyOf(withDeadline), Annotations: withDeadline, Revision: 2, Desired: 4, Subject: `StatefulSet "web"`},
			act: None, conditions: "Progressing/True/NewRevisionAvailable"},
		{name: "one node: its old pod replaced, the new one crash-looping, revision 2 not complete: judged, rolled back",
			v:   SetView{Policy: PolicyOf(rollback), Annotations: rollback, Revision: 2, Desired: 1, NewPods: crashing[:1], Target: 1},
			act: Rollback},
		{name: "one node, not opted in: nothing judged",
			v:   SetView{Revision: 2, Desired: 1, NewPods: crashing[:1], Target: 1},
			act: None},
		{name: "revision 2 completed once, its pods crash later: not judged",
			v:   SetView{Policy: PolicyOf(rollback), Annotations: rollback, Revision: 2, Complete: true, Desired: 1, NewPods: crashing[:1], Target: 1},
			act: None},
		{name: "done, every new pod Ready 10s: marked complete",
			v:            SetView{Policy: PolicyOf(rollback), Annotations: rollback, Revision: 2, Done: true, Desired: 2, NewPods: readySince(10*time.Second, 12*time.Second), Target: 1},
			act:          None,
			markComplete: true},
		{name: "done, the last pod Ready 4s: judged still, looked at again in 6s",
			v:       SetView{Policy: PolicyOf(rollback), Annotations: rollback, Revision: 2, Done: true, Desired: 2, NewPods: readySince(4*time.Second, 12*time.Second), Target: 1},
			act:     None,
			recheck: 6 * time.Second},
		{name: "done and settled, not opted in: no mark (nothing is judged without a policy)",
			v:   SetView{Revision: 2, Done: true, Desired: 2, NewPods: readySince(10*time.Second, 12*time.Second), Target: 1},
			act: None},
		{name: "done, a pod not Ready: no mark, judged",
			v:   SetView{Policy: PolicyOf(rollback), Annotations: rollback, Revision: 2, Done: true, Desired: 2, NewPods: []*corev1.Pod{pod("web-0", notReady), crashing[0]}, Target: 1},
			act: Rollback},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanSet(tc.v, t0)
			if plan.MarkComplete != tc.markComplete {
				t.Errorf("mark complete %v, want %v", plan.MarkComplete, tc.markComplete)
			}
			if plan.Act != tc.act {
				t.Errorf("act %q, want %q (verdict %+v)", plan.Act, tc.act, plan.Verdict)
			}
			var got []string
			for _, c := range plan.Conditions {
				got = append(got, c.Type+"/"+string(c.Status)+"/"+c.Reason)
			}
			if strings.Join(got, ",") != tc.conditions {
				t.Errorf("conditions %q, want %q", strings.Join(got, ","), tc.conditions)
			}
			if (tc.event == "") != (plan.PolicyEvent == "") || !strings.Contains(plan.PolicyEvent, tc.event) {
				t.Errorf("policy event %q, want one containing %q", plan.PolicyEvent, tc.event)
			}
			var recheck time.Duration
			if !plan.Recheck.IsZero() {
				recheck = plan.Recheck.Sub(t0)
			}
			if recheck != tc.recheck {
				t.Errorf("recheck in %s, want %s", recheck, tc.recheck)
			}
		})
	}
}

func TestWithReport(t *testing.T) {
	v := Judge(PolicyOf(map[string]string{OnFailureAnnotation: "Rollback"}), 4, []*corev1.Pod{pod("web-3", waiting("CrashLoopBackOff"))}, false, t0)
	conds := WithReport(nil, FailedReport(Rollback, v, RolledBackOutcome("2", "1")), t0)
	want := "1 of 1 new pods failed, threshold 1 (web-3: CrashLoopBackOff); rolled back from revision 2 to 1"
	if len(conds) != 1 || conds[0].Message != want || conds[0].Reason != ReasonPodsFailing || conds[0].Status != corev1.ConditionTrue {
		t.Errorf("got %+v, want RolloutFailed True PodsFailing %q", conds, want)
	}
}

func TestRestoring(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from     string
		revision int64
		want     bool
	}{
		{name: "rolled back from 5: revision 4 before the cache shows it renumbered", from: "5", revision: 4, want: true},
		{name: "rolled back from 5: revision 4 renumbered to 6", from: "5", revision: 6, want: true},
		{name: "the user's next change after the restore is 7: judged", from: "5", revision: 7},
		{name: "the failed revision itself (5): not a restore (its record says it was acted on)", from: "5", revision: 5},
		{name: "never rolled back", revision: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			annotations := map[string]string{}
			if tc.from != "" {
				annotations[RolledBackFromAnnotation] = tc.from
			}
			if got := Restoring(annotations, tc.revision); got != tc.want {
				t.Errorf("restoring %v, want %v", got, tc.want)
			}
		})
	}
}

// readySince is pods Ready for each of the durations before t0.
func readySince(ago ...time.Duration) []*corev1.Pod {
	var out []*corev1.Pod
	for i, d := range ago {
		p := pod(fmt.Sprintf("web-%d", i), nil)
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d))
		out = append(out, p)
	}
	return out
}
