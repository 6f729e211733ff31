package deployment

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// staged is a 20-replica Deployment of app:2 at 25%/25% with annotations, its old
// ReplicaSet of app:1 at 20 pods (revision 1, an hour old).
func staged(annotations map[string]string) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	d := newDeployment(20, "app:2", "25%", "25%")
	d.Annotations = annotations
	return d, settled(d, replicaSetOf(d, "app:1", 1, 20, 20, time.Hour))
}

// settled is rs with d's settings kept on it, as the controller keeps them.
func settled(d *appsv1.Deployment, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	history.KeepSettings(d, rs)
	return rs
}

func TestSync_stepRecordIsWrittenAloneFirst(t *testing.T) {
	d, old := staged(map[string]string{staging.StepsAnnotation: "10%, pause, 100%"})
	f := newFixture(t, d, old)
	f.sync()
	if got, want := strings.Join(f.writes(), "; "), "update deployments web"; got != want {
		t.Fatalf("writes %q, want only %q: the record goes alone, before anything else", got, want)
	}
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if r := got.Annotations[staging.StepAnnotation]; r != "0/3" || got.Annotations[staging.StepRevisionAnnotation] != history.TemplateHash(&d.Spec.Template, nil) {
		t.Errorf("record %q for %q", r, got.Annotations[staging.StepRevisionAnnotation])
	}
}

func TestSync_partitionBoundsTheNewReplicaSet(t *testing.T) {
	// Partition 18 of 20: the new ReplicaSet is created with 2 (maxSurge would allow 5).
	d, old := staged(map[string]string{staging.PartitionAnnotation: "18"})
	f := newFixture(t, d, old)
	f.sync()
	rs := f.created()
	if rs.Spec.Template.Spec.Containers[0].Image != "app:2" || *rs.Spec.Replicas != 2 {
		t.Errorf("new ReplicaSet %s with %d replicas, want app:2 with 2", rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
	}
}

func TestSync_heldAtThePartitionReportsIt(t *testing.T) {
	d, old := staged(map[string]string{staging.PartitionAnnotation: "18"})
	old.Spec.Replicas, old.Status.Replicas, old.Status.AvailableReplicas = ptr(int32(18)), 18, 18
	newRS := settled(d, replicaSetOf(d, "app:2", 2, 2, 2, time.Minute))
	f := newFixture(t, d, old, newRS)
	f.sync()
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	p := rollout.Condition(&got.Status, appsv1.DeploymentProgressing)
	want := `ReplicaSet "` + newRS.Name + `" reached its partition: 2 of 20 pods updated, 18 kept on older revisions.`
	if p == nil || p.Reason != reasonPartitionReached || p.Message != want {
		t.Errorf("Progressing %+v, want PartitionReached: %s", p, want)
	}
	s := rollout.Condition(&got.Status, staging.ConditionType)
	if s == nil || s.Reason != string(staging.PartitionReached) || !strings.HasPrefix(s.Message, "partition 18 reached") {
		t.Errorf("Staged %+v", s)
	}
	if ev := f.events(); !strings.Contains(ev, "Normal RolloutStep partition 18 reached") {
		t.Errorf("events %q, want the RolloutStep event", ev)
	}
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "update replicasets") {
			t.Errorf("held at the partition, yet %s", w)
		}
	}
}

func TestSync_heldAtThePartitionNeverTimesOut(t *testing.T) {
	// Held for an hour with a 600s deadline: still PartitionReached, never
	// ProgressDeadlineExceeded.
	d, old := staged(map[string]string{staging.PartitionAnnotation: "18"})
	old.Spec.Replicas, old.Status.Replicas, old.Status.AvailableReplicas = ptr(int32(18)), 18, 18
	newRS := settled(d, replicaSetOf(d, "app:2", 2, 2, 2, time.Hour))
	long := metav1.NewTime(time.Now().Add(-time.Hour))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 20, UpdatedReplicas: 2, AvailableReplicas: 20,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "True", Reason: rollout.ReasonReplicaSetUpdated,
			LastUpdateTime: long, LastTransitionTime: long}}}
	f := newFixture(t, d, old, newRS)
	f.sync()
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if p := rollout.Condition(&got.Status, appsv1.DeploymentProgressing); p == nil || p.Reason != reasonPartitionReached || p.Status != "True" {
		t.Errorf("Progressing %+v, want True/PartitionReached", p)
	}
}

func TestSync_invalidStagingIsAnnouncedOnceAndIgnored(t *testing.T) {
	d, old := staged(map[string]string{staging.PartitionAnnotation: "-1"})
	f := newFixture(t, d, old)
	f.sync()
	f.c.announceStagingProblem(d, staging.SettingsOf(d.Annotations)) // the next pass: not again
	ev := f.events()
	if n := strings.Count(ev, "Warning InvalidStaging"); n != 1 || !strings.Contains(ev, staging.PartitionAnnotation) {
		t.Errorf("events %q: want one InvalidStaging naming %s", ev, staging.PartitionAnnotation)
	}
	if rs := f.created(); *rs.Spec.Replicas != 5 {
		t.Errorf("new ReplicaSet with %d, want 5 (maxSurge, as without the annotation)", *rs.Spec.Replicas)
	}
}

