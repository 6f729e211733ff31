package kubelet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
)

// resized is a copy of pod whose first container now asks for cpu and memory requests
// (as the pods/resize subresource writes them), one generation on.
func resized(p *corev1.Pod, cpu, memory string) *corev1.Pod {
	r := p.DeepCopy()
	r.Generation++
	r.Spec.Containers[0].Resources.Requests = corev1.ResourceList{}
	if cpu != "" {
		r.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		r.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return r
}

func TestDecideResize(t *testing.T) {
	node := testNode("4", "4Gi", 110)
	other := requesting("other", "2", "1Gi")
	guaranteed := func(p *corev1.Pod) *corev1.Pod {
		p.Status.QOSClass = corev1.PodQOSGuaranteed
		return p
	}
	tests := []struct {
		name    string
		others  []*corev1.Pod
		from    *corev1.Pod
		to      *corev1.Pod
		static  bool
		kind    resizeKind
		reason  string
		message string
	}{
		{name: "spec asks for what is allocated: nothing to decide",
			from: requesting("web", "1", ""), to: requesting("web", "1", ""), kind: resizeNone},
		{name: "1 → 2 CPUs beside a pod holding 2 of 4: fits exactly, accepted",
			others: []*corev1.Pod{other}, from: requesting("web", "1", ""), to: resized(requesting("web", "1", ""), "2", ""), kind: resizeAccepted},
		{name: "1 → 3 CPUs beside a pod holding 2 of 4: Deferred with admission's message",
			others: []*corev1.Pod{other}, from: requesting("web", "1", ""), to: resized(requesting("web", "1", ""), "3", ""),
			kind: resizeDeferred, reason: "Deferred", message: "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"},
		{name: "1 → 5 CPUs on a 4-CPU node: more than it has, still Deferred in 1.36",
			from: requesting("web", "1", ""), to: resized(requesting("web", "1", ""), "5", ""),
			kind: resizeDeferred, reason: "Deferred", message: "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"},
		{name: "memory 1Gi → 4Gi beside 1Gi held on a 4Gi node: Deferred on memory",
			others: []*corev1.Pod{other}, from: requesting("web", "", "1Gi"), to: resized(requesting("web", "", "1Gi"), "", "4Gi"),
			kind: resizeDeferred, reason: "Deferred", message: "Node didn't have enough resource: memory, requested: 4294967296, used: 1073741824, capacity: 4294967296"},
		{name: "a decrease always fits",
			others: []*corev1.Pod{requesting("other", "3500m", "")}, from: requesting("web", "1", ""), to: resized(requesting("web", "1", ""), "500m", ""), kind: resizeAccepted},
		{name: "Guaranteed pod's CPU change under the static CPU manager: Infeasible",
			from: guaranteed(requesting("web", "1", "")), to: guaranteed(resized(requesting("web", "1", ""), "2", "")), static: true,
			kind: resizeInfeasible, reason: "Infeasible", message: `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`},
		{name: "Burstable pod under the static CPU manager: accepted",
			from: requesting("web", "1", ""), to: resized(requesting("web", "1", ""), "2", ""), static: true, kind: resizeAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var others []*corev1.Pod
			for _, o := range tt.others {
				others = append(others, allocationOf(o).applyTo(o))
			}
			d := decideResize(node, func() []*corev1.Pod { return others }, tt.to, allocationOf(tt.from), tt.static)
			if d.kind != tt.kind {
				t.Fatalf("kind = %d, want %d (%+v)", d.kind, tt.kind, d)
			}
			if tt.reason != "" && (d.pendingReason() != tt.reason || d.message != tt.message) {
				t.Errorf("pending = %s %q, want %s %q", d.pendingReason(), d.message, tt.reason, tt.message)
			}
		})
	}
}

func TestDecideResize_readsTheOtherPodsOnlyForAResize(t *testing.T) {
	node := testNode("4", "4Gi", 110)
	pod := requesting("web", "1", "")
	asked := 0
	others := func() []*corev1.Pod { asked++; return nil }
	if d := decideResize(node, others, pod, allocationOf(pod), false); d.kind != resizeNone || asked != 0 {
		t.Errorf("no resize: kind %d, other pods read %d times; want %d, 0", d.kind, asked, resizeNone)
	}
	if d := decideResize(node, others, resized(pod, "2", ""), allocationOf(pod), false); d.kind != resizeAccepted || asked != 1 {
		t.Errorf("a resize: kind %d, other pods read %d times; want %d, 1", d.kind, asked, resizeAccepted)
	}
}

