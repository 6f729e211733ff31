package configrollout

import corev1 "k8s.io/api/core/v1"

// Revise decides the template of a workload's new revision — a Deployment's new
// ReplicaSet, a StatefulSet's or DaemonSet's update ControllerRevision — from its own
// template t, the configuration found now (r), its PinnedAtAnnotation record and the
// templates of its revisions, oldest first. equal compares two templates as the kind
// compares revisions (a Deployment ignores pod-template-hash); Revise strips
// HashAnnotation itself where it must.
//
//   - A required object missing (r.Missing): nothing new rolls. The new revision is
//     the newest whose template is t, HashAnnotation apart (its configuration is the
//     last one that resolved); with none, Hold (a Deployment makes no ReplicaSet, a set
//     keeps its update revision).
//   - Otherwise Effective; a pin to a revision that is gone (pruned beyond
//     revisionHistoryLimit, its snapshots with it) cannot bring its configuration back:
//     the live configuration rolls instead.
//
// Worked example (a StatefulSet, revisions 1 = image v1 with fingerprint A, 2 = image
// v1 with B): the user deletes app-config. r.Missing names it; the newest revision of
// t is 2: the update revision stays 2, no pod is replaced, the condition names
// configmap/app-config.
func Revise(t *corev1.PodTemplateSpec, r Resolved, record string, revisions []*corev1.PodTemplateSpec, equal func(a, b *corev1.PodTemplateSpec) bool) Decision {
	if len(r.Missing) > 0 {
		plain := WithoutHash(t)
		for i := len(revisions) - 1; i >= 0; i-- {
			if equal(WithoutHash(revisions[i]), plain) {
				return Decision{Template: revisions[i], Record: record}
			}
		}
		return Decision{Hold: true, Record: record}
	}
	d := Effective(t, r.Fingerprint, record)
	if d.Pinned && !containsTemplate(revisions, d.Template, equal) {
		d.Template = WithHash(d.Template, r.Fingerprint)
	}
	return d
}

func containsTemplate(revisions []*corev1.PodTemplateSpec, t *corev1.PodTemplateSpec, equal func(a, b *corev1.PodTemplateSpec) bool) bool {
	for _, r := range revisions {
		if equal(r, t) {
			return true
		}
	}
	return false
}

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
