package inplace

import (
	"encoding/json"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is the record an in-place update keeps on its pod (StateAnnotation), so that a
// controller restarted at any moment resumes from the pod alone.
type State struct {
	// Revision is the revision the pod is being updated to.
	Revision string `json:"revision"`
	// Images are the target images by container name.
	Images map[string]string `json:"images"`
	// PreviousImageIDs are the containers' image IDs before the update, for the record.
	PreviousImageIDs map[string]string `json:"previousImageIDs,omitempty"`
	// OutOfServiceSince is when the readiness gate was set False (the grace period
	// counts from it).
	OutOfServiceSince metav1.MicroTime `json:"outOfServiceSince"`
}

// StateOf reads pod's record; ok is false without one (or with one that does not parse).
func StateOf(pod *corev1.Pod) (State, bool) {
	var s State
	raw, found := pod.Annotations[StateAnnotation]
	if !found || json.Unmarshal([]byte(raw), &s) != nil {
		return State{}, false
	}
	return s, true
}

// Encode is s as the annotation value.
func (s State) Encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Step is what an in-place update of one pod does next.
type Step string

const (
	// Done: the pod runs the target images, has the target's labels and annotations,
	// and serves.
	Done Step = "Done"
	// TakeOut: set the readiness gate False and record the State.
	TakeOut Step = "TakeOut"
	// Wait: the grace period, or the containers restarting on their new images.
	Wait Step = "Wait"
	// Patch: set the target images in the pod's spec and the target's labels and
	// annotations on it (one write). Without an image to change it restarts nothing:
	// the pod stays in service.
	Patch Step = "Patch"
	// WriteResize: write the target's container cpu and memory through the pod's
	// pods/resize subresource (Resize.Patch), once its images and metadata are in place.
	// Whether it restarts a container is the container's resizePolicy (Resize.Restarts).
	WriteResize Step = "Resize"
	// PutBack: set the readiness gate True.
	PutBack Step = "PutBack"
)

// HasGate tells whether pod was created with the in-place readiness gate. A pod made
// before its workload opted in has none (a pod's readiness gates cannot be changed): it
// is updated without the out-of-service step, and the kubelet reports it not ready
// while its containers restart on the new images.
func HasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == ReadinessGate {
			return true
		}
	}
	return false
}

// GateStatus is the status of pod's in-place readiness condition ("" when unset).
func GateStatus(pod *corev1.Pod) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == ReadinessGate {
			return c.Status
		}
	}
	return ""
}

// Want is a pod as an in-place update to a Target leaves it.
type Want struct {
	// Images are the target images by container (and init container) name.
	Images map[string]string
	// Labels and Annotations are what the pod carries afterwards: the target template's,
	// and (labels) the revision's.
	Labels, Annotations map[string]string
	// DropLabels and DropAnnotations are keys the template the pod was made from set and
	// the target's does not: a pod made from the target would not have them. Empty when
	// that template is not known.
	DropLabels, DropAnnotations []string
	// Resources is the template whose container cpu and memory the pod is resized to
	// (PlanResize, ResizeDone); nil: resources are not part of the update.
	Resources *corev1.PodTemplateSpec
}

// NextStep is the next step of updating pod in place to want, with the grace period
// between taking it out of service and changing it; for Wait, how long at most (0:
// until the pod changes). The contract, in order:
//
//  1. While the spec lacks a target image, or a resize is due that restarts a container
//     (resizePolicy RestartContainer): with a grace period and the gate, take the pod
//     out of service (gate False, State recorded) and wait it out. Then patch the
//     images, labels and annotations. Without a grace period the patch (or the resize)
//     is the first write: the kubelet takes the pod out of service as it restarts the
//     containers.
//  2. While only labels or annotations differ (a template change without an image, or
//     the revision label): patch them. Nothing restarts, so the pod is not taken out of
//     service for it.
//  3. While the spec lacks the target's container cpu and memory: resize it, one write
//     through pods/resize, after the image patch (a pod whose resize its node cannot
//     make has its images already; the two writes cannot be one, pods/resize takes
//     resources alone).
//  4. Once the pod has them all: wait until every changed container reports running
//     the new image and ready, and the kubelet reports the resize made (ResizeDone),
//     then put the pod back if it was taken out (gate True, State removed).
//
// Every step is decided from the pod alone, so a restarted controller resumes where
// the last one stopped; a pod whose target went back to what it runs (an undo before
// the patch) is simply put back. Whether the pod's node can make its resize at all is
// the caller's to judge (Unfit) before the resize and while it waits.
func NextStep(pod *corev1.Pod, want Want, grace time.Duration, now time.Time) (Step, time.Duration) {
	gated := HasGate(pod)
	var resize Resize
	if want.Resources != nil {
		resize = PlanResize(pod, want.Resources)
	}
	newImages := !specHas(pod, want.Images)
	if newImages || resize.Restarting() {
		if gated && grace > 0 && GateStatus(pod) != corev1.ConditionFalse {
			return TakeOut, 0
		}
		if s, ok := StateOf(pod); ok && gated {
			if left := s.OutOfServiceSince.Add(grace).Sub(now); left > 0 {
				return Wait, left
			}
		}
	}
	if newImages || !hasMetadata(pod, want) {
		return Patch, 0
	}
	if !resize.Empty() {
		return WriteResize, 0
	}
	if !runs(pod, want.Images) || (want.Resources != nil && !ResizeDone(pod, want.Resources)) {
		return Wait, 0
	}
	if _, recorded := StateOf(pod); recorded || (gated && GateStatus(pod) != corev1.ConditionTrue) {
		return PutBack, 0
	}
	return Done, 0
}

