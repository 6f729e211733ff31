package inplace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// res is requirements from "cpu=100m,memory=64Mi" style lists ("" for none).
func res(requests, limits string) corev1.ResourceRequirements {
	parse := func(s string) corev1.ResourceList {
		if s == "" {
			return nil
		}
		out := corev1.ResourceList{}
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: parse(requests), Limits: parse(limits)}
}

func policy(cpu, memory corev1.ResourceResizeRestartPolicy) []corev1.ContainerResizePolicy {
	return []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: cpu}, {ResourceName: corev1.ResourceMemory, RestartPolicy: memory}}
}

// sized is a template with a sidecar, a plain init container and app; app is
// Burstable (cpu 100m, memory 64Mi requested, memory limited to 128Mi).
func sized() *corev1.PodTemplateSpec {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Image: "busybox:1", Resources: res("cpu=50m", "")},
				{Name: "proxy", Image: "envoy:1", RestartPolicy: &always, Resources: res("cpu=50m,memory=32Mi", "memory=32Mi")},
			},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1", Resources: res("cpu=100m,memory=64Mi", "memory=128Mi"), ResizePolicy: policy(corev1.NotRequired, corev1.RestartContainer)}},
		},
	}
}

func TestDiffResize(t *testing.T) {
	plainInit := ResizeRules{}
	initToo := ResizeRules{InitContainers: true}
	tests := []struct {
		name  string
		rules ResizeRules
		edit  func(*corev1.PodTemplateSpec)
		want  string
		// both, if set, edits the template before the change as well.
		both func(*corev1.PodTemplateSpec)
	}{
		{"cpu request 100m → 200m: in place", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
		}, "[]", nil},
		{"an image and a memory limit together: in place", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "nginx:2"
			t.Spec.Containers[0].Resources = res("cpu=100m,memory=64Mi", "memory=256Mi")
		}, "[]", nil},
		{"a cpu limit added (Burstable stays Burstable): in place", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources = res("cpu=100m,memory=64Mi", "cpu=500m,memory=128Mi")
		}, "[]", nil},
		{"memory limit decrease 128Mi → 96Mi with memory NotRequired: the 1.36 API accepts it", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources = res("cpu=100m,memory=64Mi", "memory=96Mi")
		}, "[]", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].ResizePolicy = policy(corev1.NotRequired, corev1.NotRequired)
		}},
		{"resizePolicy itself cannot change in place", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].ResizePolicy = policy(corev1.NotRequired, corev1.NotRequired)
		}, "[spec.containers[app].resizePolicy]", nil},
		{"a sidecar's memory 32Mi → 48Mi (request and limit): sidecars always resize", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[1].Resources = res("cpu=50m,memory=48Mi", "memory=48Mi")
		}, "[]", nil},
		{"Burstable → Guaranteed: every container limited at its requests", plainInit, func(t *corev1.PodTemplateSpec) {
			for i := range t.Spec.InitContainers {
				t.Spec.InitContainers[i].Resources = res("cpu=50m,memory=32Mi", "cpu=50m,memory=32Mi")
			}
			t.Spec.Containers[0].Resources = res("cpu=100m,memory=64Mi", "cpu=100m,memory=64Mi")
		}, "[spec.containers[app].resources (QoS class Burstable → Guaranteed) " +
			"spec.initContainers[init].resources (QoS class Burstable → Guaranteed) " +
			"spec.initContainers[init].resources (resources of an init container that is not a sidecar cannot be resized on this cluster) " +
			"spec.initContainers[proxy].resources (QoS class Burstable → Guaranteed)]", nil},
		{"a plain init container's cpu, where the cluster allows it: in place", initToo, func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Resources = res("cpu=80m", "")
		}, "[]", nil},
		{"a plain init container's cpu, where the cluster does not", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Resources = res("cpu=80m", "")
		}, "[spec.initContainers[init].resources (resources of an init container that is not a sidecar cannot be resized on this cluster)]", nil},
		{"a plain init container with RestartContainer (allowed on pods made before 1.36), even where the cluster allows init resizes", initToo, func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Resources = res("cpu=80m", "")
		}, "[spec.initContainers[init].resources (an init container that is not a sidecar, with resizePolicy RestartContainer, cannot be resized)]", func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].ResizePolicy = policy(corev1.RestartContainer, corev1.NotRequired)
		}},
		{"ephemeral-storage is not cpu or memory", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests["ephemeral-storage"] = resource.MustParse("1Gi")
		}, "[spec.containers[app].resources.requests[ephemeral-storage] (only cpu and memory can be resized)]", nil},
		{"a memory limit removed (Burstable all the same)", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources = res("cpu=100m,memory=64Mi", "")
		}, "[spec.containers[app].resources.limits[memory] (removed: limits cannot be removed on resize)]", nil},
		{"resources of a pod with pod-level resources", plainInit, func(t *corev1.PodTemplateSpec) {
			r := res("cpu=1", "")
			t.Spec.Resources = &r
			t.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
		}, "[spec.containers[app].resources (the pod has pod-level resources) spec.resources]", nil},
		{"a Windows pod", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			t.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
		}, "[spec.containers[app].resources (a Windows pod cannot be resized) spec.os]", nil},
		{"env still cannot change in place", plainInit, func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
			t.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
		}, "[spec.containers[app].env]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := sized()
			if tt.both != nil {
				tt.both(from)
			}
			to := from.DeepCopy()
			tt.edit(to)
			if got := fmt.Sprint(DiffResize(from, to, tt.rules)); got != tt.want {
				t.Errorf("DiffResize =\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

// Diff keeps naming resources: the controllers do not write pods/resize yet.
func TestDiffStillNamesResources(t *testing.T) {
	from := sized()
	to := from.DeepCopy()
	to.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
	if got := fmt.Sprint(Diff(from, to)); got != "[spec.containers[app].resources]" {
		t.Errorf("Diff = %s", got)
	}
}

// The API refuses to resize a pod with resource claims in a container it may resize,
// even when another container's resources are what changes.
func TestResizeFieldsClaims(t *testing.T) {
	tests := []struct {
		name  string
		claim string // the container with a claim
		rules ResizeRules
		want  string
	}{
		{"app has a claim, app's cpu changes", "app", ResizeRules{}, "[spec.containers[app].resources.claims (a pod with resource claims cannot be resized)]"},
		{"the sidecar has a claim, app's cpu changes", "proxy", ResizeRules{}, "[spec.initContainers[proxy].resources.claims (a pod with resource claims cannot be resized)]"},
		{"a plain init container has a claim, on a cluster that does not resize them: not looked at", "init", ResizeRules{}, "[]"},
		{"a plain init container has a claim, on a cluster that resizes them", "init", ResizeRules{InitContainers: true}, "[spec.initContainers[init].resources.claims (a pod with resource claims cannot be resized)]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := sized()
			for _, list := range [][]corev1.Container{from.Spec.InitContainers, from.Spec.Containers} {
				for i := range list {
					if list[i].Name == tt.claim {
						list[i].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
					}
				}
			}
			to := from.DeepCopy()
			to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			if got := fmt.Sprint(ResizeFields(from, to, tt.rules)); got != tt.want {
				t.Errorf("ResizeFields = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestQOSClass(t *testing.T) {
	one := func(r ...corev1.ResourceRequirements) *corev1.PodSpec {
		s := &corev1.PodSpec{}
		for i, x := range r {
			s.Containers = append(s.Containers, corev1.Container{Name: fmt.Sprint(i), Resources: x})
		}
		return s
	}
	tests := []struct {
		name string
		spec *corev1.PodSpec
		want corev1.PodQOSClass
	}{
		{"nothing requested or limited", one(res("", "")), corev1.PodQOSBestEffort},
		{"only a GPU: not a QoS resource", one(res("nvidia.com/gpu=1", "nvidia.com/gpu=1")), corev1.PodQOSBestEffort},
		{"a zero cpu request counts as none", one(res("cpu=0", "")), corev1.PodQOSBestEffort},
		{"cpu and memory limited at the requests", one(res("cpu=100m,memory=64Mi", "cpu=100m,memory=64Mi")), corev1.PodQOSGuaranteed},
		{"0.1 cpu is 100m", one(res("cpu=0.1,memory=64Mi", "cpu=100m,memory=64Mi")), corev1.PodQOSGuaranteed},
		{"a memory request below its limit", one(res("cpu=100m,memory=32Mi", "cpu=100m,memory=64Mi")), corev1.PodQOSBurstable},
		{"two containers, one without a memory limit", one(res("cpu=100m,memory=64Mi", "cpu=100m,memory=64Mi"), res("cpu=100m", "cpu=100m")), corev1.PodQOSBurstable},
		{"limits only (the API defaults requests to them)", one(res("", "cpu=100m,memory=64Mi")), corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := qosClass(tt.spec); got != tt.want {
				t.Errorf("qosClass = %s, want %s", got, tt.want)
			}
		})
	}
}

// running is a pod made from sized(), its containers reporting the template's resources.
func running() *corev1.Pod {
	tpl := sized()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "u1", Generation: 1, Labels: tpl.Labels}, Spec: *tpl.Spec.DeepCopy()}
	p.Spec.NodeName = "n1"
	p.Status.ObservedGeneration = 1
	for _, c := range p.Spec.InitContainers {
		r := c.Resources
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, Resources: &r})
	}
	for _, c := range p.Spec.Containers {
		r := c.Resources
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Resources: &r, Ready: true})
	}
	return p
}

