package deployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/metrics"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// crashing is a pod of rs whose container waits in CrashLoopBackOff.
func crashing(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	p := podOf(rs, name)
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.ContainerStatuses[0].Ready = false
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	return p
}

// failingRollout is web at 4 replicas rolling out revision 3 (nginx:bad, 1 pod so far)
// from revision 2 (nginx:1.16.1, complete, 4 pods); revision 1 (nginx:1.14.2) completed
// too. policy is its kroll.dev/on-failure.
func failingRollout(policy string) (d *appsv1.Deployment, r1, r2, bad *appsv1.ReplicaSet) {
	d = newDeployment(4, "nginx:bad", "1", "0")
	d.Annotations = map[string]string{history.RevisionAnnotation: "3"}
	d.Status.Conditions = []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonReplicaSetUpdated, "progressing", time.Now())}
	if policy != "" {
		d.Annotations[failure.OnFailureAnnotation] = policy
	}
	r1 = replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, 2*time.Hour)
	r2 = replicaSetOf(d, "nginx:1.16.1", 2, 4, 4, time.Hour)
	bad = replicaSetOf(d, "nginx:bad", 3, 1, 0, time.Minute)
	r1.Annotations[failure.CompleteAnnotation] = "true"
	r2.Annotations[failure.CompleteAnnotation] = "true"
	for _, rs := range []*appsv1.ReplicaSet{r1, r2, bad} {
		history.KeepSettings(d, rs) // as the controller left them
	}
	return d, r1, r2, bad
}

