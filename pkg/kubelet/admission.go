package kubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Admission reasons and messages, as the kubelet writes them (status.reason, and
// status.message after "Pod was rejected: "; the Warning event carries the message alone).
const (
	reasonOSSelectorMismatch      = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonOSNotSupported          = "PodOSNotSupported"
	reasonSupplementalGroups      = "SupplementalGroupsPolicyNotSupported"
	reasonOutOfPrefix             = "OutOf"
	predicateNodeAffinity         = "NodeAffinity"
	predicateNodeName             = "NodeName"
	predicateNodePorts            = "NodePorts"
	predicateTaintToleration      = "TaintToleration"
	rejectedPrefix                = "Pod was rejected: "
	messageOSSelectorMismatch     = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	messageOSNotSupported         = "Failed to admit pod as the OS field doesn't match node OS"
	messageSupplementalGroups     = "SupplementalGroupsPolicy=Strict is not supported in this node"
	descriptionNodeAffinity       = "node(s) didn't match Pod's node affinity/selector"
	descriptionNodeName           = "node(s) didn't match the requested node name"
	descriptionNodePorts          = "node(s) didn't have free ports for the requested pod ports"
	descriptionTaintNotTolerated  = "node(s) had taints that the pod didn't tolerate"
	defaultHostIP                 = "0.0.0.0"
	defaultProtocol               = corev1.ProtocolTCP
	nodeOS                        = "linux"
	resourceNamespaceKubernetesIO = "kubernetes.io/"
)

// admission is the kubelet's verdict on one pod.
type admission struct {
	// rejected is true when the node cannot run the pod.
	rejected bool
	// reason is status.reason of a rejected pod ("OutOfcpu", "NodePorts"); message is the
	// event's message, which status.message prefixes with "Pod was rejected: ".
	reason, message string
}

func rejectWith(reason, message string) admission {
	return admission{rejected: true, reason: reason, message: message}
}

func predicateFailed(predicate, description string) admission {
	return rejectWith(predicate, fmt.Sprintf("Predicate %s failed: %s", predicate, description))
}

// admit decides, as a kubelet does once when a pod bound to its node first reaches it,
// whether node can run pod beside admitted, the pods it admitted before that still hold
// their resources (not Succeeded or Failed; a pod being deleted holds them until its
// containers have stopped). Only the first failure is reported, in the kubelet's order:
//
//  1. the pod's kubernetes.io/os label (a label, not a node selector) names another OS
//  2. spec.os names another OS
//  3. SupplementalGroupsPolicy Strict on a node that does not declare support for it
//  4. resources, against allocatable minus what admitted pods request: pods, cpu,
//     memory, ephemeral-storage, then extended resources the node has (requests of
//     ones it does not have are ignored, as the kubelet does for cluster-level ones):
//     "OutOfcpu", "Node didn't have enough resource: cpu, requested: 4000, used: 30500,
//     capacity: 32000" (millicores; bytes for memory and storage)
//  5. required node affinity and nodeSelector (NodeAffinity)
//  6. spec.nodeName (NodeName)
//  7. host ports an admitted pod already uses (NodePorts)
//  8. a NoExecute taint the pod does not tolerate (TaintToleration)
func admit(node *corev1.Node, admitted []*corev1.Pod, pod *corev1.Pod) admission {
	os := node.Labels[corev1.LabelOSStable]
	if os == "" {
		os = nodeOS
	}
	if want, ok := pod.Labels[corev1.LabelOSStable]; ok && want != os {
		return rejectWith(reasonOSSelectorMismatch, messageOSSelectorMismatch)
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != os {
		return rejectWith(reasonOSNotSupported, messageOSNotSupported)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == corev1.SupplementalGroupsPolicyStrict {
		if f := node.Status.Features; f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
			return rejectWith(reasonSupplementalGroups, messageSupplementalGroups)
		}
	}
	if short := insufficientResource(node.Status.Allocatable, admitted, pod); short != nil {
		return rejectWith(reasonOutOfPrefix+string(short.name), fmt.Sprintf(
			"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", short.name, short.requested, short.used, short.capacity))
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return predicateFailed(predicateNodeAffinity, descriptionNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicateFailed(predicateNodeName, descriptionNodeName)
	}
	if portsConflict(hostPorts(pod), admitted) {
		return predicateFailed(predicateNodePorts, descriptionNodePorts)
	}
	noExecute := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, noExecute, false); untolerated {
		return predicateFailed(predicateTaintToleration, descriptionTaintNotTolerated)
	}
	return admission{}
}

// shortage is one resource a pod asks more of than the node has left.
type shortage struct {
	name                      corev1.ResourceName
	requested, used, capacity int64
}

// insufficientResource returns the first resource pod does not fit in, or nil. Amounts
// are as the kubelet prints them: cpu in millicores, others in their unit (bytes, count).
func insufficientResource(allocatable corev1.ResourceList, admitted []*corev1.Pod, pod *corev1.Pod) *shortage {
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, p := range admitted {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	amount := func(list corev1.ResourceList, name corev1.ResourceName) int64 {
		q, ok := list[name]
		switch {
		case !ok:
			return 0
		case name == corev1.ResourceCPU:
			return q.MilliValue()
		}
		return q.Value()
	}
	// Pods first: a node of 110 pods refuses the 111th whatever it requests.
	if capacity := amount(allocatable, corev1.ResourcePods); int64(len(admitted))+1 > capacity {
		return &shortage{name: corev1.ResourcePods, requested: 1, used: int64(len(admitted)), capacity: capacity}
	}
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	var scalars []corev1.ResourceName
	for name := range want {
		if isScalarResource(name) {
			if _, onNode := allocatable[name]; !onNode && isExtendedResource(name) {
				continue
			}
			scalars = append(scalars, name)
		}
	}
	sort.Slice(scalars, func(i, j int) bool { return scalars[i] < scalars[j] })
	for _, name := range append(names, scalars...) {
		requested, capacity, inUse := amount(want, name), amount(allocatable, name), amount(used, name)
		if requested > 0 && requested > capacity-inUse {
			return &shortage{name: name, requested: requested, used: inUse, capacity: capacity}
		}
	}
	return nil
}

// isExtendedResource tells a resource outside the kubernetes.io namespace ("example.com/gpu").
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, resourceNamespaceKubernetesIO) && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// isScalarResource tells the resources the kubelet counts besides cpu, memory,
// ephemeral-storage and pods: extended ones, hugepages, and kubernetes.io/ ones.
func isScalarResource(name corev1.ResourceName) bool {
	s := string(name)
	return isExtendedResource(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, resourceNamespaceKubernetesIO) || strings.HasPrefix(s, corev1.ResourceAttachableVolumesPrefix)
}

// hostPort is one (ip, protocol, port) a pod binds on its node.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// hostPorts are the host ports of pod's containers and of its sidecars (restartable init
// containers, which run as long as the pod); an empty IP is 0.0.0.0, an empty protocol TCP.
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = defaultHostIP
			}
			if hp.protocol == "" {
				hp.protocol = defaultProtocol
			}
			out = append(out, hp)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
	return out
}

// portsConflict tells whether a wanted port is taken: the same protocol and port on the
// same IP, or on any IP when either side binds 0.0.0.0 (10.0.0.1:80 and 0.0.0.0:80
// conflict; 10.0.0.1:80 and 10.0.0.2:80 do not; 80/TCP and 80/UDP do not).
func portsConflict(want []hostPort, admitted []*corev1.Pod) bool {
	if len(want) == 0 {
		return false
	}
	for _, p := range admitted {
		for _, used := range hostPorts(p) {
			for _, w := range want {
				if w.protocol == used.protocol && w.port == used.port &&
					(w.ip == used.ip || w.ip == defaultHostIP || used.ip == defaultHostIP) {
					return true
				}
			}
		}
	}
	return false
}

// rejectedStatus is the status the kubelet writes for a pod it rejects: Failed with the
// reason and "Pod was rejected: " + message, a start time, and nothing else of its own
// (no IPs, conditions or container statuses: no container was ever started).
func rejectedStatus(pod *corev1.Pod, a admission, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodFailed, a.reason, rejectedPrefix+a.message
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
	}
	return st
}
