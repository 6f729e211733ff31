package configrollout

import (
	"fmt"
	"strconv"
)

// Annotation opts a workload in: "true" makes the ConfigMaps and Secrets its pod
// template references part of its revisions.
const Annotation = "kroll.dev/config-rollout"

// The annotations kroll writes. They are records, not settings.
const (
	// HashAnnotation is on the pod template of a ReplicaSet made with configuration
	// rollout: the fingerprint of the configuration of that revision (Fingerprint). It
	// reaches a Deployment's template only through `kubectl rollout undo`, where it
	// pins the Deployment to that revision's configuration (Effective).
	HashAnnotation = "kroll.dev/config-hash"
	// SnapshotsAnnotation is on a ReplicaSet's metadata: its Snapshots, as JSON.
	SnapshotsAnnotation = "kroll.dev/config-snapshots"
	// PinnedAtAnnotation is on a Deployment pinned by HashAnnotation in its template:
	// "<pinned fingerprint>:<live fingerprint when the pin was first seen>" (PinRecord);
	// ":<live fingerprint when first seen>" on one whose newest revision, adopted, is of
	// its plain template (Decide).
	PinnedAtAnnotation = "kroll.dev/config-pinned-at"
	// SnapshotOfLabel is on a snapshot: the name of the object it copies.
	SnapshotOfLabel = "kroll.dev/config-snapshot-of"
)

// Records are the annotation keys kroll writes for configuration rollouts (never
// workload settings, never copied from a Deployment to its ReplicaSets).
var Records = []string{SnapshotsAnnotation, PinnedAtAnnotation}

// ConditionType is the workload condition that reports configuration rollout
// problems: False with ReasonInvalidAnnotation, ReasonMissing or ReasonSnapshotFailed.
const ConditionType = "ConfigRollout"

// Condition and event reasons.
const (
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonMissing: a referenced object that is not optional does not exist; nothing
	// rolls out until it does.
	ReasonMissing = "ConfigMissing"
	// ReasonSnapshotFailed: a snapshot could not be written; the rollout waits.
	ReasonSnapshotFailed = "ConfigSnapshotFailed"
)

// Enabled reads the opt-in from a workload's annotations. A value other than "true"
// or "false" (as strconv.ParseBool reads them) is a problem: one line naming the
// annotation and the accepted form, and the workload behaves as without it.
func Enabled(annotations map[string]string) (on bool, problem string) {
	v, ok := annotations[Annotation]
	if !ok {
		return false, ""
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Sprintf("%s=%q is not valid: want \"true\" or \"false\"; configuration changes do not roll out", Annotation, v)
	}
	return b, ""
}
