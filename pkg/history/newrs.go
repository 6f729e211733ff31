package history

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// NewReplicaSet splits a Deployment's ReplicaSets into its new one — the oldest whose
// template is d's, ignoring the pod-template-hash label (by creation time, then name,
// as upstream's FindNewReplicaSet picks it: with two such ReplicaSets, the older one
// is the Deployment's and the younger an old one) — and the others, oldest first.
// newRS is nil while no ReplicaSet has d's template. The controller, `kroll rollout
// plan` and `kroll rollout status` all pick with it.
func NewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	for _, rs := range rollout.ByCreation(rsList) {
		if newRS == nil && EqualIgnoringHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}