func TestPlanHeal(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		edit  func(d *appsv1.Deployment, r1, r2, bad *appsv1.ReplicaSet) []*corev1.Pod
		want  string // act, from→to, markComplete
		fails bool   // the verdict says failed
	}{
		{"not watched: a crash-looping new pod changes nothing, as upstream", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			delete(d.Annotations, failure.OnFailureAnnotation)
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "None", false},
		{"the 1st crash-looping new pod (threshold 1) rolls back from 3 to the newest complete revision, 2", func(_ *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Rollback 3→2", true},
		{"a new pod merely starting is not failed: no rollback", func(_ *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			p := podOf(bad, "bad-1")
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			return []*corev1.Pod{p}
		}, "None", false},
		{"threshold 2: 1 failed pod is not enough", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Annotations[failure.ThresholdAnnotation] = "2"
			return []*corev1.Pod{crashing(bad, "bad-1"), podOf(bad, "bad-2")}
		}, "None", false},
		{"past the progress deadline with no failed pod: rolled back", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Status.Conditions = []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, rollout.ReasonProgressDeadlineExceeded,
				fmt.Sprintf("ReplicaSet %q has timed out progressing.", bad.Name), now)}
			return []*corev1.Pod{podOf(bad, "bad-1")}
		}, "Rollback 3→2", true},
		{"a deadline left from the rollout a rollback undid does not fail the restored revision", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Status.Conditions = []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, rollout.ReasonProgressDeadlineExceeded,
				fmt.Sprintf("ReplicaSet %q has timed out progressing.", r2.Name), now)}
			return []*corev1.Pod{podOf(bad, "bad-1")}
		}, "None", false},
		{"a revision once rolled back from (2) is never gone back to: to 1", func(d *appsv1.Deployment, r1, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			// Nothing marked (opted in late): 2 is judged, its newest old is 3, the bad one.
			delete(r1.Annotations, failure.CompleteAnnotation)
			delete(r2.Annotations, failure.CompleteAnnotation)
			d.Annotations[failure.RolledBackFromAnnotation] = "2"
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Rollback 3→1", true},
		{"revision 2 never completed: back to 1, the newest complete one", func(_ *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			delete(r2.Annotations, failure.CompleteAnnotation)
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Rollback 3→1", true},
		{"none marked complete (opted in later): back to the newest old revision, 2", func(_ *appsv1.Deployment, r1, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			delete(r1.Annotations, failure.CompleteAnnotation)
			delete(r2.Annotations, failure.CompleteAnnotation)
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Rollback 3→2", true},
		{"the new revision completed once (a rollback brought it back): never judged", func(_ *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			bad.Annotations[failure.CompleteAnnotation] = "true"
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "None", false},
		{"Pause stops revision 3", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Annotations[failure.OnFailureAnnotation] = "Pause"
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Pause 3", true},
		{"resumed by its user on the revision it was paused on: not paused again", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Annotations[failure.OnFailureAnnotation] = "Pause"
			d.Annotations[failure.PausedOnFailureAnnotation] = "3"
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "None", true},
		{"paused: not judged", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Spec.Paused = true
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "None", false},
		{"an invalid policy behaves as None", func(d *appsv1.Deployment, _, _, bad *appsv1.ReplicaSet) []*corev1.Pod {
			d.Annotations[failure.ThresholdAnnotation] = "abc"
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "None", false},
		{"the first revision has nothing to go back to: paused instead", func(d *appsv1.Deployment, r1, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r1, *r2 = appsv1.ReplicaSet{}, appsv1.ReplicaSet{} // dropped below
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Pause 3", true},
		{"the rollout completed (status observed): the new ReplicaSet is marked complete", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r2.Spec.Replicas, r2.Status.Replicas = 0, 0
			*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4}
			return []*corev1.Pod{podOf(bad, "bad-1")}
		}, "None complete", false},
		{"complete, but a pod Ready only 2s ago: not marked yet, still judged", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r2.Spec.Replicas, r2.Status.Replicas = 0, 0
			*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4}
			p := podOf(bad, "bad-1")
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Second))
			return []*corev1.Pod{p}
		}, "None", false},
		{"complete for an instant, a crash-looping pod among them: rolled back", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r2.Spec.Replicas, r2.Status.Replicas = 0, 0
			*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4}
			return []*corev1.Pod{podOf(bad, "bad-1"), crashing(bad, "bad-2")}
		}, "Rollback 3→2", true},
		{"all pods in, status not yet observed: not marked yet", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r2.Spec.Replicas, r2.Status.Replicas = 0, 0
			*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
			return []*corev1.Pod{podOf(bad, "bad-1")}
		}, "None", false},
		{"old pods terminating still make it a rollout", func(d *appsv1.Deployment, _, r2, bad *appsv1.ReplicaSet) []*corev1.Pod {
			*r2.Spec.Replicas, r2.Status.Replicas = 0, 1
			*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
			return []*corev1.Pod{crashing(bad, "bad-1")}
		}, "Rollback 3→2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, r1, r2, bad := failingRollout("Rollback")
			pods := tt.edit(d, r1, r2, bad)
			var rss []*appsv1.ReplicaSet
			for _, rs := range []*appsv1.ReplicaSet{r1, r2, bad} {
				if rs.Name != "" {
					rss = append(rss, rs)
				}
			}
			plan := planHeal(healView{policy: failure.PolicyOf(d.Annotations), p: newPass(d, rss), newPods: pods, now: now})
			got := string(plan.act)
			if plan.act == "" {
				got = "None"
			}
			switch {
			case plan.act == failure.Rollback:
				got += " " + plan.from + "→" + history.RevisionAnnotation
				got = strings.Replace(got, history.RevisionAnnotation, plan.to.Annotations[history.RevisionAnnotation], 1)
			case plan.act == failure.Pause:
				got += " " + plan.from
			case plan.markComplete:
				got += " complete"
			}
			if got != tt.want || plan.verdict.Failed != tt.fails {
				t.Errorf("plan %q (verdict failed %v: %s), want %q (failed %v)", got, plan.verdict.Failed, plan.verdict.Message(""), tt.want, tt.fails)
			}
		})
	}
}