func TestPlanResize(t *testing.T) {
	tests := []struct {
		name                string
		edit                func(*corev1.PodTemplateSpec)
		containers, initCts string
		restarts            string
	}{
		{"nothing changes", func(*corev1.PodTemplateSpec) {}, "[]", "[]", "[]"},
		{"cpu 0.1 is the 100m it runs with: nothing to resize", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}, "[]", "[]", "[]"},
		{"cpu request 100m → 200m, cpu NotRequired: no restart, the pod keeps serving", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}, "[app]", "[]", "[]"},
		{"memory limit 128Mi → 256Mi, memory RestartContainer: app restarts", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		}, "[app]", "[]", "[app]"},
		{"a memory request 64Mi → 96Mi restarts too: the policy is per resource, request or limit", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("96Mi")
		}, "[app]", "[]", "[app]"},
		{"a sidecar without resizePolicy (NotRequired) and a plain init container: nothing restarts", func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Resources = res("cpu=80m", "")
			t.Spec.InitContainers[1].Resources = res("cpu=80m,memory=32Mi", "memory=32Mi")
		}, "[]", "[init proxy]", "[]"},
		{"a sidecar with memory RestartContainer restarts", func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[1].ResizePolicy = policy(corev1.NotRequired, corev1.RestartContainer)
			t.Spec.InitContainers[1].Resources = res("cpu=50m,memory=48Mi", "memory=48Mi")
		}, "[]", "[proxy]", "[proxy]"},
	}
	names := func(m map[string]corev1.ResourceRequirements) string {
		var out []string
		for _, n := range []string{"app", "init", "proxy"} {
			if _, ok := m[n]; ok {
				out = append(out, n)
			}
		}
		return fmt.Sprint(out)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := sized()
			tt.edit(to)
			r := PlanResize(running(), to)
			if got := names(r.Containers); got != tt.containers {
				t.Errorf("Containers = %s, want %s", got, tt.containers)
			}
			if got := names(r.InitContainers); got != tt.initCts {
				t.Errorf("InitContainers = %s, want %s", got, tt.initCts)
			}
			if got := fmt.Sprint(r.Restarts); got != tt.restarts {
				t.Errorf("Restarts = %s, want %s", got, tt.restarts)
			}
			if r.Restarting() != (tt.restarts != "[]") || r.Empty() != (tt.containers == "[]" && tt.initCts == "[]") {
				t.Errorf("Restarting %v, Empty %v", r.Restarting(), r.Empty())
			}
		})
	}
}

