package inplace

import (
	"encoding/json"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The record of a hand-over of pods between two ReplicaSets of a Deployment (see the
// package doc of pkg/controller/deployment): pod names, comma-separated. Only the
// Deployment controller writes them; the ReplicaSet controller reads them.
const (
	// LeavingAnnotation, on the ReplicaSet that gives pods away, names them: its size no
	// longer counts them, and it never deletes them.
	LeavingAnnotation = "kroll.dev/in-place-leaving"
	// ArrivingAnnotation, on the ReplicaSet that takes pods over, names them: its size
	// counts them already, it creates no pod for them, and it takes each one over (one
	// write: its images, labels and owner) once the giving ReplicaSet names it leaving.
	ArrivingAnnotation = "kroll.dev/in-place-arriving"
)

// Names reads a hand-over annotation of rs.
func Names(rs *appsv1.ReplicaSet, key string) sets.Set[string] {
	raw := rs.Annotations[key]
	if raw == "" {
		return nil
	}
	return sets.New(strings.Split(raw, ",")...)
}

// EncodeNames is names as a hand-over annotation's value (sorted, so that an unchanged
// set writes nothing).
func EncodeNames(names sets.Set[string]) string {
	list := names.UnsortedList()
	sort.Strings(list)
	return strings.Join(list, ",")
}

// SetNames sets rs's hand-over annotation key to names (removing it when there are
// none) and reports whether that changed it.
func SetNames(rs *appsv1.ReplicaSet, key string, names sets.Set[string]) bool {
	value := EncodeNames(names)
	if rs.Annotations[key] == value {
		return false
	}
	if value == "" {
		delete(rs.Annotations, key)
		return true
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[key] = value
	return true
}

// Siblings tells whether from and to are two ReplicaSets of the same Deployment: the
// only ones between which a pod is handed over (and then only while from names it
// leaving).
func Siblings(from, to *appsv1.ReplicaSet) bool {
	a, b := metav1.GetControllerOfNoCopy(from), metav1.GetControllerOfNoCopy(to)
	return a != nil && b != nil && a.Kind == "Deployment" && a.UID == b.UID && from.UID != to.UID
}

// Restarting tells whether some container of pod is not yet running the image its spec
// names: the pod was just updated in place and the kubelet has not restarted it yet
// (it may still report ready on the old image).
func Restarting(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		for _, c := range pod.Spec.Containers {
			if c.Name == cs.Name && !reportsImage(cs, c.Image) {
				return true
			}
		}
	}
	return false
}

// ComingBack tells whether pod, updated in place to images (by container name), is
// still on its way back: some container does not report running its image, ready.
func ComingBack(pod *corev1.Pod, images map[string]string) bool {
	return !runs(pod, images)
}

// TakeOverPatch is the one write that hands pod from one ReplicaSet to another: to's
// images, labels (its pod-template-hash among them) and template annotations (those
// only from's template has removed), and to's controllerRef in place of from's. Owner and pod-template-hash change together, so no
// ReplicaSet ever selects a pod another controls. The patch carries pod's
// resourceVersion: it fails if pod changed since it was read, so it is made at most
// once.
func TakeOverPatch(pod *corev1.Pod, from, to *appsv1.ReplicaSet) []byte {
	patch := UpdatePatch(pod, Target{Template: &to.Spec.Template, From: &from.Spec.Template})
	meta := patch["metadata"].(map[string]any)
	meta["resourceVersion"] = pod.ResourceVersion
	meta["ownerReferences"] = []any{
		map[string]any{"$patch": "delete", "uid": from.UID},
		*metav1.NewControllerRef(to, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")),
	}
	b, _ := json.Marshal(patch)
	return b
}
