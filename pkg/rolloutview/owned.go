package rolloutview

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Owned are a namespace's (or every namespace's) ReplicaSets, ControllerRevisions and
// pods, from which each workload's own are picked by controllerRef: what `kroll
// status` lists once for all its rows, and the dashboard reads from its informers.
type Owned struct {
	ReplicaSets []*appsv1.ReplicaSet
	Revisions   []*appsv1.ControllerRevision
	Pods        []*corev1.Pod
	// Nodes are the cluster's, listed for DaemonSets: a staged DaemonSet counts the
	// nodes its template should run on.
	Nodes []*corev1.Node
}

// SnapshotOf picks obj's own ReplicaSets, revisions and pods out of o.
func (o Owned) SnapshotOf(obj runtime.Object, now time.Time) Snapshot {
	s := Snapshot{Object: obj, Now: now}
	uid := obj.(metav1.Object).GetUID()
	owners := map[types.UID]bool{uid: true}
	if _, ok := obj.(*appsv1.Deployment); ok {
		for _, rs := range o.ReplicaSets {
			if controlledBy(rs, uid) {
				s.ReplicaSets = append(s.ReplicaSets, rs)
				owners[rs.UID] = true
			}
		}
	} else {
		for _, r := range o.Revisions {
			if controlledBy(r, uid) {
				s.Revisions = append(s.Revisions, r)
			}
		}
	}
	if _, ok := obj.(*appsv1.DaemonSet); ok {
		s.Nodes = o.Nodes
	}
	for _, p := range o.Pods {
		if ref := metav1.GetControllerOf(p); ref != nil && owners[ref.UID] {
			s.Pods = append(s.Pods, p)
		}
	}
	return s
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}
