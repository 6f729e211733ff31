package configrollout

import (
	corev1 "k8s.io/api/core/v1"
)

// Revision is one of a workload's revisions as Decide sees it: its number and its
// template (a Deployment's ReplicaSet's; a set's ControllerRevision applied).
type Revision struct {
	Number   int64
	Template *corev1.PodTemplateSpec
}

// Decide is the one decision of configuration rollout, made by the controllers and
// by the views that say what they will do (`kroll rollout plan`): the template of the
// workload's new revision, given its own template t, its configuration now r, its
// PinnedAtAnnotation record and its revisions. equal compares two templates as the
// workload's controller does (a Deployment's ignores the pod-template-hash label).
//
//   - A required object is missing (r.Missing): nothing rolls. The new revision stays
//     the newest of t's, whatever its configuration (HashAnnotation apart); with none
//     yet, Hold: no revision is made until the object exists.
//   - Otherwise Effective decides; a pin to a revision that is gone (pruned with
//     revisionHistoryLimit, its snapshots with it) cannot bring its configuration
//     back: the live configuration rolls instead.
//
// Worked example: revisions 1 (fingerprint A) and 2 (B) of a Deployment whose live
// data is B; the user deletes the ConfigMap: Missing, the new revision stays 2 (the
// template of revision 2, B), nothing rolls. The ConfigMap comes back with data C:
// Effective gives t with HashAnnotation C, no revision has it: revision 3 rolls.
func Decide(t *corev1.PodTemplateSpec, r Resolved, record string, revisions []Revision, equal func(a, b *corev1.PodTemplateSpec) bool) Decision {
	if len(r.Missing) > 0 {
		plain := WithoutHash(t)
		var newest *Revision
		for i := range revisions {
			if equal(WithoutHash(revisions[i].Template), plain) && (newest == nil || revisions[i].Number > newest.Number) {
				newest = &revisions[i]
			}
		}
		if newest == nil {
			return Decision{Template: t, Hold: true, Record: record}
		}
		return Decision{Template: newest.Template, Record: record}
	}
	dec := Effective(t, r.Fingerprint, record)
	if dec.Pinned {
		for _, rev := range revisions {
			if equal(rev.Template, dec.Template) {
				return dec
			}
		}
		dec.Template, dec.Pinned = WithHash(dec.Template, r.Fingerprint), false
	}
	return dec
}
