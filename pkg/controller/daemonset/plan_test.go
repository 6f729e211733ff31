package daemonset

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/placement"
)

func newDaemonSet(maxUnavailable, maxSurge string) *appsv1.DaemonSet {
	u, s := intstr.Parse(maxUnavailable), intstr.Parse(maxSurge)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "default", UID: "ds-uid", Annotations: map[string]string{TemplateGenerationAnnotation: "2"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "logs"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "logs"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "fluentd:v2"}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &u, MaxSurge: &s}},
		},
	}
}

// daemonPod is a pod on node at hash ("new" or "old"), ready for an hour or not ready.
func daemonPod(node, hash string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + hash, Labels: map[string]string{RevisionLabel: hash}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}},
	}
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return fmt.Sprint(out)
}

func TestPlanRollingUpdate(t *testing.T) {
	node := func(name string, pods ...*corev1.Pod) onNode {
		return splitPods(newDaemonSet("1", "0"), name, true, pods, "new")
	}
	tests := []struct {
		name                     string
		maxUnavailable, maxSurge int
		nodes                    []onNode
		deletes, creates         string
	}{
		{"start: one old pod goes", 1, 0,
			[]onNode{node("a", daemonPod("a", "old", true)), node("b", daemonPod("b", "old", true)), node("c", daemonPod("c", "old", true))},
			"[a-old]", "[]"},
		{"a new pod not yet available holds the rest", 1, 0,
			[]onNode{node("a", daemonPod("a", "new", false)), node("b", daemonPod("b", "old", true))},
			"[]", "[]"},
		{"an old pod that is not available is replaced at once", 1, 0,
			[]onNode{node("a", daemonPod("a", "new", false)), node("b", daemonPod("b", "old", false)), node("c", daemonPod("c", "old", true))},
			"[b-old]", "[]"},
		{"maxUnavailable 2: two at once", 2, 0,
			[]onNode{node("a", daemonPod("a", "old", true)), node("b", daemonPod("b", "old", true)), node("c", daemonPod("c", "old", true))},
			"[a-old b-old]", "[]"},
		{"surge: new pods first, on maxSurge nodes", 0, 1,
			[]onNode{node("a", daemonPod("a", "old", true)), node("b", daemonPod("b", "old", true))},
			"[]", "[a]"},
		{"surge: the old pod goes once the new one is available", 0, 1,
			[]onNode{node("a", daemonPod("a", "old", true), daemonPod("a", "new", true)), node("b", daemonPod("b", "old", true))},
			"[a-old]", "[b]"},
		{"surge: no new pod on a node the DaemonSet no longer places pods on", 0, 1,
			[]onNode{splitPods(newDaemonSet("1", "0"), "a", false, []*corev1.Pod{daemonPod("a", "old", true)}, "new"), node("b", daemonPod("b", "old", true))},
			"[]", "[b]"},
		{"surge: a new pod not yet available uses the surge", 0, 1,
			[]onNode{node("a", daemonPod("a", "old", true), daemonPod("a", "new", false)), node("b", daemonPod("b", "old", true))},
			"[]", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planRollingUpdate(newDaemonSet("1", "0"), tt.nodes, tt.maxUnavailable, tt.maxSurge, time.Now())
			if got := names(plan.deletes); got != tt.deletes {
				t.Errorf("deletes %s, want %s", got, tt.deletes)
			}
			if got := fmt.Sprint(plan.creates); got != tt.creates {
				t.Errorf("creates %s, want %s", got, tt.creates)
			}
		})
	}
}

func TestNewPod(t *testing.T) {
	ds := newDaemonSet("1", "0")
	pod := newPod(ds, "kroll-node-3", "abc")
	if pod.GenerateName != "logs-" || pod.Labels[RevisionLabel] != "abc" || pod.Labels[TemplateGenerationLabel] != "2" || !metav1.IsControlledBy(pod, ds) {
		t.Errorf("pod %s labels %v owners %v", pod.GenerateName, pod.Labels, pod.OwnerReferences)
	}
	if placement.TargetNode(pod) != "kroll-node-3" || pod.Spec.NodeName != "" {
		t.Errorf("pod targets %q (nodeName %q); want node affinity to kroll-node-3, left to the scheduler", placement.TargetNode(pod), pod.Spec.NodeName)
	}
	daemonTolerations := placement.WithDaemonTolerations(&corev1.PodSpec{})
	if len(pod.Spec.Tolerations) != len(daemonTolerations) {
		t.Errorf("%d tolerations, want the %d daemon ones", len(pod.Spec.Tolerations), len(daemonTolerations))
	}
	if ds.Spec.Template.Labels[RevisionLabel] != "" || ds.Spec.Template.Spec.Affinity != nil {
		t.Error("the DaemonSet's template was modified")
	}
}
