package history

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// NewReplicaSet splits a Deployment's ReplicaSets into its new one — the oldest whose
// template is d's, ignoring the pod-template-hash label (by creation time, then name,
// as upstream's FindNewReplicaSet picks it: with two such ReplicaSets, the older one
// is the Deployment's and the younger an old one) — and the others, oldest first.
// newRS is nil while no ReplicaSet has d's template. The controller, `kroll rollout
// plan` and `kroll rollout status` all pick with it.
//
// A Deployment with configuration rollout (kroll.dev/config-rollout) whose template
// does not pin a configuration has ReplicaSets whose templates are its own plus
// kroll.dev/config-hash: without the live configuration at hand (a view), its new
// ReplicaSet is the one of the highest revision among those, the one its controller
// made last. The controller itself picks with NewReplicaSetFor and the template of the
// live configuration.
func NewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	newRS, old = NewReplicaSetFor(&d.Spec.Template, rsList)
	if on, _ := configrollout.Enabled(d.Annotations); newRS != nil || !on || d.Spec.Template.Annotations[configrollout.HashAnnotation] != "" {
		return newRS, old
	}
	for _, rs := range old {
		if EqualIgnoringHash(configrollout.WithoutHash(&rs.Spec.Template), &d.Spec.Template) && (newRS == nil || Revision(rs) > Revision(newRS)) {
			newRS = rs
		}
	}
	if newRS == nil {
		return nil, old
	}
	rest := make([]*appsv1.ReplicaSet, 0, len(old)-1)
	for _, rs := range old {
		if rs != newRS {
			rest = append(rest, rs)
		}
	}
	return newRS, rest
}

// NewReplicaSetFor is NewReplicaSet for the ReplicaSets of template.
func NewReplicaSetFor(template *corev1.PodTemplateSpec, rsList []*appsv1.ReplicaSet) (newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	for _, rs := range rollout.ByCreation(rsList) {
		if newRS == nil && EqualIgnoringHash(&rs.Spec.Template, template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}
