package configrollout

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Decision is the template a workload's new revision has, given its configuration.
type Decision struct {
	// Template is the workload's template with HashAnnotation set to the fingerprint
	// of the revision to run; the workload's own template when it is pinned.
	Template *corev1.PodTemplateSpec
	// Pinned is true while an undo's pin holds (see Effective).
	Pinned bool
	// Hold: a required object is missing and the workload has no revision of its
	// template yet: none is made (Decide).
	Hold bool
	// Record is the PinnedAtAnnotation value to write on the workload ("" to remove
	// it); Write says whether it differs from the one there.
	Record string
	Write  bool
}

// Effective decides the template of a workload's new revision from its own template t,
// the live fingerprint (Resolved.Fingerprint, non-empty) and the workload's
// PinnedAtAnnotation record ("" when absent):
//
//   - t without HashAnnotation (the user's template): t with HashAnnotation = live.
//   - t with HashAnnotation = p (an undo copied a revision's template): pinned to p —
//     t itself — while the live fingerprint is the one recorded when the pin was first
//     seen; the first time, the record "p:live" is to be written. Once the live data
//     changes (a later edit), the pin no longer holds: HashAnnotation = live, the edit
//     rolls forward. Pinned to the live data itself, nothing is pinned.
//
// Worked example: revision 1 runs fingerprint A; the user edits the ConfigMap (B):
// revision 2. `kubectl rollout undo` puts revision 1's template, HashAnnotation A, in
// the Deployment: pinned, record "A:B", revision 1 comes back with its snapshots. The
// user edits the ConfigMap again (C): C ≠ B, the pin is void, revision 3 runs C.
func Effective(t *corev1.PodTemplateSpec, live, record string) Decision {
	pin, pinned := t.Annotations[HashAnnotation]
	if pinned && pin != live {
		want := pin + ":" + live
		recPin, recLive, _ := strings.Cut(record, ":")
		switch {
		case record == "":
			return Decision{Template: t, Pinned: true, Record: want, Write: true}
		case recPin != pin: // a newer undo: pinned from now
			return Decision{Template: t, Pinned: true, Record: want, Write: true}
		case recLive == live:
			return Decision{Template: t, Pinned: true, Record: record}
		}
		// The live data changed since the pin: roll forward; the record stays (it
		// voids this pin until another undo).
		return Decision{Template: WithHash(t, live), Record: record}
	}
	if !pinned {
		return Decision{Template: WithHash(t, live), Write: record != ""}
	}
	return Decision{Template: t, Record: record}
}

// WithHash is a copy of t with HashAnnotation = hash.
func WithHash(t *corev1.PodTemplateSpec, hash string) *corev1.PodTemplateSpec {
	out := t.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[HashAnnotation] = hash
	return out
}

// WithoutHash is a copy of t without HashAnnotation: the user's template of a
// revision (what views compare).
func WithoutHash(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := t.DeepCopy()
	delete(out.Annotations, HashAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}