func TestSync_recreateIsNotStaged(t *testing.T) {
	d, old := staged(map[string]string{staging.PartitionAnnotation: "10"})
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	f := newFixture(t, d, old)
	f.sync()
	if ev := f.events(); !strings.Contains(ev, "Warning "+reasonRecreateNotStaged+" Recreate cannot be staged") {
		t.Errorf("events %q", ev)
	}
	if rs := f.lastReplicaSetWrite(); *rs.Spec.Replicas != 0 {
		t.Errorf("old ReplicaSet left with %d, want 0: Recreate goes on as always", *rs.Spec.Replicas)
	}
}

func TestSync_abort(t *testing.T) {
	tests := []struct {
		name, asked, want, event string
	}{
		{"the revision rolling out is rolled back", "2", "app:1", "Warning RolledBack aborted by request; rolled back from revision 2 to 1"},
		{"a stale request is removed", "7", "app:2", "Warning AbortIgnored abort of revision 7 ignored: revision 2 is rolling out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, old := staged(map[string]string{staging.AbortAnnotation: tt.asked})
			old.Spec.Replicas, old.Status.Replicas, old.Status.AvailableReplicas = ptr(int32(10)), 10, 10
			newRS := settled(d, replicaSetOf(d, "app:2", 2, 10, 10, time.Minute))
			f := newFixture(t, d, old, newRS)
			f.sync()
			got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
			if _, found := got.Annotations[staging.AbortAnnotation]; found || got.Spec.Template.Spec.Containers[0].Image != tt.want {
				t.Errorf("image %s, annotations %v: want %s, the request removed", got.Spec.Template.Spec.Containers[0].Image, got.Annotations, tt.want)
			}
			if ev := f.events(); !strings.Contains(ev, tt.event) {
				t.Errorf("events %q, want %q", ev, tt.event)
			}
			if tt.want == "app:1" {
				if c := rollout.Condition(&got.Status, failure.ConditionRolloutFailed); c == nil || c.Reason != failure.ReasonAborted {
					t.Errorf("RolloutFailed %+v, want reason Aborted", c)
				}
			}
		})
	}
}

func TestStepOf(t *testing.T) {
	tests := []struct{ reason, message, want string }{
		{"StepPaused", "step 1/5: 10% (2 of 20 updated), paused until promoted", "StepPaused step 1/5"},
		{"Progressing", "step 2/5: rolling out to 50% (4 of 20 updated)", "Progressing step 2/5"},
		{"PartitionReached", "partition 10 reached: 10 of 20 updated, 10 kept on the old revisions", "PartitionReached partition 10"},
		{"Progressing", "partition 10: rolling out to 10 of 20 (3 updated)", "Progressing partition 10"},
	}
	for _, tt := range tests {
		if got := stepOf(tt.reason, tt.message); got != tt.want {
			t.Errorf("stepOf(%q, %q) = %q, want %q", tt.reason, tt.message, got, tt.want)
		}
	}
}
func ptr[T any](v T) *T { return &v }

// created is the ReplicaSet the pass created.
func (f *fixture) created() *appsv1.ReplicaSet {
	f.t.Helper()
	for _, a := range f.client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok {
			if rs, ok := c.GetObject().(*appsv1.ReplicaSet); ok {
				return rs
			}
		}
	}
	f.t.Fatal("no ReplicaSet was created")
	return nil
}

func TestSync_movingOnFromAnHourLongHoldDoesNotTimeOut(t *testing.T) {
	// Held at partition 18 for an hour (Progressing PartitionReached since then), the
	// partition is lowered to 10. With maxSurge 0 the first pass after it only scales
	// the old ReplicaSet down, which its status does not show yet: no progress seen,
	// and the 600s deadline counts from now, not from when the hold began.
	d, old := staged(map[string]string{staging.PartitionAnnotation: "10"})
	d.Spec.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(0))
	old.Spec.Replicas, old.Status.Replicas, old.Status.AvailableReplicas = ptr(int32(18)), 18, 18
	newRS := settled(d, replicaSetOf(d, "app:2", 2, 2, 2, time.Hour))
	long := metav1.NewTime(time.Now().Add(-time.Hour))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 20, UpdatedReplicas: 2, ReadyReplicas: 20, AvailableReplicas: 20,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "True", Reason: reasonPartitionReached,
			LastUpdateTime: long, LastTransitionTime: long}}}
	f := newFixture(t, d, old, newRS)
	f.sync()
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	p := rollout.Condition(&got.Status, appsv1.DeploymentProgressing)
	if p == nil || p.Status != "True" || p.Reason != rollout.ReasonReplicaSetUpdated || time.Since(p.LastUpdateTime.Time) > time.Minute {
		t.Errorf("Progressing %+v, want True/ReplicaSetUpdated updated now", p)
	}
}

func TestDeleteDeployment_forgetsTheProblemsItAnnounced(t *testing.T) {
	d, old := staged(map[string]string{staging.PartitionAnnotation: "-1", failure.OnFailureAnnotation: "Sometimes"})
	f := newFixture(t, d, old)
	f.c.announceStagingProblem(d, staging.SettingsOf(d.Annotations))
	f.c.announcePolicyProblem(d, failure.PolicyOf(d.Annotations))
	f.c.deleteDeployment(d)
	for _, key := range []any{d.UID, stagingProblemKey(d)} {
		if v, ok := f.c.announced.Load(key); ok {
			t.Errorf("announced[%v] = %v after the Deployment's deletion, want no entry", key, v)
		}
	}
}
