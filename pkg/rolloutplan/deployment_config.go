package rolloutplan

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/history"
)

// Configuration is the live ConfigMaps and Secrets, by name, that a workload opted
// into configuration rollout (kroll.dev/config-rollout) references: what its
// controller fingerprints to decide its new revision. An object it references and
// that is not here does not exist.
type Configuration struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
}

// hashOf is the data hash of ref as the controller computes it; ok false when absent.
func (c Configuration) hashOf(ref configrollout.Ref) (string, bool) {
	if ref.Kind == configrollout.ConfigMap {
		if cm := c.ConfigMaps[ref.Name]; cm != nil {
			return configrollout.ConfigMapHash(cm), true
		}
		return "", false
	}
	if s := c.Secrets[ref.Name]; s != nil {
		return configrollout.SecretHash(s), true
	}
	return "", false
}

// configOutcome is what configuration rollout makes of a Deployment's change.
type configOutcome struct {
	// cur and next are the Deployment before and after with the templates its
	// controller rolls between: cur's that of its current ReplicaSet, next's the one
	// configrollout.Decide gives (kroll.dev/config-hash included). nil: the
	// Deployment's own (configuration rollout off).
	cur, next *appsv1.Deployment
	// changes name a configuration change that rolls; notes what holds it back.
	changes, notes []string
	// hold: a required object is missing and no ReplicaSet has next's template: the
	// controller makes none, nothing moves.
	hold bool
}

// configFor decides, with the controller's own decision (configrollout.Decide), the
// templates the rollout of cur into next runs between when next opts into
// configuration rollout: the live data differing from the current revision's
// fingerprint rolls a new revision, as a new image does.
//
// Worked example: revision 2 of web runs app-config with greeting v1 (its snapshot
// app-config-7c9d…); the ConfigMap now holds v2. Decide gives web's template with
// kroll.dev/config-hash of v2's fingerprint; no ReplicaSet has it: a new revision 3,
// "configmap/app-config changed: a new revision will roll out with the live data".
func configFor(cur, next *appsv1.Deployment, rss []*appsv1.ReplicaSet, live Configuration) configOutcome {
	var out configOutcome
	on, problem := configrollout.Enabled(next.Annotations)
	if problem != "" {
		out.notes = append(out.notes, problem)
	}
	if !on {
		return out
	}
	resolved := configrollout.Resolve(configrollout.Refs(&next.Spec.Template.Spec), live.hashOf)
	revisions := make([]configrollout.Revision, 0, len(rss))
	for _, rs := range rss {
		if rs != nil {
			revisions = append(revisions, configrollout.Revision{Number: history.Revision(rs), Template: &rs.Spec.Template})
		}
	}
	dec := configrollout.Decide(&next.Spec.Template, resolved, next.Annotations[configrollout.PinnedAtAnnotation], revisions, history.EqualIgnoringHash)
	out.next = next.DeepCopy()
	out.next.Spec.Template = *dec.Template.DeepCopy()
	out.cur = cur
	if len(resolved.Missing) > 0 {
		out.notes = append(out.notes, configrollout.MissingMessage(resolved.Missing))
		out.hold = dec.Hold
	}
	curRS, _ := history.NewReplicaSet(cur, rss)
	if curRS == nil {
		return out
	}
	out.cur = cur.DeepCopy()
	out.cur.Spec.Template = *curRS.Spec.Template.DeepCopy()
	delete(out.cur.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	was, now := curRS.Spec.Template.Annotations[configrollout.HashAnnotation], dec.Template.Annotations[configrollout.HashAnnotation]
	switch {
	case len(resolved.Missing) > 0 || was == now:
	case was == "" && curOn(cur):
		// An adopted revision of the plain template (made by upstream's controllers,
		// or before the opt-in; configrollout.Decide): the data changed since.
		out.changes = append(out.changes, fmt.Sprintf("configuration changed since revision %d was adopted (its pods read the objects themselves): a new revision will roll out with the live data",
			history.Revision(curRS)))
	case was == "":
		out.changes = append(out.changes, fmt.Sprintf("%s turned on: a new revision will roll out, recording the configuration (revision %d has none)",
			configrollout.Annotation, history.Revision(curRS)))
	case dec.Pinned:
		out.changes = append(out.changes, fmt.Sprintf("pinned by an undo to the configuration of %s: it comes back", revisionWith(dec.Template, rss)))
	default:
		cause := configrollout.ChangeCause(configrollout.SnapshotsOf(curRS.Annotations), configrollout.Plan(resolved, ""))
		if cause == "" {
			cause = "configuration changed"
		}
		what := "a new revision will roll out with the live data"
		if back := revisionWith(dec.Template, rss); back != "" {
			what = back + ", which holds the live data, comes back"
		}
		out.changes = append(out.changes, fmt.Sprintf("%s: %s (revision %d's snapshots hold the data its pods run now)", cause, what, history.Revision(curRS)))
	}
	return out
}

// revisionWith is "revision 1 (web-5d8f7c9b6)", the ReplicaSet of rss whose template
// is t; "" when none is.
func revisionWith(t *corev1.PodTemplateSpec, rss []*appsv1.ReplicaSet) string {
	for _, rs := range rss {
		if rs != nil && history.EqualIgnoringHash(&rs.Spec.Template, t) {
			return fmt.Sprintf("revision %d (%s)", history.Revision(rs), rs.Name)
		}
	}
	return ""
}

// curOn tells whether cur, the Deployment before the change, is opted into
// configuration rollout.
func curOn(cur *appsv1.Deployment) bool {
	on, _ := configrollout.Enabled(cur.Annotations)
	return on
}