func TestResizePatch(t *testing.T) {
	to := sized()
	to.Spec.Containers[0].Resources = res("cpu=200m,memory=64Mi", "memory=128Mi")
	to.Spec.InitContainers[1].Resources = res("cpu=80m,memory=32Mi", "memory=32Mi")
	b, _ := json.Marshal(PlanResize(running(), to).Patch(running()))
	want := `{"metadata":{"uid":"u1"},"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"200m","memory":"64Mi"}}}],` +
		`"initContainers":[{"name":"proxy","resources":{"limits":{"memory":"32Mi"},"requests":{"cpu":"80m","memory":"32Mi"}}}]}}`
	if string(b) != want {
		t.Errorf("Patch =\n %s\nwant\n %s", b, want)
	}
}

func condition(typ corev1.PodConditionType, reason, msg string) corev1.PodCondition {
	return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
}

// The kubelet's Infeasible message for 3 cpus on a node of 2.
const noRoom = "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"

func TestNextResize(t *testing.T) {
	// The target: app's cpu request 100m → 200m.
	to := sized()
	to.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	// written is the pod once the resize is written (generation 2), as the kubelet has
	// not seen it yet.
	written := func() *corev1.Pod {
		p := running()
		p.Spec.Containers[0].Resources = *to.Spec.Containers[0].Resources.DeepCopy()
		p.Generation = 2
		return p
	}
	// resized is written, and the kubelet made it.
	resized := func() *corev1.Pod {
		p := written()
		p.Status.ObservedGeneration = 2
		r := p.Spec.Containers[0].Resources
		p.Status.ContainerStatuses[0].Resources = &r
		return p
	}
	tests := []struct {
		name string
		mode Mode
		pod  func() *corev1.Pod
		want ResizeStep
		msg  string
	}{
		{"the spec still has 100m: write", IfPossible, running, ResizeWrite, ""},
		{"written, the kubelet has not observed generation 2: wait", IfPossible, written, ResizeWait, ""},
		{"observed, no condition, but the container still reports 100m: wait", IfPossible, func() *corev1.Pod {
			p := written()
			p.Status.ObservedGeneration = 2
			return p
		}, ResizeWait, ""},
		{"PodResizeInProgress: wait", IfPossible, func() *corev1.Pod {
			p := resized()
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizeInProgress, "", "")}
			return p
		}, ResizeWait, ""},
		{"Deferred (other pods hold the room): wait", Only, func() *corev1.Pod {
			p := written()
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough resource: cpu")}
			return p
		}, ResizeWait, ""},
		{"Infeasible under InPlaceIfPossible: recreate this pod", IfPossible, func() *corev1.Pod {
			p := written()
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonInfeasible, noRoom)}
			return p
		}, ResizeRecreate, noRoom},
		{"Infeasible while an older resize is in progress, InPlaceOnly: blocked", Only, func() *corev1.Pod {
			p := written()
			p.Status.Conditions = []corev1.PodCondition{condition(corev1.PodResizeInProgress, "", ""), condition(corev1.PodResizePending, corev1.PodReasonInfeasible, noRoom)}
			return p
		}, ResizeBlocked, noRoom},
		{"the containers report 200m, generation 2 observed, no condition: finished", IfPossible, resized, ResizeFinished, ""},
		{"a later write (generation 3) not observed yet: wait for it too", IfPossible, func() *corev1.Pod {
			p := resized()
			p.Generation = 3
			return p
		}, ResizeWait, ""},
		{"a False PodResizeInProgress left behind does not hold it up", IfPossible, func() *corev1.Pod {
			p := resized()
			c := condition(corev1.PodResizeInProgress, "", "")
			c.Status = corev1.ConditionFalse
			p.Status.Conditions = []corev1.PodCondition{c}
			return p
		}, ResizeFinished, ""},
		{"a container with no status yet: wait", IfPossible, func() *corev1.Pod {
			p := resized()
			p.Status.ContainerStatuses = nil
			return p
		}, ResizeWait, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, msg := NextResize(tt.mode, tt.pod(), to)
			if step != tt.want || msg != tt.msg {
				t.Errorf("NextResize = %s %q, want %s %q", step, msg, tt.want, tt.msg)
			}
			if done := ResizeDone(tt.pod(), to); done != (tt.want == ResizeFinished) {
				t.Errorf("ResizeDone = %v", done)
			}
		})
	}
}

func TestJudgeInfeasible(t *testing.T) {
	p2 := running()
	p2.Name, p2.Spec.NodeName = "web-2", "n2"
	msgs := []string{InfeasibleMessage(p2, noRoom), InfeasibleMessage(running(), noRoom)}
	if _, ok := JudgeInfeasible(IfPossible, msgs); ok {
		t.Error("InPlaceIfPossible recreates the pods; it has no verdict of its own")
	}
	if _, ok := JudgeInfeasible(Only, nil); ok {
		t.Error("no infeasible pod, no verdict")
	}
	v, ok := JudgeInfeasible(Only, msgs)
	want := "pod web-1: the resize cannot be made on node n1: " + noRoom + "; pod web-2: the resize cannot be made on node n2: " + noRoom + "; InPlaceOnly recreates no pod"
	if !ok || v.Reason != ReasonBlocked || v.Status != corev1.ConditionFalse || v.EventType != corev1.EventTypeWarning || v.Message != want {
		t.Errorf("JudgeInfeasible = %+v, want Blocked %q", v, want)
	}
}
