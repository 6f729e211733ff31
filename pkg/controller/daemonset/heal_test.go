package daemonset

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// dsRevision is revision number n of ds, labelled hash, recording image.
func dsRevision(t *testing.T, ds *appsv1.DaemonSet, hash string, n int64, image string) *appsv1.ControllerRevision {
	t.Helper()
	at := ds.DeepCopy()
	at.Spec.Template.Spec.Containers[0].Image = image
	data, err := history.TemplatePatch(at)
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "logs-" + hash, Labels: map[string]string{RevisionLabel: hash}},
		Data: runtimeRaw(data), Revision: n}
}

func TestRollbackRevisions(t *testing.T) {
	ds := newDaemonSet("1", "0")
	for _, tc := range []struct {
		name                string
		revisions           map[string]int64 // hash → number; "new" is the template's
		rolledBackFrom      string
		wantNewest, wantTgt int64
	}{
		{name: "revisions 1, 2 and the template at 3: back to 2", revisions: map[string]int64{"a": 1, "b": 2, "new": 3}, wantNewest: 3, wantTgt: 2},
		{name: "the first revision: nothing to go back to", revisions: map[string]int64{"new": 1}, wantNewest: 1},
		{name: "rolled back from 2 before (1 renumbered to 3), template at 4: back to 3",
			revisions: map[string]int64{"bad": 2, "good": 3, "new": 4}, rolledBackFrom: "2", wantNewest: 4, wantTgt: 3},
		{name: "the highest other is the one rolled back from: skipped", revisions: map[string]int64{"good": 1, "bad": 3, "new": 4},
			rolledBackFrom: "3", wantNewest: 4, wantTgt: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ds.DeepCopy()
			d.Annotations[failure.RolledBackFromAnnotation] = tc.rolledBackFrom
			var owned []*appsv1.ControllerRevision
			for h, n := range tc.revisions {
				owned = append(owned, dsRevision(t, d, h, n, "img:"+h))
			}
			r := rollbackRevisions(d, owned, "new")
			if r.newest == nil || r.newest.Revision != tc.wantNewest {
				t.Errorf("newest %v, want %d", r.newest, tc.wantNewest)
			}
			if got := int64(0); r.target != nil {
				got = r.target.Revision
				if got != tc.wantTgt {
					t.Errorf("target %d, want %d", got, tc.wantTgt)
				}
			} else if tc.wantTgt != 0 {
				t.Errorf("no target, want %d", tc.wantTgt)
			}
		})
	}
}

