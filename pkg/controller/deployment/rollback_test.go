package deployment

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// The deprecated rollbackTo of the older Deployment APIs, kept by apps/v1 in an
// annotation: upstream's controller still honours it, with these events.
func TestSync_legacyRollback(t *testing.T) {
	tests := []struct {
		name       string
		to         string
		wantImage  string
		wantEvent  string
		wantWrites int
	}{
		{"to revision 1: its template and annotations", "1", "nginx:1.14.2",
			`Normal DeploymentRollback Rolled back deployment "web" to revision 1`, 1},
		{"to 0: the revision before the newest", "0", "nginx:1.15.0",
			`Normal DeploymentRollback Rolled back deployment "web" to revision 2`, 1},
		{"to a revision that does not exist", "9", "nginx:1.16.1",
			"Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to.", 1},
		{"to the current template", "3", "nginx:1.16.1",
			`Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "web"`, 1},
		{"not a number: ignored, as upstream ignores it", "last", "nginx:1.16.1", "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(2, "nginx:1.16.1", "25%", "25%")
			d.Annotations = map[string]string{RollbackToAnnotation: tt.to, history.RevisionAnnotation: "3",
				history.ChangeCauseAnnotation: "v3", inplace.StrategyAnnotation: string(inplace.IfPossible)}
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonNewReplicaSetAvailable, "done", time.Now())}}
			r1 := replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, 3*time.Hour)
			r1.Annotations[history.ChangeCauseAnnotation] = "v1"
			r2 := replicaSetOf(d, "nginx:1.15.0", 2, 0, 0, 2*time.Hour)
			cur := replicaSetOf(d, "nginx:1.16.1", 3, 2, 2, time.Hour)
			cur.Annotations[history.ChangeCauseAnnotation] = "v3" // copied from d
			for _, rs := range []*appsv1.ReplicaSet{r1, r2, cur} {
				rs.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
			}
			f := newFixture(t, d, r1, r2, cur)
			f.sync()
			got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
			if img := got.Spec.Template.Spec.Containers[0].Image; img != tt.wantImage {
				t.Errorf("template image %s, want %s", img, tt.wantImage)
			}
			if ev := f.events(); ev != tt.wantEvent {
				t.Errorf("events %q, want %q", ev, tt.wantEvent)
			}
			if tt.wantWrites < 0 {
				return // no rollback asked for: the rollout goes on as usual
			}
			if w := f.writes(); len(w) != tt.wantWrites || w[0] != "update deployments web" {
				t.Errorf("writes %v, want the Deployment written once", w)
			}
			if _, left := got.Annotations[RollbackToAnnotation]; left {
				t.Errorf("%s left on the Deployment", RollbackToAnnotation)
			}
			if got.Annotations[inplace.StrategyAnnotation] != string(inplace.IfPossible) || got.Annotations[history.RevisionAnnotation] != "3" {
				t.Errorf("annotations %v: the in-place opt-in and the revision must stay", got.Annotations)
			}
			if _, hashed := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hashed {
				t.Errorf("the template took the ReplicaSet's pod-template-hash: %v", got.Spec.Template.Labels)
			}
			if tt.to == "1" && got.Annotations[history.ChangeCauseAnnotation] != "v1" {
				t.Errorf("change-cause %q, want revision 1's (v1)", got.Annotations[history.ChangeCauseAnnotation])
			}
		})
	}
}

