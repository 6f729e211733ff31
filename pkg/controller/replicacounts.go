package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// ReplicaCounts are the counts of a ReplicaSet's pods that its status reports.
type ReplicaCounts struct {
	// Replicas: active pods. FullyLabeled: those carrying every template label.
	Replicas, FullyLabeled int32
	// Ready and Available: active pods ready, and available (see CountReplicas).
	Ready, Available int32
	// Terminating: pods being deleted that have not finished.
	Terminating int32
}

// CountReplicas counts rs's active and terminating pods at now as its status reports
// them: available means ready for at least minReadySeconds, not about to restart on
// images an in-place update just set (inplace.Restarting), and not resizing to the
// template (ResizingToTemplate).
//
// A pod rs names leaving (inplace.LeavingAnnotation: handed over in place to another
// ReplicaSet of its Deployment) counts among its replicas but as neither ready nor
// available: it goes out of service as it arrives, and the Deployment controller
// counted it out when it picked it.
//
// The ReplicaSet controller writes these counts; the Deployment controller counts a
// ReplicaSet's pods with it too where the ReplicaSet's own report is known to be
// behind (see the Deployment controller's counted).
func CountReplicas(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, now time.Time) ReplicaCounts {
	n := ReplicaCounts{Replicas: int32(len(active)), Terminating: int32(len(terminating))}
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	leaving := inplace.Names(rs, inplace.LeavingAnnotation)
	for _, p := range active {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			n.FullyLabeled++
		}
		if !leaving.Has(p.Name) && rollout.IsPodReady(p) {
			n.Ready++
			if rollout.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) && !inplace.Restarting(p) && !ResizingToTemplate(rs, p) {
				n.Available++
			}
		}
	}
	return n
}

// ResizingToTemplate tells a pod of an in-place Deployment's ReplicaSet that is being
// resized to its template (inplace.Resizing): the Deployment controller resizes each pod
// once it arrives, and until the kubelet reports the new resources it is not counted
// available, so that the Deployment is not reported complete (`kubectl rollout status`
// done) before every pod runs with them, and a resize that restarts nothing is paced by
// maxUnavailable like one that does. Other ReplicaSets' pods are not judged: a pod
// resized by hand is the user's.
func ResizingToTemplate(rs *appsv1.ReplicaSet, p *corev1.Pod) bool {
	return inplace.DeploymentOptedIn(rs) && inplace.Resizing(p, &rs.Spec.Template)
}

// SplitPodsOf returns the pods that the object with uid controls, as the indexed cache
// shows them, split as a ReplicaSet's status counts them: active ones, and those being
// deleted that have not finished (shared objects: do not modify them).
func SplitPodsOf(indexer cache.Indexer, uid string) (active, terminating []*corev1.Pod) {
	for p := range PodsOf(indexer, uid) {
		switch {
		case rollout.IsPodActive(p):
			active = append(active, p)
		case rollout.IsPodTerminating(p):
			terminating = append(terminating, p)
		}
	}
	return active, terminating
}
