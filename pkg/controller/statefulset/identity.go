package statefulset

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// The labels a StatefulSet's pods carry besides their template's.
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
	RevisionLabel = appsv1.StatefulSetRevisionLabel
)

// parentAndOrdinal splits a pod name "<set>-<ordinal>" at its last "-", after which
// only digits may follow; ok is false for other names. (It is read for every pod on
// every sync: a regular expression cost a twentieth of the controller's CPU.)
func parentAndOrdinal(name string) (parent string, ordinal int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	digits := name[i+1:]
	if i < 0 || digits == "" {
		return "", 0, false
	}
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return name[:i], n, true
}

// isMember tells whether pod is, by its name, one of set's pods.
func isMember(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _, ok := parentAndOrdinal(pod.Name)
	return ok && parent == set.Name
}

func ordinalOf(pod *corev1.Pod) int {
	_, n, ok := parentAndOrdinal(pod.Name)
	if !ok {
		return -1
	}
	return n
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// startOrdinal is the set's first ordinal (spec.ordinals.start, default 0).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// claimName is the PVC of claim template claim for the pod of ordinal: "<claim>-<pod>".
func claimName(claim string, set *appsv1.StatefulSet, ordinal int) string {
	return claim + "-" + podName(set, ordinal)
}

// newPod is set's pod of ordinal from revisionSet's template (the set as revision
// describes it), labelled with revision: named "<set>-<ordinal>", with hostname and
// subdomain for its stable network identity, and a volume per claim template.
func newPod(set, revisionSet *appsv1.StatefulSet, revision string, ordinal int) *corev1.Pod {
	t := revisionSet.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        podName(set, ordinal),
			Namespace:   set.Namespace,
			Labels:      t.Labels,
			Annotations: t.Annotations,
			Finalizers:  t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[RevisionLabel] = revision
	if mode, _ := inplace.ModeOf(set.Annotations); mode != inplace.Off && set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		// Opted in to in-place updates: the pod serves only once kroll says so.
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: inplace.ReadinessGate})
	}
	setIdentity(set, pod, ordinal)
	setStorage(set, pod, ordinal)
	return pod
}

// setIdentity gives pod its name-derived labels, hostname and subdomain.
func setIdentity(set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) {
	pod.Name = podName(set, ordinal)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[PodNameLabel] = pod.Name
	pod.Labels[PodIndexLabel] = strconv.Itoa(ordinal)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
}

// hasIdentity tells whether pod has the identity setIdentity gives it.
func hasIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _, ok := parentAndOrdinal(pod.Name)
	return ok && parent == set.Name && pod.Namespace == set.Namespace && pod.Labels[PodNameLabel] == pod.Name
}

// setStorage mounts pod's claims: one volume per claim template, named after it,
// replacing a template volume of that name.
func setStorage(set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return
	}
	claims := make(map[string]bool, len(set.Spec.VolumeClaimTemplates))
	var volumes []corev1.Volume
	for _, c := range set.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
		volumes = append(volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(c.Name, set, ordinal)}}})
	}
	for _, v := range pod.Spec.Volumes {
		if !claims[v.Name] {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// hasStorage tells whether pod mounts each of its claims.
func hasStorage(set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) bool {
	mounted := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			mounted[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	for _, c := range set.Spec.VolumeClaimTemplates {
		if mounted[c.Name] != claimName(c.Name, set, ordinal) {
			return false
		}
	}
	return true
}

// newClaim is the PVC of claim template t for the pod of ordinal: the template's labels
// with the set's matchLabels over them.
func newClaim(set *appsv1.StatefulSet, t *corev1.PersistentVolumeClaim, ordinal int) *corev1.PersistentVolumeClaim {
	c := t.DeepCopy()
	c.ObjectMeta = metav1.ObjectMeta{
		Name:        claimName(t.Name, set, ordinal),
		Namespace:   set.Namespace,
		Labels:      c.Labels,
		Annotations: c.Annotations,
	}
	if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for k, v := range set.Spec.Selector.MatchLabels {
			c.Labels[k] = v
		}
	}
	c.Status = corev1.PersistentVolumeClaimStatus{}
	return c
}
