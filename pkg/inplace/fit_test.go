package inplace

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNextStepResize walks one pod through a resize: app's cpu 100m → 200m (cpu
// NotRequired), or its memory limit 128Mi → 256Mi (memory RestartContainer).
func TestNextStepResize(t *testing.T) {
	now := time.Now()
	cpu := sized()
	cpu.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	memory := sized()
	memory.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	both := cpu.DeepCopy()
	both.Spec.Containers[0].Image = "nginx:2"
	want := func(to *corev1.PodTemplateSpec) Want { return Target{Template: to}.Want() }
	gated := func(p *corev1.Pod, gate corev1.ConditionStatus) *corev1.Pod {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ReadinessGate}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: ReadinessGate, Status: gate})
		return p
	}
	out := func(p *corev1.Pod) *corev1.Pod {
		p = gated(p, corev1.ConditionFalse)
		p.Annotations = map[string]string{StateAnnotation: OutOfService(p, "2", Images(cpu), now.Add(-time.Minute)).Encode()}
		return p
	}
	written := func(p *corev1.Pod, to *corev1.PodTemplateSpec) *corev1.Pod {
		p.Spec.Containers[0].Resources = *to.Spec.Containers[0].Resources.DeepCopy()
		p.Generation++
		return p
	}
	made := func(p *corev1.Pod) *corev1.Pod {
		p.Status.ObservedGeneration = p.Generation
		r := *p.Spec.Containers[0].Resources.DeepCopy()
		p.Status.ContainerStatuses[0].Resources = &r
		// The kubelet reports what each container runs, and that it runs.
		for i, c := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses[i].Image = c.Image
		}
		for i, c := range p.Spec.Containers {
			p.Status.ContainerStatuses[i].Image = c.Image
			p.Status.ContainerStatuses[i].State.Running = &corev1.ContainerStateRunning{}
		}
		return p
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		to    *corev1.PodTemplateSpec
		grace time.Duration
		want  Step
	}{
		{"cpu, NotRequired: resized in service, even with a grace period", gated(running(), corev1.ConditionTrue), cpu, time.Second, WriteResize},
		{"cpu written, the kubelet has not made it: wait", written(running(), cpu), cpu, 0, Wait},
		{"cpu made: done", made(written(running(), cpu)), cpu, 0, Done},
		{"memory, RestartContainer, grace period: taken out first", gated(running(), corev1.ConditionTrue), memory, time.Second, TakeOut},
		{"memory, out of service, grace over: resize", out(running()), memory, time.Second, WriteResize},
		{"memory, no grace period: the resize is the first write", running(), memory, 0, WriteResize},
		{"memory made: put back", made(written(out(running()), memory)), memory, time.Second, PutBack},
		{"image and cpu: the image patch first", running(), both, 0, Patch},
		{"image patched: then the resize", func() *corev1.Pod { p := running(); p.Spec.Containers[0].Image = "nginx:2"; return p }(), both, 0, WriteResize},
		{"resize pending (Deferred): wait", func() *corev1.Pod {
			p := written(running(), cpu)
			p.Status.Conditions = append(p.Status.Conditions, condition(corev1.PodResizePending, corev1.PodReasonDeferred, "no room"))
			return p
		}(), cpu, 0, Wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := NextStep(tt.pod, want(tt.to), tt.grace, now); got != tt.want {
				t.Errorf("NextStep = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWriterResize(t *testing.T) {
	to := sized()
	to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	var rec recorder
	r, err := Writer{Pods: &rec}.Step(t.Context(), running(), Target{Revision: "2", Template: to}, 0, time.Now())
	if err != nil || r.Step != WriteResize || r.TookOut {
		t.Fatalf("Step = %+v, %v; want a resize that takes nothing out", r, err)
	}
	if len(rec.writes) != 1 || !strings.HasPrefix(rec.writes[0], "resize web-1 ") || !strings.Contains(rec.writes[0], `"cpu":"200m"`) {
		t.Errorf("writes = %q, want one pods/resize with cpu 200m", rec.writes)
	}
}

// TestWriterCountsAPatchBeforeAResize: the label patch that starts a cpu change is
// reported as taking the pod out, so that the controller remembers it until its cache
// shows the patch, and does not start another pod's update within the same budget.
func TestWriterCountsAPatchBeforeAResize(t *testing.T) {
	to := sized()
	to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	to.Labels = map[string]string{"app": "web", "rev": "2"}
	var rec recorder
	r, err := Writer{Pods: &rec}.Step(t.Context(), running(), Target{Revision: "2", Template: to}, 0, time.Now())
	if err != nil || r.Step != Patch || !r.TookOut {
		t.Fatalf("Step = %+v, %v; want the label patch, counted as taking the pod out", r, err)
	}
	relabel := sized()
	relabel.Labels = map[string]string{"app": "web", "rev": "2"}
	if r, _ := (Writer{Pods: &rec}).Step(t.Context(), running(), Target{Revision: "2", Template: relabel}, 0, time.Now()); r.Step != Patch || r.TookOut {
		t.Errorf("a label change alone: Step = %+v, want a patch that takes nothing out", r)
	}
}

type recorder struct{ writes []string }

func (r *recorder) PatchPod(_ context.Context, _, name string, b []byte) (*corev1.Pod, error) {
	r.writes = append(r.writes, "pod "+name+" "+string(b))
	return nil, nil
}
func (r *recorder) PatchPodStatus(_ context.Context, _, name string, b []byte) error {
	r.writes = append(r.writes, "status "+name+" "+string(b))
	return nil
}
func (r *recorder) PatchPodResize(_ context.Context, _, name string, b []byte) error {
	r.writes = append(r.writes, "resize "+name+" "+string(b))
	return nil
}

func TestUnfit(t *testing.T) {
	// A 2-cpu node; the pod asks 100m (app) + 50m (sidecar) and goes to 300m + 50m.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}
	to := sized()
	to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("300m")
	other := func(name, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name)}, Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "c", Resources: res("cpu="+cpu, "")}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	// allocatedLess is a pod whose spec asks 1 cpu, a deferred increase: the kubelet
	// allocated it 500m, and 500m is what it holds.
	allocatedLess := other("deferred", "1")
	allocatedLess.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		others []*corev1.Pod
		want   string
	}{
		{"room: 1600m free for 350m", running(), []*corev1.Pod{other("a", "400m")}, ""},
		{"the node's other pods hold 1800m: 200m free for 350m", running(), []*corev1.Pod{other("a", "1"), other("b", "800m")},
			"pod web-1: the resize cannot be made on node n1: needs cpu 350m, 200m free (1800m of 2 held by other pods)"},
		{"a deferred increase holds what was allocated: 1500m free", running(), []*corev1.Pod{allocatedLess, other("b", "1")}, ""},
		{"the pod itself is not counted among the others", running(), []*corev1.Pod{running(), other("a", "1600m")}, ""},
		{"Infeasible from the kubelet: its message", func() *corev1.Pod {
			p := running()
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonInfeasible, noRoom)}
			return p
		}(), nil, "pod web-1: the resize cannot be made on node n1: " + noRoom},
		{"resize made: nothing to judge", func() *corev1.Pod {
			p := running()
			p.Spec.Containers[0].Resources = *to.Spec.Containers[0].Resources.DeepCopy()
			return p
		}(), []*corev1.Pod{other("a", "2")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unfit(tt.pod, to, node, tt.others); got != tt.want {
				t.Errorf("Unfit =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
	if got := Unfit(running(), to, nil, nil); got != "" {
		t.Errorf("Unfit without the node = %q, want nothing judged", got)
	}
}
