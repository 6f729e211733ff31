package placement

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newDaemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "logs"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "fluentd:v2"}}}},
		},
	}
}

func TestNodeFit(t *testing.T) {
	ds := newDaemonSet()
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	ssd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"disk": "ssd"}}}
	hdd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"disk": "hdd"}}}
	tainted := ssd.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	evicting := ssd.DeepCopy()
	evicting.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	cordoned := ssd.DeepCopy()
	cordoned.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
	for _, tt := range []struct {
		name string
		node *corev1.Node
		want Fit
	}{
		{"matching node", ssd, Fit{true, true}},
		{"nodeSelector mismatch", hdd, Fit{false, false}},
		{"NoSchedule taint: no new pod, the running one stays", tainted, Fit{false, true}},
		{"NoExecute taint: neither", evicting, Fit{false, false}},
		{"cordoned: daemons tolerate it", cordoned, Fit{true, true}},
	} {
		if got := NodeFit(ds, tt.node); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
