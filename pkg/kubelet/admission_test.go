package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testNode is a simulated node of cpu cores, memory and pods, labelled as ours are.
func testNode(cpu, memory string, pods int) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(cpu),
		corev1.ResourceMemory:           resource.MustParse(memory),
		corev1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "kroll-node-0", Labels: map[string]string{
			corev1.LabelHostname: "kroll-node-0", corev1.LabelOSStable: "linux", "disk": "ssd"}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Features: &corev1.NodeFeatures{SupplementalGroupsPolicy: ptrBool(true)}},
	}
}

// tainted is testNode("2", "4Gi", 3) with a taint maintenance of effect.
func tainted(effect corev1.TaintEffect) *corev1.Node {
	n := testNode("2", "4Gi", 3)
	n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: effect}}
	return n
}

// requesting is a pod named name bound to kroll-node-0 with one container requesting cpu
// and memory ("" for none).
func requesting(name, cpu, memory string) *corev1.Pod {
	p := newPod("nginx:1.14.2")
	p.Name, p.UID = name, types.UID("uid-"+name)
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	p.Spec.Containers[0].Resources.Requests = req
	return p
}

// withHostPort adds a host port to pod's first container.
func withHostPort(p *corev1.Pod, port int32, ip string, proto corev1.Protocol) *corev1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: proto})
	return p
}

func TestAdmit(t *testing.T) {
	node := testNode("2", "4Gi", 3)
	edit := func(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }
	tests := []struct {
		name     string
		node     *corev1.Node
		admitted []*corev1.Pod
		pod      *corev1.Pod
		reason   string // "" for admitted
		message  string
	}{
		{name: "a pod that fits is admitted", pod: requesting("a", "500m", "1Gi")},
		{name: "a pod that asks nothing fits an empty node", pod: requesting("a", "", "")},
		{
			name: "more cpu than allocatable: OutOfcpu in millicores", pod: requesting("big", "4", ""),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000",
		},
		{
			name:     "cpu that admitted pods already hold: 1500m used of 2000m, 600m more does not fit",
			admitted: []*corev1.Pod{requesting("a", "1", ""), requesting("b", "500m", "")}, pod: requesting("c", "600m", ""),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
		},
		{
			name:     "exactly what is left fits: 1500m used, 500m asked",
			admitted: []*corev1.Pod{requesting("a", "1500m", "")}, pod: requesting("c", "500m", ""),
		},
		{
			name: "memory in bytes", admitted: []*corev1.Pod{requesting("a", "", "3Gi")}, pod: requesting("b", "", "2Gi"),
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 2147483648, used: 3221225472, capacity: 4294967296",
		},
		{
			name:     "pods first: a full node refuses even a pod that asks nothing, and cpu is not reported",
			admitted: []*corev1.Pod{requesting("a", "2", ""), requesting("b", "", ""), requesting("c", "", "")}, pod: requesting("d", "1", ""),
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
		},
		{
			name: "cpu is reported before memory when both are short", pod: requesting("big", "3", "8Gi"),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
		},
		{
			name: "init containers count at their peak: an init container of 3 cores does not fit 2",
			pod: edit(requesting("init", "100m", ""), func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
			}),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
		},
		{
			name: "an extended resource the node has none of is ignored, as for cluster-level resources",
			pod: edit(requesting("gpu", "", ""), func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			}),
		},
		{
			name: "an extended resource the node has too little of",
			node: func() *corev1.Node {
				n := testNode("2", "4Gi", 3)
				n.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
				return n
			}(),
			pod: edit(requesting("gpu", "", ""), func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("2")
			}),
			reason: "OutOfexample.com/gpu", message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1",
		},
		{
			name:     "the same host port as an admitted pod: NodePorts",
			admitted: []*corev1.Pod{withHostPort(requesting("a", "", ""), 21017, "", "")}, pod: withHostPort(requesting("b", "", ""), 21017, "", ""),
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "a port on one IP conflicts with the same port on 0.0.0.0",
			admitted: []*corev1.Pod{withHostPort(requesting("a", "", ""), 80, "10.0.0.1", corev1.ProtocolTCP)}, pod: withHostPort(requesting("b", "", ""), 80, "", ""),
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "the same port on another IP, or another protocol, is free",
			admitted: []*corev1.Pod{withHostPort(requesting("a", "", ""), 80, "10.0.0.1", ""), withHostPort(requesting("b", "", ""), 80, "", corev1.ProtocolUDP)},
			pod:      withHostPort(requesting("c", "", ""), 80, "10.0.0.2", corev1.ProtocolTCP),
		},
		{
			name:   "a node selector the node does not match: NodeAffinity",
			pod:    edit(requesting("a", "", ""), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		},
		{
			name: "required node affinity the node does not match: NodeAffinity",
			pod: edit(requesting("a", "", ""), func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}}
			}),
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		},
		{
			name: "a node selector the node matches", pod: edit(requesting("a", "", ""), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
		},
		{
			name:   "resources are checked before affinity",
			pod:    edit(requesting("a", "8", ""), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 2000",
		},
		{
			name:   "a NoExecute taint the pod does not tolerate: TaintToleration",
			node:   tainted(corev1.TaintEffectNoExecute),
			pod:    requesting("a", "", ""),
			reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
		},
		{
			name: "a NoSchedule taint is the scheduler's business, not the kubelet's",
			node: tainted(corev1.TaintEffectNoSchedule),
			pod:  requesting("a", "", ""),
		},
		{
			name: "a tolerated NoExecute taint",
			node: tainted(corev1.TaintEffectNoExecute),
			pod: edit(requesting("a", "", ""), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
			}),
		},
		{
			name:   "a kubernetes.io/os label (not a selector) for another OS",
			pod:    edit(requesting("a", "", ""), func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: "windows"} }),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		},
		{
			name:   "spec.os for another OS",
			pod:    edit(requesting("a", "", ""), func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }),
			reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS",
		},
		{
			name: "SupplementalGroupsPolicy Strict on a node that does not declare it",
			node: func() *corev1.Node { n := testNode("2", "4Gi", 3); n.Status.Features = nil; return n }(),
			pod: edit(requesting("a", "", ""), func(p *corev1.Pod) {
				strict := corev1.SupplementalGroupsPolicyStrict
				p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
			}),
			reason: "SupplementalGroupsPolicyNotSupported", message: "SupplementalGroupsPolicy=Strict is not supported in this node",
		},
		{
			name:   "bound to another node: NodeName",
			pod:    edit(requesting("a", "", ""), func(p *corev1.Pod) { p.Spec.NodeName = "kroll-node-1" }),
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			if n == nil {
				n = node
			}
			got := admit(n, tt.admitted, tt.pod)
			if got.rejected != (tt.reason != "") || got.reason != tt.reason || got.message != tt.message {
				t.Errorf("admit = %+v\nwant reason %q message %q", got, tt.reason, tt.message)
			}
		})
	}
}

