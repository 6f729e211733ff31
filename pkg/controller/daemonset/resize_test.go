package daemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

func TestResizeBlocked(t *testing.T) {
	n2 := "pod logs-b: the resize cannot be made on node n2: needs memory 3Gi, 1Gi free (3Gi of 4Gi held by other pods)"
	n1 := "pod logs-a: the resize cannot be made on node n1: needs memory 3Gi, 2Gi free (2Gi of 4Gi held by other pods)"
	tests := []struct {
		name    string
		mode    inplace.Mode
		unfit   []string
		blocked bool
		message string
	}{
		{"every node can make it: no verdict", inplace.IfPossible, nil, false, ""},
		{"InPlaceIfPossible: the pods are left, named, sorted (a daemon pod cannot move)", inplace.IfPossible, []string{n2, n1}, true,
			n1 + "; " + n2 + "; a DaemonSet's pod cannot move to another node: left as it is"},
		{"InPlaceOnly: JudgeInfeasible's words", inplace.Only, []string{n2}, true, n2 + "; InPlaceOnly recreates no pod"},
		{"opted out: no verdict", inplace.Off, []string{n2}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := resizeBlocked(tt.mode, tt.unfit)
			if ok != tt.blocked || v.Message != tt.message {
				t.Fatalf("resizeBlocked = %v %q, want %v %q", ok, v.Message, tt.blocked, tt.message)
			}
			if ok && (v.Status != corev1.ConditionFalse || v.Reason != inplace.ReasonBlocked || v.EventType != corev1.EventTypeWarning) {
				t.Errorf("verdict %+v, want False/%s with a Warning event", v, inplace.ReasonBlocked)
			}
		})
	}
}

func TestResizing(t *testing.T) {
	limit := func(memory string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}
	}
	ds := func(mode inplace.Mode) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Annotations: map[string]string{inplace.StrategyAnnotation: string(mode)}}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "agent", Resources: limit("256Mi")}}
		return d
	}
	// pod at hash, its spec's limit spec, the kubelet reporting reported.
	pod := func(hash, spec, reported string) *corev1.Pod {
		r := limit(reported)
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{RevisionLabel: hash}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Resources: limit(spec)}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", Resources: &r}}}}
	}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		pod  *corev1.Pod
		want bool
	}{
		{"a pod of the current template, labelled, its resize due (128Mi → 256Mi)", ds(inplace.IfPossible), pod("new", "128Mi", "128Mi"), true},
		{"a pod of the current template, its resize written, reporting 128Mi", ds(inplace.IfPossible), pod("new", "256Mi", "128Mi"), true},
		{"a pod of the current template, resized", ds(inplace.IfPossible), pod("new", "256Mi", "256Mi"), false},
		{"an old pod, not yet started on its update: not resizing", ds(inplace.IfPossible), pod("old", "128Mi", "128Mi"), false},
		{"opted out: a pod resized by hand is none of the rollout's business", ds(inplace.Off), pod("new", "256Mi", "128Mi"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resizing(tt.ds, tt.pod, "new"); got != tt.want {
				t.Errorf("resizing = %v, want %v", got, tt.want)
			}
		})
	}
}