// A failed rollout goes back in one write of the Deployment, as `kubectl rollout undo
// --to-revision=2` would: revision 2's template (and change-cause), the settings kept,
// and the record of the bad revision; then the condition, the event and the metric.
func TestSync_rollbackOnFailure(t *testing.T) {
	d, r1, r2, bad := failingRollout("Rollback")
	d.Annotations[history.ChangeCauseAnnotation] = "bad"
	r2.Annotations[history.ChangeCauseAnnotation] = "good"
	bad.Annotations[history.ChangeCauseAnnotation] = "bad"
	d.Annotations[timeline.Annotation] = timeline.Timeline{Revision: "3", Start: time.Now().Add(-time.Minute), Desired: 1,
		Samples: []timeline.Sample{{Counts: timeline.Counts{Old: 1, Available: 1}}}}.String()
	f := newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w := &fakeWriter{}
	f.c.writes = w
	before := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("Deployment"))
	f.sync()
	checkReported(t, w)
	got := w.updated[0]
	// The rollout's record keeps revision 3's samples, marked rolled back from 3.
	if tl, err := timeline.Parse(got.Annotations[timeline.Annotation]); err != nil || tl.Rollback == nil || tl.Rollback.Failed != "3" || tl.Rollback.From != "3" || len(tl.Samples) != 1 {
		t.Errorf("timeline after the rollback: %+v (rollback %+v, %v), want revision 3's record marked rolled back from 3", tl, tl.Rollback, err)
	}
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.16.1" || got.Annotations[failure.RolledBackFromAnnotation] != "3" ||
		got.Annotations[failure.OnFailureAnnotation] != "Rollback" || got.Annotations[history.ChangeCauseAnnotation] != "good" {
		t.Errorf("rolled back to image %s, annotations %v; want nginx:1.16.1, rolled-back-from 3, the setting kept, change-cause good", img, got.Annotations)
	}
	if _, hashed := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hashed {
		t.Errorf("the template took the ReplicaSet's pod-template-hash: %v", got.Spec.Template.Labels)
	}
	want := "1 of 1 new pods failed, threshold 1 (web-bad-1: CrashLoopBackOff); rolled back from revision 3 to 2"
	cond := rollout.Condition(&w.statuses[0].Status, failure.ConditionRolloutFailed)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != failure.ReasonPodsFailing || cond.Message != want {
		t.Errorf("RolloutFailed condition %+v, want True/PodsFailing %q", cond, want)
	}
	if ev := f.events(); ev != "Warning RolledBack "+want {
		t.Errorf("events %q", ev)
	}
	if n := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("Deployment")) - before; n != 1 {
		t.Errorf("kroll_rollouts_rolled_back_total{kind=Deployment} went up by %v, want 1", n)
	}

	// The next pass: the template is revision 2's, whose ReplicaSet comes back as
	// revision 4 and is never judged; the condition stays.
	d = w.updated[1].DeepCopy()
	d.Status = w.statuses[0].Status
	f = newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w = &fakeWriter{}
	f.c.writes = w
	f.sync()
	for _, x := range w.writes {
		if x == "update deployment web" {
			t.Errorf("the restored revision was acted on again: %v", w.writes)
		}
	}
	back := w.replicaSets[0]
	if back.Name != r2.Name || back.Annotations[history.RevisionAnnotation] != "4" || back.Annotations[history.RevisionHistoryAnnotation] != "2" {
		t.Errorf("first ReplicaSet write %s revision %s history %s; want %s as revision 4, history 2", back.Name,
			back.Annotations[history.RevisionAnnotation], back.Annotations[history.RevisionHistoryAnnotation], r2.Name)
	}
}

