// Package placement says where a DaemonSet's pods belong: the nodes its template fits
// (nodeName, nodeSelector, required node affinity, and the node's taints against the
// template's tolerations plus the daemon ones upstream adds), and how a daemon pod is
// pinned to its node for the scheduler. kroll's DaemonSet controller places pods by it,
// and `kroll rollout plan` plans with it, so that the two agree on every node.
package placement

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedhelpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// daemonTolerations are added to every DaemonSet pod, as upstream adds them: a daemon
// keeps running on a node that is not ready, unreachable, under pressure or cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkToleration is added too when the pod uses the host's network.
var hostNetworkToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// WithDaemonTolerations returns spec's tolerations with the daemon ones added (an equal
// one is not added twice).
func WithDaemonTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), spec.Tolerations...)
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(append([]corev1.Toleration(nil), daemonTolerations...), hostNetworkToleration)
	}
	for _, t := range add {
		found := false
		for _, have := range out {
			if have.Key == t.Key && have.Operator == t.Operator && have.Value == t.Value && have.Effect == t.Effect {
				found = true
				break
			}
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// PinnedTo returns affinity with its required node affinity replaced by one term that
// selects node by name: the scheduler places the pod there (and checks it fits).
func PinnedTo(affinity *corev1.Affinity, node string) *corev1.Affinity {
	out := affinity.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}},
	}
	return out
}

// TargetNode is the node a daemon pod is for: where it runs, else the node its
// required affinity names.
func TargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// Fit says whether a DaemonSet's pod belongs on a node: ShouldRun, a pod should be
// placed there; ShouldContinue, a pod already there may stay.
type Fit struct{ ShouldRun, ShouldContinue bool }

// NodeFit decides Fit: the template's nodeName (if any) and its nodeSelector and
// required node affinity must match the node, and its tolerations (with the daemon
// ones) must tolerate the node's NoSchedule and NoExecute taints — for a running pod,
// only the NoExecute ones.
func NodeFit(ds *appsv1.DaemonSet, node *corev1.Node) Fit {
	spec := &ds.Spec.Template.Spec
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return Fit{}
	}
	probe := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: spec.NodeSelector, Affinity: spec.Affinity}}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(probe).Match(node); err != nil || !ok {
		return Fit{}
	}
	tolerations := WithDaemonTolerations(spec)
	logger := klog.Background()
	_, untoleratedNoExecute := schedhelpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	_, untolerated := schedhelpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	return Fit{ShouldRun: !untolerated, ShouldContinue: !untoleratedNoExecute}
}
