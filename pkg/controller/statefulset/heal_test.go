package statefulset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// healSet is a 4-replica RollingUpdate set at partition p, rolling out from revision 1
// (web-1, image app:1) to revision 2 (web-2, image app:crash), with the policy given.
func healSet(p int32, annotations map[string]string) (*appsv1.StatefulSet, revisions) {
	set := newSet(4, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	set.Spec.VolumeClaimTemplates = nil
	set.Annotations = annotations
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &p}}
	set.Spec.Template.Spec.Containers[0].Image = "app:crash"
	current := set.DeepCopy()
	current.Spec.Template.Spec.Containers[0].Image = "app:1"
	cur, upd := rev("web-1"), rev("web-2")
	cur.Revision, upd.Revision = 1, 2
	return set, revisions{current: cur, update: upd, currentSet: current, updateSet: set, all: []*appsv1.ControllerRevision{cur, upd}}
}

// crashing is p crash-looping.
func crashing(p *corev1.Pod) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	return p
}

func TestPausePartition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partition int32
		revisions []string // per ordinal: "1" current, "2" update, "" not created, "2t" terminating
		want      int32
	}{
		{name: "OrderedReady reached web-3 (crash-looping): held at 3, web-0..2 stay current", revisions: []string{"1", "1", "1", "2"}, want: 3},
		{name: "maxUnavailable 2: web-3 and web-2 updated: held at 2", revisions: []string{"1", "1", "2", "2"}, want: 2},
		{name: "web-1 still carries the current revision while terminating: held at 2", revisions: []string{"1", "1t", "2", "2"}, want: 2},
		{name: "web-3 not created yet: it is not a pod to hold", revisions: []string{"1", "1", "1", ""}, want: 3},
		{name: "never lowered below the user's partition", partition: 3, revisions: []string{"1", "1", "2", "2"}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, revs := healSet(tc.partition, nil)
			var pods []*corev1.Pod
			for i, r := range tc.revisions {
				if r == "" {
					continue
				}
				p := setPod(set, i, "web-"+r[:1], true)
				if strings.HasSuffix(r, "t") {
					p.DeletionTimestamp = &p.CreationTimestamp
				}
				pods = append(pods, p)
			}
			if got := pausePartition(set, pods, revs); got != tc.want {
				t.Errorf("partition %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCarryOut(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name                 string
		annotations          map[string]string
		wantImage, wantEvent string
		wantPartition        int32
		wantAnnotations      map[string]string
		wantMessage          string
	}{
		{name: "Rollback: the current revision's template back, in one Update with rolled-back-from",
			annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"}, wantImage: "app:1", wantPartition: 0,
			wantAnnotations: map[string]string{failure.RolledBackFromAnnotation: "2"}, wantEvent: "Warning RolledBack",
			wantMessage: "1 of 1 new pods failed, threshold 1 (web-3: CrashLoopBackOff); rolled back from revision 2 to 1"},
		{name: "Pause: partition raised to 3 with partition-before-pause 0 and paused-on-failure 2",
			annotations: map[string]string{failure.OnFailureAnnotation: "Pause"}, wantImage: "app:crash", wantPartition: 3,
			wantAnnotations: map[string]string{failure.PartitionBeforePauseAnnotation: "0", failure.PausedOnFailureAnnotation: "2"}, wantEvent: "Warning RolloutPaused",
			wantMessage: "1 of 1 new pods failed, threshold 1 (web-3: CrashLoopBackOff); paused on revision 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, revs := healSet(0, tc.annotations)
			pods := []*corev1.Pod{setPod(set, 0, "web-1", true), setPod(set, 1, "web-1", true), setPod(set, 2, "web-1", true), crashing(setPod(set, 3, "web-2", false))}
			plan := planFailure(set, pods, revs, false, now)
			w := &controllertest.SetWriter[*appsv1.StatefulSet]{}
			rec := record.NewFakeRecorder(10)
			c := &Controller{setWriter: w, recorder: rec}
			if err := c.carryOut(context.Background(), set, pods, revs, plan, now); err != nil {
				t.Fatal(err)
			}
			controllertest.CheckActed(t, w)
			got := w.Updates[0]
			if img := got.Spec.Template.Spec.Containers[0].Image; img != tc.wantImage {
				t.Errorf("image %s, want %s", img, tc.wantImage)
			}
			if p := partitionOf(got); p != tc.wantPartition {
				t.Errorf("partition %d, want %d", p, tc.wantPartition)
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
			// The records make the next sync leave it alone, even on the same cache.
			if again := planFailure(got, pods, revs, false, now); again.Act != failure.None {
				t.Errorf("after the write the plan acts again: %s", again.Act)
			}
		})
	}
}

// One replica whose crash-looping pod was Ready long enough for the update revision
// to become current: judged until that revision is marked complete, and rolled back
// to the revision before it.
func TestPlanFailureUntilComplete(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		complete  bool
		ready     bool
		wantAct   failure.Action
		wantMark  bool
		wantImage string
	}{
		{name: "revision 2 current, its pod crash-looping: rolled back to revision 1", wantAct: failure.Rollback, wantImage: "app:1"},
		{name: "revision 2 completed once, its pod crash-looping later: left alone", complete: true, wantAct: failure.None},
		{name: "revision 2 current, its pod Ready an hour: marked complete", ready: true, wantAct: failure.None, wantMark: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, _ := healSet(0, map[string]string{failure.OnFailureAnnotation: "Rollback"})
			one := int32(1)
			set.Spec.Replicas = &one
			old := set.DeepCopy()
			old.Spec.Template.Spec.Containers[0].Image = "app:1"
			r1, r2 := setRevision(t, old, "web-1", 1), setRevision(t, set, "web-2", 2)
			if tc.complete {
				r2.Annotations = map[string]string{failure.CompleteAnnotation: "true"}
			}
			revs := revisions{current: r2, update: r2, currentSet: set, updateSet: set, all: []*appsv1.ControllerRevision{r1, r2}}
			pod := setPod(set, 0, "web-2", tc.ready)
			if !tc.ready {
				crashing(pod)
			}
			plan := planFailure(set, []*corev1.Pod{pod}, revs, false, now)
			if plan.Act != tc.wantAct || plan.MarkComplete != tc.wantMark {
				t.Fatalf("act %s, mark complete %v; want %s, %v", plan.Act, plan.MarkComplete, tc.wantAct, tc.wantMark)
			}
			if tc.wantImage == "" {
				return
			}
			next, outcome, err := actOnFailure(set, []*corev1.Pod{pod}, revs, plan.Act, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if img := next.Spec.Template.Spec.Containers[0].Image; img != tc.wantImage || outcome != "rolled back from revision 2 to 1" {
				t.Errorf("image %s, outcome %q; want %s, rolled back from revision 2 to 1", img, outcome, tc.wantImage)
			}
		})
	}
}

// setRevision is revision n of set, named name, recording its template.
func setRevision(t *testing.T, set *appsv1.StatefulSet, name string, n int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := history.TemplatePatch(set)
	if err != nil {
		t.Fatal(err)
	}
	r := rev(name)
	r.Revision, r.Data.Raw = n, data
	return r
}
