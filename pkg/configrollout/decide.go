package configrollout

import (
	"strings"

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
//   - The newest revision was made without configuration rollout (by upstream's
//     controllers before a takeover, or before the opt-in) and is t's: it is adopted
//     as it is (see adopt), nothing rolls until the data is edited.
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
	if dec, ok := adopt(t, r.Fingerprint, record, revisions, equal); ok {
		return dec
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

// adopt decides for a workload whose newest revision has no HashAnnotation and is its
// own template t (t unpinned): a revision made by upstream's controllers (their
// takeover made one of the plain template; kroll taking over again must not roll it
// back) or before the workload opted in. Its pods read the live objects, so it already
// runs the live configuration: it stays the new revision, and the live fingerprint
// when it was first seen is recorded (PinnedAtAnnotation ":<live>", an empty pin). The
// next edit of the data rolls forward as any edit does: a revision with
// HashAnnotation = live, its snapshots, through the strategy. ok is false when the
// rule does not apply.
//
// Worked example: kroll ran revision 2 (fingerprint B, pods on snapshots); upstream's
// controllers took over and rolled once to revision 3, the plain template. kroll takes
// over again, live data B: without this rule t with B is revision 2's template, and
// revision 2 would be scaled up again (every pod replaced). With it: revision 3 stays,
// record ":B" is written. The ConfigMap is edited (C): C ≠ B, revision 4 with C rolls.
func adopt(t *corev1.PodTemplateSpec, live, record string, revisions []Revision, equal func(a, b *corev1.PodTemplateSpec) bool) (Decision, bool) {
	if _, pinned := t.Annotations[HashAnnotation]; pinned {
		return Decision{}, false
	}
	var newest *Revision
	for i := range revisions {
		if newest == nil || revisions[i].Number > newest.Number {
			newest = &revisions[i]
		}
	}
	if newest == nil || !equal(newest.Template, t) {
		return Decision{}, false
	}
	if _, hashed := newest.Template.Annotations[HashAnnotation]; hashed {
		return Decision{}, false
	}
	recPin, recLive, _ := strings.Cut(record, ":")
	switch {
	case record == "" || recPin != "": // first seen (or an undo's record of before)
		return Decision{Template: t, Record: ":" + live, Write: true}, true
	case recLive == live:
		return Decision{Template: t, Record: record}, true
	}
	// Edited since: roll forward; the record is removed once the new revision is the
	// newest (Effective, unpinned).
	return Decision{Template: WithHash(t, live), Record: record}, true
}
