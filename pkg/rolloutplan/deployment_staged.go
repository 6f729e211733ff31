package rolloutplan

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
)

// The staged part of the Deployment replay (kroll.dev/partition, kroll.dev/rollout-steps):
// each pass asks staging.Decide, as the controller does, with what the model shows
// (every batch completed: the new pods updated and available) and gives its partition
// to the controller's arithmetic. Where the rollout is held the last batch says why:
// a bare pause is passed as if promoted, a timed one by letting its time pass, and a
// partition stops the plan.

// stagedSim is the replay's staging state: the settings of the changed Deployment and
// the step record as the controller would have written it by now.
type stagedSim struct {
	settings staging.Settings
	record   *staging.Record
}

// newStagedSim reads d's staging; a Recreate Deployment is never staged.
func newStagedSim(d *appsv1.Deployment) stagedSim {
	st := stagedSim{settings: staging.SettingsOf(d.Annotations)}
	if r, ok := staging.RecordOf(d.Annotations); ok {
		st.record = &r
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		st.settings = staging.Settings{}
	}
	return st
}

// stagingProgress is what the controller's staging.Progress reads
// (progress.Deployment), from the model's ReplicaSets: each as it stands once the
// batch completed (spec and status its pods), no pod failed.
func (s *deploymentSim) stagingProgress() staging.Progress {
	var newRS *appsv1.ReplicaSet
	if s.newExists {
		newRS = s.new.observed()
	}
	var old []*appsv1.ReplicaSet
	for _, r := range s.old() {
		old = append(old, r.observed())
	}
	return progress.Deployment(s.d, newRS, old, nil, s.now)
}

// observed is a copy of r's ReplicaSet as it stands once the batch completed:
// spec.replicas and status.replicas its pods, status.availableReplicas those of them
// available. A copy: the in-place replay keeps the model's spec.replicas apart from
// its pods while a hand-over is under way.
func (r *simRS) observed() *appsv1.ReplicaSet {
	rs := r.rs.DeepCopy()
	n := int32(len(r.pods))
	rs.Spec.Replicas = &n
	rs.Status.Replicas, rs.Status.AvailableReplicas = n, 0
	for _, p := range r.pods {
		if p.available {
			rs.Status.AvailableReplicas++
		}
	}
	return rs
}

// decide is the decision of this pass, with the record written as the controller
// writes it (alone, before acting: the same answer once it is written).
func (s *deploymentSim) decide() staging.Decision {
	var d staging.Decision
	for range 2 {
		d = staging.Decide(s.staged.settings, s.staged.record, s.stagingProgress(), s.now)
		if !d.Write {
			return d
		}
		s.staged.record = d.Record
	}
	return d
}

// held notes where d holds the rollout, after the last batch; it reports whether the
// replay goes on: past a bare pause (as once promoted) or a timed one (its time
// passed), not at a partition.
func (s *deploymentSim) held(d staging.Decision) bool {
	switch d.Phase {
	case staging.StepPaused:
		s.noteAfter(fmt.Sprintf("pause until promoted (kroll rollout promote): step %s", d.Record))
		r := *d.Record
		r.Done, r.Since = r.Done+1, s.now
		s.staged.record = &r
		return true
	case staging.StepWaiting:
		s.noteAfter(fmt.Sprintf("pause %s: step %s", s.staged.settings.Steps[d.Record.Done].For, d.Record))
		s.now = d.Until
		return true
	case staging.PartitionReached:
		s.noteAfter(fmt.Sprintf("the partition holds the rollout: %d old pods stay (%s)", d.Partition, staging.PartitionAnnotation))
	}
	return false
}

// noteAfter says note after the last batch (before the first when there is none).
func (s *deploymentSim) noteAfter(note string) {
	if n := len(s.batches); n > 0 {
		s.batches[n-1].Note = note
		return
	}
	s.firstNote = note
}