func TestAllocationApplyTo(t *testing.T) {
	pod := requesting("web", "1", "1Gi")
	if got := allocationOf(pod).applyTo(pod); got != pod {
		t.Error("allocation equal to the spec: got a copy, want the pod itself")
	}
	wider := resized(pod, "2", "1Gi")
	got := allocationOf(pod).applyTo(wider)
	if got == wider {
		t.Fatal("allocation other than the spec: got the pod itself, want a copy")
	}
	if cpu := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "1" {
		t.Errorf("copy's cpu request = %s, want the allocated 1", cpu.String())
	}
	if cpu := wider.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("pod's own cpu request = %s after applyTo, want 2 (unchanged)", cpu.String())
	}
}

func TestAllocationMatches(t *testing.T) {
	pod := requesting("web", "1", "1Gi") // one container, c0
	extra := allocationOf(pod)
	extra["sidecar"] = corev1.ResourceRequirements{}
	tests := []struct {
		name  string
		alloc allocation
		pod   *corev1.Pod
		want  bool
	}{
		{"the spec's own allocation", allocationOf(pod), pod, true},
		{"the spec asks for more cpu", allocationOf(pod), resized(pod, "2", "1Gi"), false},
		{"the spec drops its memory request", allocationOf(pod), resized(pod, "1", ""), false},
		{"a container without allocation", allocation{}, pod, false},
		{"an allocated container the pod lacks", extra, pod, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.alloc.matches(tt.pod); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodePods_resizeCountsAllocationsAndRetriesDeferred(t *testing.T) {
	node := testNode("4", "4Gi", 110)
	n := newNodePods()
	big, web := requesting("big", "2", ""), requesting("web", "1", "")
	for _, p := range []*corev1.Pod{big, web} {
		if v := n.admitOnce(node, p); v.rejected {
			t.Fatalf("%s rejected: %+v", p.Name, v)
		}
	}
	// big asks for 3.5 CPUs: 1 (web) + 3.5 > 4, Deferred, and it still holds 2.
	bigger := resized(big, "3500m", "")
	if d, alloc, _ := n.resize(node, bigger, "default/big", false); d.kind != resizeDeferred {
		t.Fatalf("big 2 → 3.5 CPUs: %+v, want Deferred", d)
	} else if got := alloc["c0"].Requests[corev1.ResourceCPU]; got.String() != "2" {
		t.Errorf("big's allocation after a deferred resize = %s CPUs, want 2", got.String())
	}
	// web grows to 2: counted against big's allocated 2, not its desired 3.5: 2+2 ≤ 4.
	if d, _, _ := n.resize(node, resized(web, "2", ""), "default/web", false); d.kind != resizeAccepted {
		t.Fatalf("web 1 → 2 CPUs beside big's allocated 2: %+v, want accepted", d)
	}
	// web leaves: big's deferred resize is handed back to be tried again, and now fits.
	if retry := n.forget(web.UID); len(retry) != 1 || retry[0] != "default/big" {
		t.Fatalf("retry after web left = %v, want [default/big]", retry)
	}
	if d, alloc, _ := n.resize(node, bigger, "default/big", false); d.kind != resizeAccepted {
		t.Fatalf("big 2 → 3.5 CPUs alone on the node: %+v, want accepted", d)
	} else if got := alloc["c0"].Requests[corev1.ResourceCPU]; got.String() != "3500m" {
		t.Errorf("big's allocation = %s, want 3500m", got.String())
	}
	// A new pod is admitted against the allocated 3.5 CPUs: 1 more does not fit.
	if v := n.admitOnce(node, requesting("late", "1", "")); !v.rejected || v.reason != "OutOfcpu" {
		t.Errorf("a 1-CPU pod beside 3.5 allocated of 4: %+v, want OutOfcpu", v)
	}
}

func TestResizeDelay(t *testing.T) {
	tests := []struct {
		value   string
		set     bool
		want    time.Duration
		problem string
	}{
		{want: DefaultResizeDelay},
		{value: "1s", set: true, want: time.Second},
		{value: "0s", set: true, want: 0},
		{value: "soon", set: true, want: DefaultResizeDelay,
			problem: `kroll.dev/resize-delay="soon" is not valid: want a Go duration of 0 or more ("500ms"); the resize takes 200ms`},
		{value: "-1s", set: true, want: DefaultResizeDelay, problem: `kroll.dev/resize-delay="-1s" is not valid`},
	}
	for _, tt := range tests {
		p := newPod("nginx")
		if tt.set {
			p.Annotations[AnnotationResizeDelay] = tt.value
		}
		d, problem := resizeDelay(p)
		if d != tt.want || !strings.HasPrefix(problem, tt.problem) || (tt.problem == "") != (problem == "") {
			t.Errorf("resizeDelay(%q) = %s, %q; want %s, %q", tt.value, d, problem, tt.want, tt.problem)
		}
	}
}

func TestResizeEventMessage(t *testing.T) {
	p := resized(requesting("web", "1", ""), "5", "")
	got := resizeEventMessage("Pod resize OutOfcpu", p, 2, "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000")
	want := `Pod resize OutOfcpu: {"containers":[{"name":"c0","resources":{"requests":{"cpu":"5"}}}],"generation":2,"error":"Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"}`
	if got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

// TestPodStatus_resize follows one running pod through resizes as the kubelet reports
// them: allocated at once, in progress for the resize delay, then actuated.
func TestPodStatus_resize(t *testing.T) {
	sim := newSimulator(t)
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	cpu := func(cs corev1.ContainerStatus) string {
		if cs.Resources == nil {
			return "<nil>"
		}
		q := cs.Resources.Requests[corev1.ResourceCPU]
		return q.String()
	}
	type want struct {
		restarts            int32
		reported, allocated string
		inProgress          bool
		pending             string
		wake                time.Duration // from the sync; 0: none
	}
	run := func(t *testing.T, policy corev1.ResourceResizeRestartPolicy) {
		pod := requesting("web", "1", "1Gi")
		pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: policy}, {ResourceName: corev1.ResourceMemory, RestartPolicy: policy}}
		clk := newPodClock()
		sync := func(at time.Duration, rs resizeState, w want) {
			t.Helper()
			now := t0.Add(at)
			if rs.alloc == nil {
				rs.alloc = allocationOf(pod)
			}
			rs.delay = DefaultResizeDelay
			st, wake := sim.podStatusWith(pod, clk, addrs, rs, now)
			pod.Status = st
			cs := st.ContainerStatuses[0]
			alloc := cs.AllocatedResources[corev1.ResourceCPU]
			if cs.RestartCount != w.restarts || cpu(cs) != w.reported || alloc.String() != w.allocated {
				t.Errorf("at %s: restarts %d, resources cpu %s, allocated %s; want %d, %s, %s", at, cs.RestartCount, cpu(cs), alloc.String(), w.restarts, w.reported, w.allocated)
			}
			if got := podCondition(st, corev1.PodResizeInProgress) != nil; got != w.inProgress {
				t.Errorf("at %s: PodResizeInProgress present = %v, want %v", at, got, w.inProgress)
			}
			pending := ""
			if c := podCondition(st, corev1.PodResizePending); c != nil {
				pending = c.Reason + ": " + c.Message
			}
			if pending != w.pending {
				t.Errorf("at %s: PodResizePending %q, want %q", at, pending, w.pending)
			}
			if st.ObservedGeneration != pod.Generation {
				t.Errorf("at %s: observedGeneration %d, want %d", at, st.ObservedGeneration, pod.Generation)
			}
			var gotWake time.Duration
			if !wake.IsZero() {
				gotWake = wake.Sub(now)
			}
			if w.wake != 0 && gotWake != w.wake {
				t.Errorf("at %s: next wake in %s, want %s", at, gotWake, w.wake)
			}
		}
		// Running with 1 CPU after the 500ms startup delay.
		sync(0, resizeState{}, want{reported: "<nil>", allocated: "0"})
		sync(time.Second, resizeState{}, want{reported: "1", allocated: "1"})
		// The resize writes 2 CPUs (generation 2); the kubelet accepts it at 2s.
		*pod = *resized(pod, "2", "1Gi")
		accepted := resizeState{alloc: allocationOf(pod), acceptedAt: t0.Add(2 * time.Second), acceptedGen: 2}
		sync(2*time.Second, accepted, want{reported: "1", allocated: "2", inProgress: true, wake: DefaultResizeDelay})
		restarts := int32(0)
		if policy == corev1.RestartContainer {
			restarts = 1
		}
		sync(2*time.Second+DefaultResizeDelay, accepted, want{restarts: restarts, reported: "2", allocated: "2"})
		// A further resize to 5 CPUs is deferred: allocation and reports stay at 2.
		kept := accepted.alloc
		*pod = *resized(pod, "5", "1Gi")
		deferred := resizeDecision{kind: resizeDeferred, cause: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"}
		sync(3*time.Second, resizeState{alloc: kept, pending: &deferred, acceptedAt: accepted.acceptedAt, acceptedGen: 2},
			want{restarts: restarts, reported: "2", allocated: "2", pending: "Deferred: " + deferred.message})
		if c := podCondition(pod.Status, corev1.PodResizePending); c.ObservedGeneration != 3 {
			t.Errorf("PodResizePending observedGeneration = %d, want 3", c.ObservedGeneration)
		}
	}
	t.Run("NotRequired: resized in place, no restart", func(t *testing.T) { run(t, corev1.NotRequired) })
	t.Run("RestartContainer: restartCount+1 on actuation", func(t *testing.T) { run(t, corev1.RestartContainer) })
}

func TestStatusPatchBody_removesResizeConditionsTheKubeletDropped(t *testing.T) {
	pod := requesting("web", "1", "")
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	status := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	body, err := statusPatchBody(pod, &status)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Status struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range patch.Status.Conditions {
		if c["type"] == string(corev1.PodResizeInProgress) && c["$patch"] == "delete" {
			found = true
		}
	}
	if !found {
		t.Errorf("patch %s does not delete PodResizeInProgress", body)
	}
}

// testKubelet is a Kubelet of one node, kroll-node-0, whose events go to the returned
// recorder; enough for the decisions of one sync.
func testKubelet(t *testing.T, node *corev1.Node) (*Kubelet, *record.FakeRecorder) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(node); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(20)
	k := &Kubelet{
		nodeLister: corelisters.NewNodeLister(indexer),
		pods:       map[string]*nodePods{node.Name: newNodePods()},
		recorders:  map[string]record.EventRecorder{node.Name: rec},
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	t.Cleanup(k.queue.ShutDown)
	return k, rec
}

func TestKubelet_resizeEventsAndTheDelayAnnotation(t *testing.T) {
	k, rec := testKubelet(t, testNode("4", "4Gi", 110))
	web := requesting("web", "1", "")
	web.Annotations[AnnotationResizeDelay] = "soon"
	if v := k.pods["kroll-node-0"].admitOnce(k.node("kroll-node-0"), web); v.rejected {
		t.Fatalf("web rejected: %+v", v)
	}
	clk := newPodClock()

	// Accepted: ResizeStarted, and the bad annotation named once; the default delay applies.
	grown := resized(web, "2", "")
	rs := k.resizeStateOf(grown, "default/web", clk, t0)
	if rs.delay != DefaultResizeDelay || rs.acceptedGen != 2 || !rs.acceptedAt.Equal(t0) || rs.pending != nil {
		t.Errorf("state after an accepted resize = %+v", rs)
	}
	events := controllertest.Drain(rec)
	want := []string{
		`Normal ResizeStarted Pod resize started: {"containers":[{"name":"c0","resources":{"requests":{"cpu":"2"}}}],"generation":2}`,
		`Warning InvalidAnnotation kroll.dev/resize-delay="soon" is not valid: want a Go duration of 0 or more ("500ms"); the resize takes 200ms`,
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n got %q\nwant %q", events, want)
	}

	// Deferred: one ResizeDeferred naming admission's reason; a second sync of the same
	// generation, with the condition written, records nothing more.
	huge := resized(grown, "5", "")
	rs = k.resizeStateOf(huge, "default/web", clk, t0.Add(time.Second))
	if rs.pending == nil || rs.pending.pendingReason() != corev1.PodReasonDeferred {
		t.Fatalf("2 → 5 CPUs on a 4-CPU node: pending %+v, want Deferred", rs.pending)
	}
	if got := controllertest.Drain(rec); len(got) != 1 || !strings.HasPrefix(got[0], `Warning ResizeDeferred Pod resize OutOfcpu: {"containers"`) ||
		!strings.HasSuffix(got[0], `"generation":3,"error":"Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"}`) {
		t.Errorf("events of a deferred resize = %q", got)
	}
	huge.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, ObservedGeneration: 3}}
	k.resizeStateOf(huge, "default/web", clk, t0.Add(2*time.Second))
	if got := controllertest.Drain(rec); len(got) != 0 {
		t.Errorf("the same deferred resize again recorded %q", got)
	}
}

func TestPodStatus_sidecarReportsItsResize(t *testing.T) {
	sim := newSimulator(t)
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	always := corev1.ContainerRestartPolicyAlways
	pod := requesting("web", "1", "")
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "nginx:1.14.2", RestartPolicy: &always,
		Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}}}
	clk := newPodClock()
	for _, at := range []time.Duration{0, time.Second} {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(at))
	}
	pod.Generation = 2
	pod.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	rs := resizeState{alloc: allocationOf(pod), acceptedAt: t0.Add(2 * time.Second), acceptedGen: 2, delay: DefaultResizeDelay}
	sidecarCPU := func(st corev1.PodStatus) string {
		q := st.InitContainerStatuses[0].Resources.Requests[corev1.ResourceCPU]
		return q.String()
	}
	pod.Status, _ = sim.podStatusWith(pod, clk, addrs, rs, t0.Add(2*time.Second))
	if got := sidecarCPU(pod.Status); got != "100m" || podCondition(pod.Status, corev1.PodResizeInProgress) == nil {
		t.Errorf("during the resize delay: sidecar cpu %s, in progress %v; want 100m, true", got, podCondition(pod.Status, corev1.PodResizeInProgress) != nil)
	}
	pod.Status, _ = sim.podStatusWith(pod, clk, addrs, rs, t0.Add(3*time.Second))
	if got := sidecarCPU(pod.Status); got != "200m" || podCondition(pod.Status, corev1.PodResizeInProgress) != nil {
		t.Errorf("after the delay: sidecar cpu %s, in progress %v; want 200m, false", got, podCondition(pod.Status, corev1.PodResizeInProgress) != nil)
	}
	if pod.Status.ContainerStatuses[0].State.Running == nil || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("app container after the sidecar's resize: %+v", pod.Status.ContainerStatuses[0].State)
	}
}