func TestSync_pauseOnFailure(t *testing.T) {
	d, r1, r2, bad := failingRollout("Pause")
	f := newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w := &fakeWriter{}
	f.c.writes = w
	before := testutil.ToFloat64(metrics.PausedOnFailure.WithLabelValues("Deployment"))
	f.sync()
	checkReported(t, w)
	got := w.updated[0]
	if !got.Spec.Paused || got.Annotations[failure.PausedOnFailureAnnotation] != "3" || got.Spec.Template.Spec.Containers[0].Image != "nginx:bad" {
		t.Errorf("paused %v, annotations %v, image %s: want paused on 3, the template as it was", got.Spec.Paused, got.Annotations, got.Spec.Template.Spec.Containers[0].Image)
	}
	if ev := f.events(); ev != "Warning RolloutPaused 1 of 1 new pods failed, threshold 1 (web-bad-1: CrashLoopBackOff); paused on revision 3" {
		t.Errorf("events %q", ev)
	}
	if n := testutil.ToFloat64(metrics.PausedOnFailure.WithLabelValues("Deployment")) - before; n != 1 {
		t.Errorf("kroll_rollouts_paused_on_failure_total{kind=Deployment} went up by %v, want 1", n)
	}

	// Resumed by its user: the rollout goes on, not paused again for revision 3.
	got = w.updated[1]
	got.Spec.Paused = false
	f = newFixture(t, got, r1, r2, bad, crashing(bad, "web-bad-1"))
	w = &fakeWriter{}
	f.c.writes = w
	f.sync()
	for _, x := range w.writes {
		if x == "update deployment web" {
			t.Errorf("resumed, it was paused again: %v", w.writes)
		}
	}
}

// An invalid policy is a Warning event and a FailurePolicy condition, once per
// message, and the rollout goes on as with None.
func TestSync_invalidPolicyIsReportedOnce(t *testing.T) {
	d, r1, r2, bad := failingRollout("Sometimes")
	f := newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w := &fakeWriter{}
	f.c.writes = w
	f.sync()
	problem := `kroll.dev/on-failure="Sometimes" is not valid: want Rollback, Pause or None; the rollout is not watched for failure (as with kroll.dev/on-failure=None)`
	if ev := f.events(); ev != "Warning InvalidFailurePolicy "+problem {
		t.Errorf("events %q", ev)
	}
	for _, x := range w.writes {
		if x == "update deployment web" {
			t.Errorf("an invalid policy acted: %v", w.writes)
		}
	}
	if len(w.statuses) == 0 {
		t.Fatalf("no status written: %v", w.writes)
	}
	status := w.statuses[len(w.statuses)-1]
	cond := rollout.Condition(&status.Status, failure.ConditionFailurePolicy)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != failure.ReasonInvalidAnnotation || cond.Message != problem {
		t.Fatalf("FailurePolicy condition %+v", cond)
	}
	f = newFixture(t, status, r1, r2, bad)
	f.c.writes = &fakeWriter{}
	f.sync()
	if ev := f.events(); strings.Contains(ev, "InvalidFailurePolicy") {
		t.Errorf("reported again: %q", ev)
	}
}

func TestFailureOver(t *testing.T) {
	d := newDeployment(2, "nginx:2", "1", "0")
	for _, tt := range []struct {
		name    string
		record  map[string]string
		rev     string
		history string
		want    bool
	}{
		{"rolled back from 5: revision 4 reused as 6 is the restored one", map[string]string{failure.RolledBackFromAnnotation: "5"}, "6", "4", false},
		{"rolled back from 5: a new template at 7 is the user's next change", map[string]string{failure.RolledBackFromAnnotation: "5"}, "7", "", true},
		{"paused on 5 and resumed: still revision 5", map[string]string{failure.PausedOnFailureAnnotation: "5"}, "5", "", false},
		{"paused on 5, the user changed the template: a new ReplicaSet at 6", map[string]string{failure.PausedOnFailureAnnotation: "5"}, "6", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := d.DeepCopy()
			d.Annotations = tt.record
			rs := replicaSetOf(d, "nginx:2", 0, 2, 2, time.Minute)
			rs.Annotations[history.RevisionAnnotation] = tt.rev
			if tt.history != "" {
				rs.Annotations[history.RevisionHistoryAnnotation] = tt.history
			}
			if got := failureOver(&pass{d: d, newRS: rs}); got != tt.want {
				t.Errorf("failureOver = %v, want %v", got, tt.want)
			}
		})
	}
}

