package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
)

// A staged Deployment (kroll.dev/partition, kroll.dev/rollout-steps; decided by
// pkg/staging) keeps partition pods on its old ReplicaSets: the functions below are
// the rolling update's arithmetic (NewReplicaSetReplicas, OldReplicaSetScaleDown,
// ProportionalScale) with that floor. A partition of 0 changes nothing. The new
// ReplicaSet is never scaled down because of a partition: raising it does not take
// updated pods back (an abort or an undo does).

// PartitionedNewReplicas is NewReplicaSetReplicas held at replicas−partition: the new
// ReplicaSet grows within maxSurge up to that and no further, and keeps what it has
// above it. With 20 replicas, maxSurge 25% (5) and partition 18: 2, not 5; with
// partition 10 and the new ReplicaSet at 2: min(2+5, 10) = 7.
func PartitionedNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, seenPods func(*appsv1.ReplicaSet) int32, partition int32) int32 {
	size := NewReplicaSetReplicas(d, all, newRS, seenPods)
	if partition <= 0 {
		return size
	}
	return max(Replicas(newRS.Spec.Replicas), min(size, DesiredReplicas(d)-partition))
}

// PartitionedScaleDown is OldReplicaSetScaleDown that leaves at least partition pods
// (spec.replicas) on the old ReplicaSets: it takes away no more than old −
// partition, oldest ReplicaSet first as the plan is ordered. With 20 replicas,
// maxUnavailable 25% (5), old RS 20/20 available, new RS 2/0 available and partition
// 18: the plan would take 22 − 15 − 2 = 5 pods; the partition lets it take 2 (old RS
// to 18). Old ReplicaSets already at or below the partition are left alone.
func PartitionedScaleDown(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, partition int32) []Scale {
	plan := OldReplicaSetScaleDown(d, oldRSs, newRS)
	if partition <= 0 {
		return plan
	}
	budget := SpecReplicas(oldRSs) - partition
	var out []Scale
	for _, s := range plan {
		if budget <= 0 {
			break
		}
		take := min(s.From-s.To, budget)
		budget -= take
		out = append(out, Scale{ReplicaSet: s.ReplicaSet, From: s.From, To: s.From - take})
	}
	return out
}

// PartitionedScale is ProportionalScale for a staged Deployment that has old pods: the
// old ReplicaSets keep their pods — never more than replicas, never more than replicas
// less what the new one has unless the partition asks for them, never fewer than the
// partition — and the new ReplicaSet takes the rest. No old pod is created to be
// deleted again, and the count held stays the partition:
//
//	20→40 at partition 10 (old 10, new 10): old 10, new 30
//	40→20 at partition 10 (old 10, new 30): old 10, new 10
//	20→40 at partition 50% (old 10, new 10; 50% of 40 is 20): old 20, new 20
//	20→10 at partition 50% (old 10, new 10; 50% of 10 is 5): old 5, new 5
//
// Old ReplicaSets give pods up oldest first and take them newest first. Without a
// partition, a new ReplicaSet, old pods or a change of replicas (every ReplicaSet with
// pods was sized for the replicas now: a paused Deployment mid-surge keeps its
// pods), it is ProportionalScale.
func PartitionedScale(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, partition int32) (plan []Scale, ok bool) {
	active := Active(oldRSs)
	oldTotal := SpecReplicas(active)
	desired := DesiredReplicas(d)
	if partition <= 0 || newRS == nil || oldTotal == 0 || !resized(desired, append(active, newRS)) {
		return ProportionalScale(d, newRS, oldRSs)
	}
	newSize := Replicas(newRS.Spec.Replicas)
	keep := min(desired, max(min(oldTotal, max(partition, desired-newSize)), partition))
	order := ByCreation(active)
	sizes := make([]int32, len(order))
	for i, rs := range order {
		sizes[i] = Replicas(rs.Spec.Replicas)
	}
	if keep < oldTotal {
		cut := oldTotal - keep
		for i := range sizes {
			n := min(sizes[i], cut)
			sizes[i] -= n
			cut -= n
		}
	} else {
		sizes[len(sizes)-1] += keep - oldTotal
	}
	for i, rs := range order {
		plan = append(plan, Scale{ReplicaSet: rs.Name, From: Replicas(rs.Spec.Replicas), To: sizes[i]})
	}
	plan = append(plan, Scale{ReplicaSet: newRS.Name, From: newSize, To: desired - keep})
	return plan, true
}

// resized tells whether some ReplicaSet with pods of rss was sized for other replicas
// than desired (its DesiredReplicasAnnotation; unannotated counts as resized).
func resized(desired int32, rss []*appsv1.ReplicaSet) bool {
	for _, rs := range Active(rss) {
		if n, ok := annotatedInt(rs, DesiredReplicasAnnotation); !ok || n != desired {
			return true
		}
	}
	return false
}
