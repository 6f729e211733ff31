package inplace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResizing(t *testing.T) {
	// The target: app's cpu request 100m → 200m.
	to := sized()
	to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	written := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = *to.Spec.Containers[0].Resources.DeepCopy() }
	made := func(p *corev1.Pod) {
		written(p)
		r := p.Spec.Containers[0].Resources
		p.Status.ContainerStatuses[0].Resources = &r
		p.Status.ContainerStatuses[0].AllocatedResources = r.Requests.DeepCopy()
	}
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want bool
		// back: judged against the template the pod came from (an undo), not to.
		back bool
	}{
		{"due: the spec still asks for 100m", func(*corev1.Pod) {}, true, false},
		{"written, the kubelet has not seen it: reports 100m for a spec of 200m", written, true, false},
		{"accepted: allocated 200m, still reporting 100m, in progress", func(p *corev1.Pod) {
			written(p)
			p.Status.ContainerStatuses[0].AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizeInProgress, "", "")}
		}, true, false},
		{"Deferred: reported as the spec once was, a condition set", func(p *corev1.Pod) {
			made(p)
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, "")}
		}, true, false},
		{"undone before actuation: spec and reported 100m again, 200m still allocated", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		}, true, true},
		{"made: 200m reported and allocated, no condition", made, false, false},
		{"a new pod whose containers have not started reports nothing", func(p *corev1.Pod) {
			written(p)
			p.Status.ContainerStatuses = nil
			p.Status.InitContainerStatuses = nil
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := running()
			tt.edit(p)
			target := to
			if tt.back {
				target = sized()
			}
			if got := Resizing(p, target); got != tt.want {
				t.Errorf("Resizing = %v, want %v", got, tt.want)
			}
		})
	}
}
