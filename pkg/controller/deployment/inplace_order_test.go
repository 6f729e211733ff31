package deployment

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// A pass that resizes pods which arrived and clears the record of a finished round
// writes the resizes first: the round's end waits for them, not for the record. A
// record that names pods (a new pick) goes before them, as the take-overs wait for it.
func TestApplyHandOver_clearingRecordsAfterResizes(t *testing.T) {
	d := newDeployment(2, "nginx:1.16.1", "0", "1")
	d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	old := replicaSetOf(d, "nginx:1.16.1", 1, 1, 1, time.Hour)
	old.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	old.Name = "web-old"
	cur := replicaSetOf(d, "nginx:1.16.1", 2, 2, 1, time.Minute)
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.Generation, rs.Status.ObservedGeneration = 1, 1
	}
	inplace.SetNames(old, inplace.LeavingAnnotation, sets.New("a", "b"))
	inplace.SetNames(cur, inplace.ArrivingAnnotation, sets.New("a"))
	arrived := podOf(cur, "a")
	arrived.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}

	for _, tt := range []struct {
		name   string
		record inplace.Record
		want   []string
	}{
		{"a record that clears", inplace.Record{RS: old, Replicas: 1},
			[]string{"patch pods/resize a", "patch replicasets " + old.Name}},
		{"a record that names a pick", inplace.Record{RS: old, Replicas: 0, Leaving: sets.New("b")},
			[]string{"patch replicasets " + old.Name, "patch pods/resize a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []runtime.Object{d, old, cur, arrived}...)
			p := newPass(d, []*appsv1.ReplicaSet{old, cur})
			plan := inplace.HandOverPlan{Records: []inplace.Record{tt.record}, Resize: []*corev1.Pod{arrived}}
			if _, err := f.c.applyHandOver(context.Background(), p, plan); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.writes(), "; "); got != strings.Join(tt.want, "; ") {
				t.Errorf("wrote %s, want %s", got, strings.Join(tt.want, "; "))
			}
		})
	}
}
