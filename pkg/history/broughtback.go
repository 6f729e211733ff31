package history

import appsv1 "k8s.io/api/apps/v1"

// BroughtBack tells a Deployment's new ReplicaSet that ran before: an undo, a rollback
// on failure or an abort made an older ReplicaSet current again. Such a rollout is
// never staged (pkg/staging). The reused ReplicaSet carries RevisionHistoryAnnotation
// (its earlier revisions); one created before another of the Deployment's ReplicaSets
// is older too. Creation times alone do not tell: two ReplicaSets created within the
// same second have equal ones.
func BroughtBack(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	if newRS == nil {
		return false
	}
	if newRS.Annotations[RevisionHistoryAnnotation] != "" {
		return true
	}
	for _, rs := range oldRSs {
		if rs != nil && newRS.CreationTimestamp.Before(&rs.CreationTimestamp) {
			return true
		}
	}
	return false
}
