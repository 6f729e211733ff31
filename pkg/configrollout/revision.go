package configrollout

import corev1 "k8s.io/api/core/v1"

// Cause is the change-cause of a new revision (template cur, snapshots snaps) after
// the revision before it (prev, prevSnaps): what ChangeCause names, when the two
// templates are the same but for HashAnnotation — the configuration alone changed;
// "" otherwise (the user's own change-cause, if any, stands).
func Cause(prev, cur *corev1.PodTemplateSpec, prevSnaps, snaps Snapshots, equal func(a, b *corev1.PodTemplateSpec) bool) string {
	if prev == nil || !equal(WithoutHash(prev), WithoutHash(cur)) {
		return ""
	}
	return ChangeCause(prevSnaps, snaps)
}