func TestCarryOutDaemonSet(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name, onFailure, wantImage, wantEvent, wantMessage string
		wantAnnotations                                    map[string]string
	}{
		{name: "Rollback: revision 1's template back with rolled-back-from 2", onFailure: "Rollback", wantImage: "img:old",
			wantAnnotations: map[string]string{failure.RolledBackFromAnnotation: "2"}, wantEvent: "Warning RolledBack",
			wantMessage: "1 of 1 new pods failed, threshold 1 (b-new: CrashLoopBackOff); rolled back from revision 2 to 1"},
		{name: "Pause: kroll.dev/paused and paused-on-failure 2, template kept", onFailure: "Pause", wantImage: "fluentd:v2",
			wantAnnotations: map[string]string{failure.PausedAnnotation: "true", failure.PausedOnFailureAnnotation: "2"}, wantEvent: "Warning RolloutPaused",
			wantMessage: "1 of 1 new pods failed, threshold 1 (b-new: CrashLoopBackOff); paused on revision 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			ds.Annotations[failure.OnFailureAnnotation] = tc.onFailure
			revs := rollbackRevisions(ds, []*appsv1.ControllerRevision{dsRevision(t, ds, "old", 1, "img:old"), dsRevision(t, ds, "new", 2, "fluentd:v2")}, "new")
			bad := daemonPod("b", "new", false)
			bad.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
			pods := []*corev1.Pod{daemonPod("a", "old", true), bad, daemonPod("c", "old", true)}
			plan := planFailure(ds, pods, revs, "new", appsv1.DaemonSetStatus{DesiredNumberScheduled: 3}, false, now)
			if plan.Act != failure.Action(tc.onFailure) {
				t.Fatalf("act %q, want %s", plan.Act, tc.onFailure)
			}
			w := &controllertest.SetWriter[*appsv1.DaemonSet]{}
			rec := record.NewFakeRecorder(10)
			c := &Controller{dsWriter: w, recorder: rec}
			if err := c.carryOut(context.Background(), ds, revs, plan, now); err != nil {
				t.Fatal(err)
			}
			controllertest.CheckActed(t, w)
			got := w.Updates[0]
			if img := got.Spec.Template.Spec.Containers[0].Image; img != tc.wantImage {
				t.Errorf("image %s, want %s", img, tc.wantImage)
			}
			for k, v := range tc.wantAnnotations {
				if got.Annotations[k] != v {
					t.Errorf("annotation %s=%q, want %q", k, got.Annotations[k], v)
				}
			}
			conds := w.Statuses[0].Status.Conditions
			if len(conds) != 1 || conds[0].Type != failure.ConditionRolloutFailed || conds[0].Message != tc.wantMessage {
				t.Errorf("conditions %+v, want RolloutFailed %q", conds, tc.wantMessage)
			}
			if ev := <-rec.Events; ev != tc.wantEvent+" "+tc.wantMessage {
				t.Errorf("event %q, want %q", ev, tc.wantEvent+" "+tc.wantMessage)
			}
			if again := planFailure(got, pods, revs, "new", appsv1.DaemonSetStatus{DesiredNumberScheduled: 3}, false, now); again.Act != failure.None {
				t.Errorf("after the write the plan acts again: %s", again.Act)
			}
		})
	}
}

func runtimeRaw(data []byte) runtime.RawExtension { return runtime.RawExtension{Raw: data} }

// A DaemonSet on one node (or with maxUnavailable 100%) has replaced its old pod
// before the new one fails: judged until its revision is marked complete.
func TestPlanFailureUntilComplete(t *testing.T) {
	now := time.Now()
	crash := daemonPod("a", "new", false)
	crash.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	for _, tc := range []struct {
		name     string
		complete bool
		pods     []*corev1.Pod
		st       appsv1.DaemonSetStatus
		wantAct  failure.Action
		wantMark bool
	}{
		{name: "one node, the old pod gone, the new one crash-looping: rolled back",
			pods: []*corev1.Pod{crash}, st: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, wantAct: failure.Rollback},
		{name: "one node, the old pod terminating, the new one crash-looping: rolled back",
			pods: []*corev1.Pod{terminating(daemonPod("a", "old", true)), crash}, st: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, wantAct: failure.Rollback},
		{name: "the revision completed once, its pod crash-looping later: left alone",
			complete: true, pods: []*corev1.Pod{crash}, st: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, wantAct: failure.None},
		{name: "three nodes, all new pods available and Ready an hour: marked complete",
			pods: []*corev1.Pod{daemonPod("a", "new", true), daemonPod("b", "new", true), daemonPod("c", "new", true)},
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}, wantAct: failure.None, wantMark: true},
		{name: "an old pod left: not done, not marked",
			pods: []*corev1.Pod{daemonPod("a", "new", true), daemonPod("b", "old", true)},
			st:   appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2, NumberReady: 2}, wantAct: failure.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			ds.Annotations[failure.OnFailureAnnotation] = "Rollback"
			newRev := dsRevision(t, ds, "new", 2, "fluentd:v2")
			if tc.complete {
				newRev.Annotations = map[string]string{failure.CompleteAnnotation: "true"}
			}
			revs := rollbackRevisions(ds, []*appsv1.ControllerRevision{dsRevision(t, ds, "old", 1, "img:old"), newRev}, "new")
			plan := planFailure(ds, tc.pods, revs, "new", tc.st, false, now)
			if plan.Act != tc.wantAct || plan.MarkComplete != tc.wantMark {
				t.Errorf("act %s, mark complete %v; want %s, %v", plan.Act, plan.MarkComplete, tc.wantAct, tc.wantMark)
			}
		})
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	return p
}