func TestNodePods_admitsOnceInOrderAndReleases(t *testing.T) {
	node := testNode("2", "4Gi", 110)
	n := newNodePods()
	first, second := requesting("first", "1500m", ""), requesting("second", "1", "")
	if v := n.admitOnce(node, first); v.rejected {
		t.Fatalf("first pod rejected: %+v", v)
	}
	v := n.admitOnce(node, second)
	if !v.rejected || v.reason != "OutOfcpu" {
		t.Fatalf("second pod: %+v, want OutOfcpu", v)
	}
	// The verdict is kept: once the first pod has stopped, the second is still rejected
	// (a kubelet never admits a pod it rejected), but a new pod fits.
	n.release(first.UID)
	if again := n.admitOnce(node, second); again != v {
		t.Errorf("second pod judged again: %+v", again)
	}
	if third := n.admitOnce(node, requesting("third", "2", "")); third.rejected {
		t.Errorf("a pod fitting the freed cpu was rejected: %+v", third)
	}
}

func TestByCreation(t *testing.T) {
	at := func(name string, sec int) *corev1.Pod {
		p := requesting(name, "", "")
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
		return p
	}
	pods := []*corev1.Pod{at("c", 2), at("b", 1), at("a", 2)}
	byCreation(pods)
	if pods[0].Name != "b" || pods[1].Name != "a" || pods[2].Name != "c" {
		t.Errorf("order %s %s %s, want b a c", pods[0].Name, pods[1].Name, pods[2].Name)
	}
}

func TestRejectedStatus(t *testing.T) {
	pod := requesting("big", "4", "")
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	pod.Status.QOSClass = corev1.PodQOSBurstable
	st := rejectedStatus(pod, admission{rejected: true, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"}, t0)
	if st.Phase != corev1.PodFailed || st.Reason != "OutOfcpu" ||
		st.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000" ||
		st.StartTime == nil || !st.StartTime.Time.Equal(t0) || st.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("rejected status: %+v", st)
	}
	if len(st.ContainerStatuses) != 0 || st.HostIP != "" || st.PodIP != "" || len(st.Conditions) != 1 {
		t.Errorf("a rejected pod reports no containers, IPs or kubelet conditions: %+v", st)
	}
}
