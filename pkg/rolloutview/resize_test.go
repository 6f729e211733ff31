package rolloutview

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// cpuRequest is a container's resources with a cpu request only.
func cpuRequest(cpu string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
}

// resizingPod is p with its spec asking cpu want, its container reporting cpu have,
// and the resize conditions of state (inplace.ResizeState; "" for none) with msg.
func resizingPod(p *corev1.Pod, want, have string, state inplace.ResizeState, msg string) *corev1.Pod {
	p.Spec.Containers[0].Resources = cpuRequest(want)
	reported := cpuRequest(have)
	p.Status.ContainerStatuses[0].Resources = &reported
	switch state {
	case inplace.ResizeDeferred, inplace.ResizeInfeasible:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: string(state), Message: msg})
	case inplace.ResizeInProgress:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
	}
	return p
}

// inPlaceResizing is a 4-replica in-place Deployment at revision 2, cpu request
// 100m → 200m: its pods have moved to the new ReplicaSet; web-6f9c7d-aaaaa runs with
// 200m, bbbbb is being resized, ccccc's resize is written and not yet taken up,
// ddddd's is deferred by its node.
func inPlaceResizing() Snapshot {
	d := newDeployment(4, "nginx:1.25", "2")
	d.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
	d.Spec.Template.Spec.Containers[0].Resources = cpuRequest("200m")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"},
			{Type: inplace.ConditionType, Status: corev1.ConditionTrue, Reason: inplace.ReasonInPlace}}}
	old := newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", 0, 0, time.Hour)
	old.Spec.Template.Spec.Containers[0].Resources = cpuRequest("100m")
	cur := newReplicaSet(d, "6f9c7d", "nginx:1.25", "2", 4, 4, time.Minute)
	cur.Spec.Template.Spec.Containers[0].Resources = cpuRequest("200m")
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}, Now: now}
	owner := controllerRef("ReplicaSet", cur.Name, cur.UID)
	pod := func(id string) *corev1.Pod { return newPod("web-6f9c7d-"+id, "nginx:1.25", owner, "ready", time.Hour) }
	s.Pods = []*corev1.Pod{
		resizingPod(pod("aaaaa"), "200m", "200m", "", ""),
		resizingPod(pod("bbbbb"), "200m", "100m", inplace.ResizeInProgress, ""),
		resizingPod(pod("ccccc"), "200m", "100m", "", ""),
		resizingPod(pod("ddddd"), "200m", "100m", inplace.ResizeDeferred, "Node didn't have enough resource: cpu, requested: 200, used: 31900, capacity: 32000"),
	}
	return s
}

func TestPodResizing(t *testing.T) {
	owner := controllerRef("ReplicaSet", "web-6f9c7d", "rs-6f9c7d")
	ready := func() *corev1.Pod { return newPod("web-6f9c7d-aaaaa", "nginx:1.25", owner, "ready", time.Hour) }
	tests := []struct {
		name       string
		pod        *corev1.Pod
		resizing   bool
		wantStatus string
	}{
		{"no resources reported (a kubelet before 1.33): nothing to say", ready(), false, "Running"},
		{"reports what its spec asks: done", resizingPod(ready(), "200m", "200m", "", ""), false, "Running"},
		{"0.2 reported for 200m asked: the same cpu, done", resizingPod(ready(), "200m", "0.2", "", ""), false, "Running"},
		{"written, not taken up: the spec asks 200m, the container reports 100m", resizingPod(ready(), "200m", "100m", "", ""), true, "Resizing"},
		{"PodResizeInProgress", resizingPod(ready(), "200m", "100m", inplace.ResizeInProgress, ""), true, "Resizing"},
		{"PodResizePending Deferred", resizingPod(ready(), "200m", "100m", inplace.ResizeDeferred, "no room"), true, "ResizeDeferred"},
		{"PodResizePending Infeasible", resizingPod(ready(), "200m", "100m", inplace.ResizeInfeasible, "never"), true, "ResizeInfeasible"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podResizing(tt.pod); got != tt.resizing {
				t.Errorf("podResizing = %v, want %v", got, tt.resizing)
			}
			if got := PodStatus(tt.pod); got != tt.wantStatus {
				t.Errorf("PodStatus = %q, want %q", got, tt.wantStatus)
			}
		})
	}
}

func TestResizingCounts(t *testing.T) {
	p, err := ProgressOf(inPlaceResizing())
	if err != nil {
		t.Fatal(err)
	}
	if p.Resizing == nil || p.Resizing.Pods != 3 || len(p.Resizing.Pending) != 1 || p.Resizing.Pending[0].Pod != "web-6f9c7d-ddddd" || p.Resizing.Pending[0].Reason != "Deferred" {
		t.Fatalf("resizing %+v, want 3 pods, web-6f9c7d-ddddd Deferred", p.Resizing)
	}
	if p, _ := ProgressOf(complete()); p.Resizing != nil {
		t.Errorf("no pod resizing, but resizing %+v", p.Resizing)
	}
	// More pending than a line lists: the first by name, and how many more.
	r := &Resizing{Pods: 5}
	for _, name := range []string{"e", "d", "c", "b", "a"} {
		r.Pending = append(r.Pending, Blocker{Pod: name, Reason: "Deferred"})
	}
	r = resizingOfPending(r)
	if got, want := r.String(), "5 pods resizing; a resize Deferred; b resize Deferred; c resize Deferred; +2 more pending"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// resizingOfPending sorts r's pending pods as resizingOf does.
func resizingOfPending(r *Resizing) *Resizing {
	pods := make([]*corev1.Pod, 0, len(r.Pending))
	for _, b := range r.Pending {
		p := newPod(b.Pod, "nginx", controllerRef("ReplicaSet", "rs", "rs"), "ready", time.Hour)
		pods = append(pods, resizingPod(p, "200m", "100m", inplace.ResizeState(b.Reason), ""))
	}
	return resizingOf(pods)
}

// A revision that changes the cpu request says so first, by container, above the
// YAML diff.
func TestTemplateDiffOfAResize(t *testing.T) {
	revs, err := RevisionsOf(inPlaceResizing())
	if err != nil {
		t.Fatal(err)
	}
	diff, err := TemplateDiff(revs[1], revs[2])
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "diff-resize-1-2.txt", diff)
}