// `kubectl rollout undo` copies a ReplicaSet's kroll.dev/complete onto the Deployment:
// it is taken off.
func TestSync_undoCopiedCompleteIsTakenOff(t *testing.T) {
	d, r1, r2, bad := failingRollout("Rollback")
	d.Annotations[failure.CompleteAnnotation] = "true"
	f := newFixture(t, []runtime.Object{d, r1, r2, bad}...)
	w := &fakeWriter{}
	f.c.writes = w
	f.sync()
	if strings.Join(w.writes, ",") != "update deployment web" {
		t.Fatalf("writes %v", w.writes)
	}
	if _, left := w.updated[0].Annotations[failure.CompleteAnnotation]; left {
		t.Errorf("annotations %v: kroll.dev/complete left on the Deployment", w.updated[0].Annotations)
	}
}

// Pods of an older revision failing do not fail the rollout; new pods merely slow to
// start do not either.
func TestSync_oldPodsFailingDoNotCount(t *testing.T) {
	d, r1, r2, bad := failingRollout("Rollback")
	starting := podOf(bad, "web-bad-1")
	starting.Status.Conditions[0].Status = corev1.ConditionFalse
	starting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	f := newFixture(t, d, r1, r2, bad, starting, crashing(r2, "web-good-1"), crashing(r2, "web-good-2"))
	w := &fakeWriter{}
	f.c.writes = w
	f.sync()
	for _, x := range w.writes {
		if x == "update deployment web" {
			t.Errorf("old pods failing acted on the rollout: %v", w.writes)
		}
	}
	if ev := f.events(); strings.Contains(ev, "RolledBack") {
		t.Errorf("events %q", ev)
	}
}

// A rollback to a revision not marked complete marks it first: restored, it is never
// judged (an in-place rollback hands it pods still showing their failure).
func TestSync_rollbackMarksAnUnmarkedTargetFirst(t *testing.T) {
	d, r1, r2, bad := failingRollout("Rollback")
	delete(r1.Annotations, failure.CompleteAnnotation)
	delete(r2.Annotations, failure.CompleteAnnotation)
	f := newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w := &fakeWriter{}
	f.c.writes = w
	f.sync()
	if got, want := strings.Join(w.writes, ", "), "update replicaset "+r2.Name+", update deployment web, update status web, update deployment web"; got != want {
		t.Fatalf("writes: %s; want %s", got, want)
	}
	if w.replicaSets[0].Annotations[failure.CompleteAnnotation] != "true" {
		t.Errorf("target annotations %v: want it marked complete", w.replicaSets[0].Annotations)
	}
}

func TestMayHaveFailed(t *testing.T) {
	_, _, _, bad := failingRollout("Rollback")
	ready := podOf(bad, "a")
	restarted := ready.DeepCopy()
	restarted.Status.ContainerStatuses[0].RestartCount = 1
	gone := crashing(bad, "a")
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tt := range []struct {
		name     string
		old, cur *corev1.Pod
		want     bool
	}{
		{"a Ready pod's update (its labels, say) does not wake the Deployment", ready, ready.DeepCopy(), false},
		{"a Ready pod whose container restarted may be failing", ready, restarted, true},
		{"a pod not Ready may be failing (CrashLoopBackOff)", ready, crashing(bad, "a"), true},
		{"a pod being deleted is on its way out", ready, gone, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayHaveFailed(tt.old, tt.cur); got != tt.want {
				t.Errorf("mayHaveFailed = %v, want %v", got, tt.want)
			}
		})
	}
}

// A complete rollout whose last pod became Ready 2s ago is looked at again when it
// has been Ready 10s: then marked, without polling.
func TestPlanHeal_settlingIsRecheckedOnTime(t *testing.T) {
	now := time.Now()
	d, _, r2, bad := failingRollout("Rollback")
	*r2.Spec.Replicas, r2.Status.Replicas = 0, 0
	*bad.Spec.Replicas, bad.Status.AvailableReplicas = 4, 4
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4}
	p := podOf(bad, "bad-1")
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Second))
	plan := planHeal(healView{policy: failure.PolicyOf(d.Annotations), p: newPass(d, []*appsv1.ReplicaSet{r2, bad}), newPods: []*corev1.Pod{p}, now: now})
	if want := p.Status.Conditions[0].LastTransitionTime.Add(failure.SettleTime); plan.markComplete || !plan.recheck.Equal(want) {
		t.Errorf("plan %+v; want no mark yet and a recheck at %v", plan, want)
	}
	plan = planHeal(healView{policy: failure.PolicyOf(d.Annotations), p: newPass(d, []*appsv1.ReplicaSet{r2, bad}), newPods: []*corev1.Pod{p}, now: now.Add(8 * time.Second)})
	if !plan.markComplete {
		t.Errorf("10s after the last pod became Ready: plan %+v, want it marked complete", plan)
	}
}

