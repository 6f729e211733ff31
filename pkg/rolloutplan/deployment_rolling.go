package rolloutplan

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// The scaling, rolling and Recreate parts of the Deployment replay, with the
// controller's own arithmetic (pkg/rollout) on the model of the ReplicaSets.

// scale is the controller's scaling event: some ReplicaSet with pods was sized for
// other replicas than the Deployment's now. Each ReplicaSet with pods takes its share,
// and every ReplicaSet scaled is annotated for the replicas now (see
// rollout.ReplicasAnnotations), as the controller does.
func (s *deploymentSim) scale() {
	desired := rollout.DesiredReplicas(s.d)
	total := 0
	scaling := false
	for _, r := range s.rss {
		total += len(r.pods)
		if len(r.pods) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(r.rs.Annotations[rollout.DesiredReplicasAnnotation], 10, 32); err == nil && int32(n) != desired {
			scaling = true
		}
	}
	if !scaling && !s.d.Spec.Paused {
		return
	}
	s.d.Status.Replicas = int32(total)
	newRS, old := s.objects()
	plan, ok := rollout.PartitionedScale(s.d, newRS, old, s.decide().Partition)
	if !ok {
		return
	}
	for _, sc := range plan {
		r := s.byName(sc.ReplicaSet)
		s.resize(r, int(sc.To))
		s.annotate(r)
	}
	s.flush()
}

func (s *deploymentSim) annotate(r *simRS) {
	if r.rs.Annotations == nil {
		r.rs.Annotations = map[string]string{}
	}
	for k, v := range rollout.ReplicasAnnotations(s.d) {
		r.rs.Annotations[k] = v
	}
}

// rolling replays rolloutRolling: grow the new ReplicaSet as far as maxSurge allows,
// else shrink the old ones as far as maxUnavailable allows; one batch per pass.
func (s *deploymentSim) rolling() {
	desired := int(rollout.DesiredReplicas(s.d))
	for range s.passLimit() {
		s.adoptNew()
		decision := s.decide()
		newRS, old := s.objects()
		all := append(append([]*appsv1.ReplicaSet{}, old...), newRS)
		size := len(s.new.pods)
		switch {
		case size > desired:
			size = desired
		case size < desired:
			size = int(rollout.PartitionedNewReplicas(s.d, all, newRS, nil, decision.Partition))
		}
		if size != len(s.new.pods) {
			s.resize(s.new, size)
			s.annotate(s.new)
			s.flush()
			continue
		}
		for _, sc := range rollout.PartitionedScaleDown(s.d, rollout.Active(old), newRS, decision.Partition) {
			r := s.byName(sc.ReplicaSet)
			s.resize(r, int(sc.To))
			s.annotate(r)
		}
		if !s.flush() && !s.held(decision) {
			return
		}
	}
}

// recreate replays rolloutRecreate: every old pod goes, then the new ReplicaSet is
// scaled to replicas.
func (s *deploymentSim) recreate() {
	for _, r := range s.old() {
		s.resize(r, 0)
	}
	s.flush()
	s.adoptNew()
	s.resize(s.new, int(rollout.DesiredReplicas(s.d)))
	s.flush()
}
