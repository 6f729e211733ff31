package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// A pass has nothing in place to do, and skips reading every pod for it, only when
// its Deployment is not opted in, no ReplicaSet holds a hand-over record and no pod
// carries the in-place readiness gate (a pod of an earlier opt-in left to settle).
func TestInPlaceIdle(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(pod *corev1.Pod, rsAnnotations, deploymentAnnotations map[string]string)
		idles bool
	}{
		{"not opted in, plain pods", func(*corev1.Pod, map[string]string, map[string]string) {}, true},
		{"opted in", func(_ *corev1.Pod, _ map[string]string, d map[string]string) {
			d[inplace.StrategyAnnotation] = string(inplace.IfPossible)
		}, false},
		{"a hand-over record left on a ReplicaSet", func(_ *corev1.Pod, rs map[string]string, _ map[string]string) {
			rs[inplace.LeavingAnnotation] = "web-a"
		}, false},
		{"a pod with the readiness gate", func(p *corev1.Pod, _ map[string]string, _ map[string]string) {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: inplace.ReadinessGate})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(2, "nginx:1.16.1", "1", "0")
			d.Annotations = map[string]string{}
			rs := replicaSetOf(d, "nginx:1.14.2", 1, 2, 2, 0)
			pod := podOf(rs, "web-a")
			tt.edit(pod, rs.Annotations, d.Annotations)
			f := newFixture(t, []runtime.Object{d, rs, pod, podOf(rs, "web-b")}...)
			if got := f.c.inPlaceIdle(newPass(d, []*appsv1.ReplicaSet{rs})); got != tt.idles {
				t.Errorf("idle %v, want %v", got, tt.idles)
			}
		})
	}
}