// checkReported fails t unless w's writes are a failure's action and its report: the
// Update with the report's record, the status, the Update that removes the record.
func checkReported(t *testing.T, w *fakeWriter) {
	t.Helper()
	if got := strings.Join(w.writes, ", "); got != "update deployment web, update status web, update deployment web" {
		t.Fatalf("writes: %s; want the Deployment, its status, the report's record removed", got)
	}
	if _, ok := w.updated[0].Annotations[failure.RolloutFailedAnnotation]; !ok {
		t.Errorf("the action's Update carries no %s", failure.RolloutFailedAnnotation)
	}
	if _, ok := w.updated[1].Annotations[failure.RolloutFailedAnnotation]; ok {
		t.Errorf("%s is still there after the report", failure.RolloutFailedAnnotation)
	}
}

// A controller stopped between the rollback's Update and its status write: the next
// pass finds the report's record and makes the report (condition, event, metric,
// once), and does not roll back again.
func TestSync_rollbackReportLostWithTheProcessIsMadeNext(t *testing.T) {
	d, r1, r2, bad := failingRollout("Rollback")
	f := newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w := &fakeWriter{stopStatus: true}
	f.c.writes = w
	before := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("Deployment"))
	if err := f.c.sync(context.Background(), "default/web"); !errors.Is(err, errStopped) {
		t.Fatalf("sync: %v, want the stop", err)
	}
	if got := strings.Join(w.writes, ", "); got != "update deployment web" {
		t.Fatalf("writes: %s; want the rollback's Update alone before the stop", got)
	}
	if ev := f.events(); ev != "" {
		t.Errorf("events before the status write: %q", ev)
	}

	d = w.updated[0].DeepCopy() // as stored: rolled back, with the record; the status as before
	f = newFixture(t, d, r1, r2, bad, crashing(bad, "web-bad-1"))
	w = &fakeWriter{}
	f.c.writes = w
	f.sync()
	// The restored ReplicaSet becomes revision 4 as on any pass after a rollback; then
	// the report, and the record removed.
	if got, want := strings.Join(w.writes, ", "), "update replicaset "+r2.Name+", update status web, update deployment web"; got != want {
		t.Fatalf("writes of the next pass: %s; want %s", got, want)
	}
	want := "1 of 1 new pods failed, threshold 1 (web-bad-1: CrashLoopBackOff); rolled back from revision 3 to 2"
	if cond := rollout.Condition(&w.statuses[0].Status, failure.ConditionRolloutFailed); cond == nil || cond.Reason != failure.ReasonPodsFailing || cond.Message != want {
		t.Errorf("RolloutFailed condition %+v, want PodsFailing %q", cond, want)
	}
	if ev := f.events(); ev != "Warning RolledBack "+want {
		t.Errorf("events %q, want the RolledBack event", ev)
	}
	if n := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("Deployment")) - before; n != 1 {
		t.Errorf("kroll_rollouts_rolled_back_total{kind=Deployment} went up by %v, want 1", n)
	}
	if _, ok := w.updated[0].Annotations[failure.RolloutFailedAnnotation]; ok {
		t.Errorf("%s still there after the report", failure.RolloutFailedAnnotation)
	}
	if img := w.updated[0].Spec.Template.Spec.Containers[0].Image; img != "nginx:1.16.1" {
		t.Errorf("image %s after the report, want the rollback's nginx:1.16.1 kept", img)
	}
}
