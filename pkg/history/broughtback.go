package history

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerRevisionHistoryAnnotation lists, comma-separated, the earlier numbers a
// StatefulSet's or DaemonSet's ControllerRevision had before a rollback renumbered it
// to be the newest again ("2" on revision 4 of an undo from 3 to 2): what
// RevisionHistoryAnnotation is on a Deployment's ReplicaSet. Upstream's controllers do
// not write it; kroll's write it in the same Update that renumbers the revision.
const ControllerRevisionHistoryAnnotation = "kroll.dev/revision-history"

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
	return broughtBack(newRS, RevisionHistoryAnnotation, metas(oldRSs))
}

// RevisionBroughtBack is BroughtBack for a StatefulSet's or DaemonSet's newest
// ControllerRevision (its update revision, or its template's) among others: it
// carries ControllerRevisionHistoryAnnotation, or was created before one of others
// (a revision renumbered by a controller that keeps no such record).
func RevisionBroughtBack(newest *appsv1.ControllerRevision, others []*appsv1.ControllerRevision) bool {
	if newest == nil {
		return false
	}
	return broughtBack(newest, ControllerRevisionHistoryAnnotation, metas(others))
}

func broughtBack(newest metav1.Object, historyKey string, others []metav1.Object) bool {
	if newest.GetAnnotations()[historyKey] != "" {
		return true
	}
	created := newest.GetCreationTimestamp()
	for _, o := range others {
		if at := o.GetCreationTimestamp(); created.Before(&at) {
			return true
		}
	}
	return false
}

// metas is objs without the nil ones, as metav1.Objects.
func metas[T interface {
	*appsv1.ReplicaSet | *appsv1.ControllerRevision
	metav1.Object
}](objs []T) []metav1.Object {
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}