func TestNextResizeRetry(t *testing.T) {
	deferred := &resizeDecision{kind: resizeDeferred}
	infeasible := &resizeDecision{kind: resizeInfeasible}
	tests := []struct {
		name    string
		pending *resizeDecision
		due     time.Time
		want    time.Time
	}{
		{name: "no pending resize: due as it was", due: t0.Add(time.Second), want: t0.Add(time.Second)},
		{name: "deferred, nothing else due: retried in 3m", pending: deferred, want: t0.Add(3 * time.Minute)},
		{name: "deferred, a container due in 1s first", pending: deferred, due: t0.Add(time.Second), want: t0.Add(time.Second)},
		{name: "infeasible is not retried on a timer", pending: infeasible, want: time.Time{}},
	}
	for _, tt := range tests {
		if got := nextResizeRetry(resizeState{pending: tt.pending}, tt.due, t0); !got.Equal(tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestNodePods_refreshRetriesDeferredWhenADecreaseIsActuated(t *testing.T) {
	node := testNode("4", "4Gi", 110)
	n := newNodePods()
	hog, web := requesting("hog", "2", ""), requesting("web", "1", "")
	report := func(p *corev1.Pod, cpu string) *corev1.Pod {
		r := p.DeepCopy()
		r.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", ContainerID: "containerd://x",
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
		return r
	}
	hog = report(hog, "2")
	for _, p := range []*corev1.Pod{hog, web} {
		n.admitOnce(node, p)
	}
	if d, _, _ := n.resize(node, resized(web, "3", ""), "default/web", false); d.kind != resizeDeferred {
		t.Fatalf("web 1 → 3 beside hog's 2: %+v, want Deferred", d)
	}
	// hog's decrease to 1 is accepted, but until actuated it still counts 2 (the larger
	// of allocated 1 and actuated 2): web stays deferred.
	small := resized(hog, "1", "")
	if d, _, _ := n.resize(node, small, "default/hog", false); d.kind != resizeAccepted {
		t.Fatalf("hog 2 → 1: %+v, want accepted", d)
	}
	if retry := n.refresh(small); len(retry) != 0 {
		t.Errorf("refresh before actuation retried %v", retry)
	}
	if d, _, _ := n.resize(node, resized(web, "3", ""), "default/web", false); d.kind != resizeDeferred {
		t.Fatalf("web beside hog actuated at 2: %+v, want Deferred", d)
	}
	// hog reports 1 CPU actuated: web is handed back, and fits (3 + 1 ≤ 4).
	if retry := n.refresh(report(small, "1")); len(retry) != 1 || retry[0] != "default/web" {
		t.Fatalf("refresh after actuation = %v, want [default/web]", retry)
	}
	if d, _, _ := n.resize(node, resized(web, "3", ""), "default/web", false); d.kind != resizeAccepted {
		t.Errorf("web beside hog actuated at 1: %+v, want accepted", d)
	}
}