// The in-place opt-in is the workload's: every ReplicaSet carries it, so that `kubectl
// rollout undo`, which copies a ReplicaSet's annotations back onto the Deployment,
// keeps it whatever revision it goes back to.
func TestSync_settingsAreKeptOnEveryReplicaSet(t *testing.T) {
	d := newDeployment(2, "nginx:1.16.1", "25%", "25%")
	d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible), inplace.GracePeriodAnnotation: "2"}
	before := replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, 2*time.Hour) // made before the opt-in
	before.Annotations["kroll.dev/retired-setting"] = "x"
	cur := replicaSetOf(d, "nginx:1.16.1", 2, 2, 2, time.Hour)
	cur.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
	cur.Annotations[inplace.GracePeriodAnnotation] = "2"
	f := newFixture(t, d, before, cur)
	f.sync()
	if w := f.writes(); strings.Join(w, ",") != "update replicasets "+before.Name {
		t.Fatalf("writes %v, want only the old ReplicaSet updated", w)
	}
	rs := f.lastReplicaSetWrite()
	if rs.Annotations[inplace.StrategyAnnotation] != string(inplace.IfPossible) || rs.Annotations[inplace.GracePeriodAnnotation] != "2" {
		t.Errorf("old ReplicaSet annotations %v: want the Deployment's settings", rs.Annotations)
	}
	if _, kept := rs.Annotations["kroll.dev/retired-setting"]; kept {
		t.Errorf("a setting the Deployment no longer has stayed on its ReplicaSet: %v", rs.Annotations)
	}

	// An undo copied a hand-over record onto the Deployment: it goes.
	d.Annotations[inplace.LeavingAnnotation] = "web-abc"
	f = newFixture(t, d, rs, cur)
	f.sync()
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if _, left := got.Annotations[inplace.LeavingAnnotation]; left || strings.Join(f.writes(), ",") != "update deployments web" {
		t.Errorf("writes %v, annotations %v: want the record taken off the Deployment", f.writes(), got.Annotations)
	}
}

// fakeWriter records the controller's writes instead of making them.
type fakeWriter struct {
	writes []string
	// updated, statuses and replicaSets are the objects written, in order: Deployments
	// (metadata and spec), Deployments' status, ReplicaSets updated.
	updated, statuses []*appsv1.Deployment
	replicaSets       []*appsv1.ReplicaSet
	// stopStatus makes the first status write fail (the controller stopped there).
	stopStatus bool
}

var _ writer = &fakeWriter{}

var errStopped = errors.New("stopped at this write")

func (f *fakeWriter) updateDeployment(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	f.writes = append(f.writes, "update deployment "+d.Name)
	f.updated = append(f.updated, d.DeepCopy())
	return d, nil
}
func (f *fakeWriter) updateStatus(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	if f.stopStatus {
		f.stopStatus = false
		return nil, errStopped
	}
	f.writes = append(f.writes, "update status "+d.Name)
	f.statuses = append(f.statuses, d.DeepCopy())
	return d, nil
}
func (f *fakeWriter) createReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.writes = append(f.writes, "create replicaset "+rs.Name)
	return rs, nil
}
func (f *fakeWriter) updateReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.writes = append(f.writes, "update replicaset "+rs.Name)
	f.replicaSets = append(f.replicaSets, rs.DeepCopy())
	return rs, nil
}
func (f *fakeWriter) patchReplicaSet(_ context.Context, _, name string, _ types.PatchType, _ []byte) (*appsv1.ReplicaSet, error) {
	f.writes = append(f.writes, "patch replicaset "+name)
	return &appsv1.ReplicaSet{}, nil
}
func (f *fakeWriter) deleteReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) error {
	f.writes = append(f.writes, "delete replicaset "+rs.Name)
	return nil
}

// A settings change reaches old ReplicaSets through the writer, one write each, and is
// the pass's only change.
func TestSync_settingsGoThroughTheWriter(t *testing.T) {
	d := newDeployment(2, "nginx:1.16.1", "25%", "25%")
	d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
	r1 := replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, 2*time.Hour)
	r2 := replicaSetOf(d, "nginx:1.15.0", 2, 0, 0, time.Hour)
	cur := replicaSetOf(d, "nginx:1.16.1", 3, 2, 2, time.Minute)
	cur.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
	f := newFixture(t, d, r1, r2, cur)
	w := &fakeWriter{}
	f.c.writes = w
	f.sync()
	sort.Strings(w.writes)
	want := []string{"update replicaset " + r1.Name, "update replicaset " + r2.Name}
	sort.Strings(want)
	if got := strings.Join(w.writes, ", "); got != strings.Join(want, ", ") {
		t.Errorf("writes: %s; want the two old ReplicaSets updated, nothing else", got)
	}
}