// hasMetadata tells whether pod carries want's labels and annotations, and none of
// those it drops.
func hasMetadata(pod *corev1.Pod, want Want) bool {
	has := func(have, set map[string]string, drop []string) bool {
		for k, v := range set {
			if got, ok := have[k]; !ok || got != v {
				return false
			}
		}
		for _, k := range drop {
			if _, ok := have[k]; ok {
				return false
			}
		}
		return true
	}
	return has(pod.Labels, want.Labels, want.DropLabels) && has(pod.Annotations, want.Annotations, want.DropAnnotations)
}

// specHas tells whether pod's spec has every image of images.
func specHas(pod *corev1.Pod, images map[string]string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if want, ok := images[c.Name]; ok && c.Image != want {
				return false
			}
		}
	}
	return true
}

// runs tells whether each container of pod reports running images[its name] and ready
// (init containers: having run it). The kubelet reports the image a container runs,
// not the one in the spec, so a container not yet restarted does not count.
func runs(pod *corev1.Pod, images map[string]string) bool {
	check := func(statuses []corev1.ContainerStatus, init bool) bool {
		for _, cs := range statuses {
			want, ok := images[cs.Name]
			if !ok {
				continue
			}
			if !reportsImage(cs, want) {
				return false
			}
			if !init && (!cs.Ready || cs.State.Running == nil) {
				return false
			}
		}
		return true
	}
	return check(pod.Status.InitContainerStatuses, true) && check(pod.Status.ContainerStatuses, false)
}

// reportsImage tells whether cs reports running image (as written, or with the
// registry prefix a runtime adds).
func reportsImage(cs corev1.ContainerStatus, image string) bool {
	return cs.Image == image || sameImageName(cs.Image, image)
}

// sameImageName tells images that differ only by the registry prefix a runtime adds
// ("nginx:1.16" reported as "docker.io/library/nginx:1.16").
func sameImageName(reported, want string) bool {
	for _, prefix := range []string{"docker.io/library/", "docker.io/"} {
		if reported == prefix+want {
			return true
		}
	}
	return false
}

// OutOfService returns the State to record when taking pod out of service for images
// of revision at now.
func OutOfService(pod *corev1.Pod, revision string, images map[string]string, now time.Time) State {
	prev := map[string]string{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if _, ok := images[cs.Name]; ok {
				prev[cs.Name] = cs.ImageID
			}
		}
	}
	return State{Revision: revision, Images: images, PreviousImageIDs: prev, OutOfServiceSince: metav1.NewMicroTime(now)}
}

// Settled returns the pods that are not mid-way through an in-place update (no State).
func Settled(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if _, mid := StateOf(p); !mid {
			out = append(out, p)
		}
	}
	return out
}

// DeploymentOptedIn tells whether rs belongs to a Deployment that opted in to in-place
// updates: the Deployment controller copies the Deployment's annotations, the
// StrategyAnnotation among them, to its ReplicaSets.
func DeploymentOptedIn(rs *appsv1.ReplicaSet) bool {
	ref := metav1.GetControllerOfNoCopy(rs)
	mode, err := ModeOf(rs.Annotations)
	return ref != nil && ref.Kind == "Deployment" && err == nil && mode != Off
}
