package replicaset

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/kroll-dev/kroll/pkg/disruption"
)

func TestSetBudgetCondition(t *testing.T) {
	then, now := time.Unix(100, 0), time.Unix(200, 0)
	held := appsv1.ReplicaSetCondition{Type: disruption.ConditionType, Status: corev1.ConditionFalse,
		Reason: disruption.ReasonBudgetExhausted, Message: "old words", LastTransitionTime: metav1.NewTime(then)}
	failure := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}
	for _, tc := range []struct {
		name     string
		before   []appsv1.ReplicaSetCondition
		held     bool
		want     string // message of the condition after, "" for none
		wantTime time.Time
		others   int
	}{
		{"eviction refused: condition set now", nil, true, "new words", now, 0},
		{"still refused: message updated, transition time kept", []appsv1.ReplicaSetCondition{held}, true, "new words", then, 0},
		{"budget allows again: condition removed", []appsv1.ReplicaSetCondition{held}, false, "", time.Time{}, 0},
		{"removed, ReplicaFailure kept", []appsv1.ReplicaSetCondition{failure, held}, false, "", time.Time{}, 1},
		{"never held: nothing to do", []appsv1.ReplicaSetCondition{failure}, false, "", time.Time{}, 1},
	} {
		status := appsv1.ReplicaSetStatus{Conditions: append([]appsv1.ReplicaSetCondition(nil), tc.before...)}
		SetBudgetCondition(&status, tc.held, "new words", now)
		c := condition(&status, disruption.ConditionType)
		switch {
		case tc.want == "" && c != nil:
			t.Errorf("%s: condition %+v left", tc.name, *c)
		case tc.want != "" && c == nil:
			t.Errorf("%s: no condition", tc.name)
		case c != nil && (c.Message != tc.want || !c.LastTransitionTime.Time.Equal(tc.wantTime) || c.Status != corev1.ConditionFalse || c.Reason != disruption.ReasonBudgetExhausted):
			t.Errorf("%s: condition %+v, want message %q since %v", tc.name, *c, tc.want, tc.wantTime)
		}
		if others := len(status.Conditions); c == nil && others != tc.others {
			t.Errorf("%s: %d other conditions, want %d", tc.name, others, tc.others)
		}
	}
}

// budgetFixture is an old ReplicaSet "web-old" of Deployment web (setting as given),
// at 3 of its 5 ready pods, with the PodDisruptionBudget web-pdb allowing none, and a
// fake pod control that refuses the eviction of the pods named in refused.
func budgetFixture(t *testing.T, setting string, refused ...string) (*fixture, *appsv1.ReplicaSet) {
	t.Helper()
	replicas := int32(5)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	if setting != "" {
		d.Annotations = map[string]string{disruption.Annotation: setting}
	}
	d.Spec.Template = newReplicaSet("x", 1).Spec.Template
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2" // the old ReplicaSet runs nginx
	rs := newReplicaSet("web-old", 3)
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptrTrue()}}
	var objects []any
	objects = append(objects, rs)
	for i := range 5 {
		objects = append(objects, ownedPod(rs, fmt.Sprintf("web-old-%d", i)))
	}
	f := newFixture(t, objects...)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	dInformer, pdbInformer := factory.Apps().V1().Deployments(), factory.Policy().V1().PodDisruptionBudgets()
	if err := dInformer.Informer().GetIndexer().Add(d); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default"},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, DesiredHealthy: 4, CurrentHealthy: 4, ExpectedPods: 5}}
	if err := pdbInformer.Informer().GetIndexer().Add(pdb); err != nil {
		t.Fatal(err)
	}
	if err := f.c.RespectBudgets(dInformer, pdbInformer, disruption.Ignore); err != nil {
		t.Fatal(err)
	}
	f.pods.EvictErr = map[string]error{}
	for _, name := range refused {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web-pdb needs 4 healthy pods and has 4 currently"}}
		f.pods.EvictErr[name] = err
	}
	return f, rs
}

func ptrTrue() *bool { b := true; return &b }

func TestSync_budgets(t *testing.T) {
	for _, tc := range []struct {
		name             string
		setting          string
		refused          []string
		evicted, deleted int
		condition        string // the ReplicaSet's condition message after, "" for none
	}{
		{"Ignore: the old pods are deleted as upstream", "Ignore", nil, 0, 2, ""},
		{"no setting, default Ignore: deleted", "", nil, 0, 2, ""},
		{"Respect, budget allows: evicted", "Respect", nil, 2, 2, ""},
		{"Respect, budget exhausted: the pods stay, the ReplicaSet says why", "Respect", []string{"web-old-0", "web-old-1", "web-old-2", "web-old-3", "web-old-4"}, 0, 0,
			"waiting for PodDisruptionBudget web-pdb: 2 pods to take down, disruptionsAllowed 0 (4 of 5 pods must stay healthy, 4 are)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, rs := budgetFixture(t, tc.setting, tc.refused...)
			if err := f.c.sync(context.Background(), "default/web-old"); err != nil {
				t.Fatal(err)
			}
			if len(f.pods.Evicted) != tc.evicted || len(f.pods.Deleted) != tc.deleted {
				t.Errorf("evicted %v, deleted %v; want %d evicted, %d gone", f.pods.Evicted, f.pods.Deleted, tc.evicted, tc.deleted)
			}
			got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), rs.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := condition(&got.Status, disruption.ConditionType)
			switch {
			case tc.condition == "" && c != nil:
				t.Errorf("condition %q, want none", c.Message)
			case tc.condition != "" && (c == nil || c.Message != tc.condition || c.Reason != disruption.ReasonBudgetExhausted):
				t.Errorf("condition %+v, want %q", c, tc.condition)
			}
		})
	}
}

// Given a Deployment that respects its budgets and four old pods to take down, when
// the ReplicaSet controller evicts them, then it has at most two evictions in the API
// server at once: the server checks and updates the same budgets' status for each,
// and evictions sent together conflict with one another there.
func TestSync_evictionsTwoAtATime(t *testing.T) {
	f, rs := budgetFixture(t, "Respect")
	*rs.Spec.Replicas = 1 // the lister's own object: five pods, one wanted
	f.pods.EvictTakes = 20 * time.Millisecond
	if err := f.c.sync(context.Background(), "default/web-old"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Evicted) != 4 || f.pods.MostEvictingAtOnce != 2 {
		t.Errorf("evicted %v with at most %d evictions in flight at once, want 4 evicted, 2 at a time", f.pods.Evicted, f.pods.MostEvictingAtOnce)
	}
}
