package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestDeploymentWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	// 40 replicas, 25%/25%: maxSurge 10, maxUnavailable 10, at least 30 available.
	d := newDeployment(40, "v2", "25%", "25%")
	rs := func(image string, revision, spec, pods, available int32) *appsv1.ReplicaSet {
		r := replicaSetOf(d, image, revision, spec, available, time.Minute)
		r.Status.Replicas = pods
		return r
	}
	cases := []struct {
		name     string
		edit     func(d *appsv1.Deployment)
		newRS    *appsv1.ReplicaSet
		oldRSs   []*appsv1.ReplicaSet
		staged   staging.Decision
		draining bool
		held     string
		want     string
	}{
		{name: "complete: new 40/40 available, no old pod: at rest",
			newRS: rs("v2", 2, 40, 40, 40), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 0, 0, 0)}, want: ""},
		{name: "being deleted: no wait", edit: func(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{Time: now} },
			newRS: rs("v2", 2, 20, 20, 0), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 30, 30, 30)}, want: ""},
		{name: "new 20 (2 available), old 30 (28): total 50 = 40+10 and 30 available ≤ 30: new pods awaited",
			newRS: rs("v2", 2, 20, 20, 2), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 30, 30, 28)}, want: "NewPodsUnavailable"},
		{name: "new 20 (12 available), old 30 (30): 42 available > 30, old may lose 12: no known wait",
			newRS: rs("v2", 2, 20, 20, 12), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 30, 30, 30)}, want: "NoWaitKnown"},
		{name: "same, the old ReplicaSet has not observed its last size: waits on it",
			newRS: rs("v2", 2, 20, 20, 12), oldRSs: []*appsv1.ReplicaSet{func() *appsv1.ReplicaSet {
				r := rs("v1", 1, 30, 30, 30)
				r.Generation, r.Status.ObservedGeneration = 3, 2
				return r
			}()}, want: "ReplicaSetNotObserved"},
		{name: "new 20, old 20: room to grow, no known wait",
			newRS: rs("v2", 2, 20, 20, 10), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 20, 20, 20)}, want: "NoWaitKnown"},
		{name: "old pods draining beyond their size: the new ReplicaSet grows once they are gone",
			newRS: rs("v2", 2, 20, 20, 20), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 10, 14, 10)}, draining: true, want: "OldPodsTerminating"},
		{name: "new full at 40 (35 available), old scaled to 0 with 3 pods left: new pods awaited",
			newRS: rs("v2", 2, 40, 40, 35), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 0, 3, 0)}, want: "NewPodsUnavailable"},
		{name: "new full and available, 3 old pods still terminating",
			newRS: rs("v2", 2, 40, 40, 40), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 0, 3, 0)}, want: "OldPodsTerminating"},
		{name: "new ReplicaSet has 10 of 20 pods (its controller has not created the rest): new pods awaited",
			newRS: rs("v2", 2, 20, 10, 0), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 30, 30, 30)}, want: "NewPodsUnavailable"},
		{name: "paused mid-rollout", edit: func(d *appsv1.Deployment) { d.Spec.Paused = true },
			newRS: rs("v2", 2, 20, 20, 20), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 20, 20, 20)}, want: "Paused"},
		{name: "paused and complete: at rest", edit: func(d *appsv1.Deployment) { d.Spec.Paused = true },
			newRS: rs("v2", 2, 40, 40, 40), want: ""},
		{name: "progress deadline exceeded", edit: func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: rollout.ReasonProgressDeadlineExceeded}}
		}, newRS: rs("v2", 2, 20, 20, 2), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 30, 30, 28)}, want: "ProgressDeadlineExceeded"},
		{name: "staged, held at a timed pause",
			newRS: rs("v2", 2, 4, 4, 4), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 36, 36, 36)},
			staged: staging.Decision{Phase: staging.StepWaiting, Partition: 36, Until: now.Add(time.Minute), Message: "step 1/3: 10%, paused for 1m"},
			want:   "StagedStepHeld"},
		{name: "in place, held by a budget: the budget's words",
			newRS: rs("v2", 2, 4, 4, 4), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 36, 36, 36)},
			held: "waiting for PodDisruptionBudget web-pdb: 2 pods to take down, disruptionsAllowed 0", want: "BudgetExhausted"},
		{name: "no new ReplicaSet yet", oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 40, 40, 40)}, want: "NewReplicaSetNotCreated"},
		{name: "Recreate: old pods still there", edit: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, newRS: rs("v2", 2, 0, 0, 0), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 0, 5, 0)}, want: "OldPodsTerminating"},
		{name: "Recreate: new pods coming up", edit: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, newRS: rs("v2", 2, 40, 40, 12), oldRSs: []*appsv1.ReplicaSet{rs("v1", 1, 0, 0, 0)}, want: "NewPodsUnavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dd := d.DeepCopy()
			if c.edit != nil {
				c.edit(dd)
			}
			got := deploymentWait(waitView{d: dd, newRS: c.newRS, oldRSs: c.oldRSs, staged: c.staged, draining: c.draining, held: c.held, now: now})
			if got.Reason != c.want || c.held != "" && got.Message != c.held {
				t.Fatalf("reason %q (%s), want %q", got.Reason, got.Message, c.want)
			}
		})
	}
}

func TestFirstUnavailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	pod := func(name string, age time.Duration, readyFor time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		if readyFor >= 0 {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}
		}
		return p
	}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		minReady int32
		want     string // "" for none
	}{
		{"all available: none", []*corev1.Pod{pod("a", time.Minute, time.Minute), pod("b", time.Minute, time.Minute)}, 0, ""},
		{"two pending: the oldest", []*corev1.Pod{pod("young", time.Second, -1), pod("old", time.Hour, -1), pod("ok", time.Hour, time.Minute)}, 0, "old"},
		{"ready 3 s with minReadySeconds 10: not yet available", []*corev1.Pod{pod("a", time.Minute, time.Minute), pod("b", time.Minute, 3*time.Second)}, 10, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := firstUnavailable(c.pods, c.minReady, now)
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("got %v, want none", got)
			case c.want != "" && (len(got) < 2 || got[1] != c.want):
				t.Fatalf("got %v, want %s first", got, c.want)
			}
		})
	}
}
