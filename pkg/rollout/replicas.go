package rollout

import (
	"math"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
)

// Annotations the Deployment controller keeps on its ReplicaSets so that a later scale
// can be split in proportion to what each ReplicaSet was sized for.
const (
	// DesiredReplicasAnnotation is the Deployment's replicas when the RS was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas+maxSurge when the RS was last scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
)

// Scale is one planned change of a ReplicaSet's spec.replicas.
type Scale struct {
	// ReplicaSet is the name of the ReplicaSet to scale.
	ReplicaSet string
	// From and To are spec.replicas before and after; To may equal From when only the
	// desired/max-replicas annotations need refreshing (a proportional scale).
	From, To int32
}

// Replicas is a spec.replicas, defaulting to 1 as the API server does.
func Replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// DesiredReplicas is d.spec.replicas.
func DesiredReplicas(d *appsv1.Deployment) int32 { return Replicas(d.Spec.Replicas) }

// SpecReplicas is Σ spec.replicas over rss (nil entries are skipped).
func SpecReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += Replicas(rs.Spec.Replicas)
		}
	}
	return n
}

// AvailableReplicas is Σ status.availableReplicas over rss.
func AvailableReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// DeploymentFenceposts resolves d's RollingUpdate bounds. A Recreate Deployment has
// none (surge 0, unavailable 0); maxUnavailable never exceeds replicas, and is 0 for a
// Deployment scaled to 0.
func DeploymentFenceposts(d *appsv1.Deployment) Fenceposts {
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil {
		return Fenceposts{}
	}
	desired := DesiredReplicas(d)
	f, err := ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, desired)
	if err != nil {
		// API validation rejects such values; fall back to the safest bounds.
		f = Fenceposts{MaxUnavailable: 1}
	}
	f.MaxUnavailable = min(f.MaxUnavailable, desired)
	return f
}

// NewReplicaSetReplicas is how many replicas the new ReplicaSet should have now.
//
// Recreate: all of them at once (old pods are gone by the time it is asked).
// RollingUpdate: as many more as fit under replicas+maxSurge, never above replicas.
// With 10 replicas, surge 3, old RS at 10 and a new RS at 0: 3; once the old RS is
// scaled down to 8: 5.
//
// An old ReplicaSet counts with max(spec.replicas, status.replicas, pods seen): pods it
// was just told to remove still run until its controller has deleted them, and its
// status can lag pods it created just before. Counting spec alone (as upstream does)
// lets new pods start before old ones stop, briefly running more than
// replicas+maxSurge pods; kroll waits until the old pods are gone. seenPods, when not
// nil, tells how many active pods of an old ReplicaSet the caller sees in its cache.
// While an old ReplicaSet's controller has not yet observed its latest spec
// (status.observedGeneration < generation), it may still be creating pods for an
// earlier size that nothing counts yet: no new pods are added until it has.
func NewReplicaSetReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, seenPods func(*appsv1.ReplicaSet) int32) int32 {
	desired := DesiredReplicas(d)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return desired
	}
	current := Replicas(newRS.Spec.Replicas)
	var total int32
	for _, rs := range all {
		switch {
		case rs == nil:
		case rs == newRS || rs.UID != "" && rs.UID == newRS.UID:
			total += current
		case rs.Status.ObservedGeneration < rs.Generation:
			return current
		default:
			n := max(Replicas(rs.Spec.Replicas), rs.Status.Replicas)
			if seenPods != nil {
				n = max(n, seenPods(rs))
			}
			total += n
		}
	}
	maxTotal := desired + DeploymentFenceposts(d).MaxSurge
	if total >= maxTotal {
		return current // at the surge ceiling already
	}
	return current + max(0, min(maxTotal-total, desired-current))
}

// OldReplicaSetScaleDown plans one RollingUpdate scale-down of the old ReplicaSets.
//
// It may take away at most
//
//	Σ spec.replicas (all RSes) − (replicas − maxUnavailable) − unavailable pods of the new RS
//
// pods, which keeps at least replicas−maxUnavailable available whatever the new RS's
// pods do next. It first removes old pods that are not available (they count against
// nobody's availability: a stuck old rollout is cleaned up first), oldest RS first; then,
// if more available pods exist than replicas−maxUnavailable, it scales old RSes down by
// the excess, oldest first. With 10 replicas, maxUnavailable 2, old RS 10/10 available
// and a new RS of 3 none available: 13 − 8 − 3 = 2, so the old RS goes to 8.
func OldReplicaSetScaleDown(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []Scale {
	if SpecReplicas(oldRSs) == 0 {
		return nil
	}
	all := append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS)
	minAvailable := DesiredReplicas(d) - DeploymentFenceposts(d).MaxUnavailable
	newUnavailable := int32(0)
	if newRS != nil {
		newUnavailable = Replicas(newRS.Spec.Replicas) - newRS.Status.AvailableReplicas
	}
	maxScaleDown := SpecReplicas(all) - minAvailable - newUnavailable
	if maxScaleDown <= 0 {
		return nil
	}

	sizes := map[string]int32{}
	order := ByCreation(oldRSs)
	for _, rs := range order {
		sizes[rs.Name] = Replicas(rs.Spec.Replicas)
	}
	// 1. Unavailable old pods, oldest RS first.
	var cleaned int32
	for _, rs := range order {
		if cleaned >= maxScaleDown {
			break
		}
		size := sizes[rs.Name]
		if size == 0 || size <= rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxScaleDown-cleaned, size-rs.Status.AvailableReplicas)
		sizes[rs.Name] = size - n
		cleaned += n
	}
	// 2. Available old pods beyond what must stay available, oldest RS first.
	var availableNow int32
	for _, rs := range all {
		if rs != nil {
			availableNow += min(rs.Status.AvailableReplicas, Replicas(rs.Spec.Replicas))
		}
	}
	excess := availableNow - minAvailable
	var scaled int32
	for _, rs := range order {
		if scaled >= excess {
			break
		}
		if sizes[rs.Name] == 0 {
			continue
		}
		n := min(sizes[rs.Name], excess-scaled)
		sizes[rs.Name] -= n
		scaled += n
	}
	var plan []Scale
	for _, rs := range order {
		if from := Replicas(rs.Spec.Replicas); sizes[rs.Name] != from {
			plan = append(plan, Scale{ReplicaSet: rs.Name, From: from, To: sizes[rs.Name]})
		}
	}
	return plan
}

// ProportionalScale plans how a change of the Deployment's replicas is spread over its
// ReplicaSets while a rollout is in flight (or paused).
//
//   - If only one ReplicaSet has pods (or none has, and a new one exists), it takes the
//     Deployment's replicas.
//   - If the new ReplicaSet is saturated (sized, annotated and available at replicas),
//     the old ones go to 0.
//   - Otherwise, for a RollingUpdate, the change toward replicas+maxSurge is split over
//     the ReplicaSets that have pods, each in proportion to its size against the
//     max-replicas it was sized for, rounded; what rounding leaves over goes to the
//     largest (newest on a tie when adding, oldest when removing). Empty ReplicaSets
//     stay empty. The spec's example: 10 replicas, surge 3, old RS 8 and new RS 5 (both
//     annotated max 13), scaled to 15: 5 more; old gets round(8·18/13)−8 = 3, new gets 2 →
//     11 and 7.
//
// Every ReplicaSet with pods is listed, even unchanged, so that its desired/max-replicas
// annotations can be brought up to date. ok is false when nothing needs doing here.
func ProportionalScale(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (plan []Scale, ok bool) {
	desired := DesiredReplicas(d)
	if target := activeOrLatest(newRS, oldRSs); target != nil {
		if Replicas(target.Spec.Replicas) == desired {
			return nil, false
		}
		return []Scale{{ReplicaSet: target.Name, From: Replicas(target.Spec.Replicas), To: desired}}, true
	}
	if IsSaturated(d, newRS) {
		for _, rs := range Active(oldRSs) {
			plan = append(plan, Scale{ReplicaSet: rs.Name, From: Replicas(rs.Spec.Replicas), To: 0})
		}
		return plan, len(plan) > 0
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return nil, false
	}
	active := Active(append([]*appsv1.ReplicaSet{newRS}, oldRSs...))
	allowed := int32(0)
	if desired > 0 {
		allowed = desired + DeploymentFenceposts(d).MaxSurge
	}
	toAdd := allowed - SpecReplicas(active)
	if toAdd > 0 {
		sort.SliceStable(active, func(i, j int) bool { return largerThenNewer(active[i], active[j]) })
	} else if toAdd < 0 {
		sort.SliceStable(active, func(i, j int) bool { return largerThenOlder(active[i], active[j]) })
	}
	sizes := make([]int32, len(active))
	var added int32
	for i, rs := range active {
		sizes[i] = Replicas(rs.Spec.Replicas)
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	if toAdd != 0 && len(active) > 0 {
		sizes[0] = max(0, sizes[0]+toAdd-added)
	}
	for i, rs := range active {
		plan = append(plan, Scale{ReplicaSet: rs.Name, From: Replicas(rs.Spec.Replicas), To: sizes[i]})
	}
	return plan, len(plan) > 0
}

// proportion is rs's share of toAdd, given added already handed out: its size scaled
// from the max-replicas it was sized for (the Deployment's status.replicas when
// unannotated) to replicas+maxSurge, minus its size; never more than what is left.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	size := Replicas(rs.Spec.Replicas)
	if size == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var share int32
	if DesiredReplicas(d) == 0 {
		share = -size
	} else {
		target := DesiredReplicas(d) + DeploymentFenceposts(d).MaxSurge
		sizedFor, ok := annotatedInt(rs, MaxReplicasAnnotation)
		if !ok {
			sizedFor = d.Status.Replicas
		}
		if sizedFor == 0 {
			return 0
		}
		share = int32(math.Round(float64(size)*float64(target)/float64(sizedFor))) - size
	}
	left := toAdd - added
	if toAdd > 0 {
		return min(share, left)
	}
	return max(share, left)
}

// IsSaturated tells a new ReplicaSet that holds all of the Deployment: sized and
// annotated for its replicas, and all of them available.
func IsSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := annotatedInt(rs, DesiredReplicasAnnotation)
	want := DesiredReplicas(d)
	return ok && desired == want && Replicas(rs.Spec.Replicas) == want && rs.Status.AvailableReplicas == want
}

// activeOrLatest is the one ReplicaSet that should take all of a scale: the only one
// with pods; or, when none has any, the new one, else the newest old one. nil when
// several have pods.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	all := append([]*appsv1.ReplicaSet{}, oldRSs...)
	if newRS != nil {
		all = append(all, newRS)
	}
	switch active := Active(all); len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		byAge := ByCreation(oldRSs)
		return byAge[len(byAge)-1]
	case 1:
		return active[0]
	}
	return nil
}

// Active keeps the ReplicaSets with spec.replicas > 0 (nil entries dropped).
func Active(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && Replicas(rs.Spec.Replicas) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// ByCreation returns rss oldest first (name breaks ties), as a new slice.
func ByCreation(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := append([]*appsv1.ReplicaSet{}, rss...)
	sort.SliceStable(out, func(i, j int) bool { return older(out[i], out[j]) })
	return out
}

func older(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

func largerThenNewer(a, b *appsv1.ReplicaSet) bool {
	if ra, rb := Replicas(a.Spec.Replicas), Replicas(b.Spec.Replicas); ra != rb {
		return ra > rb
	}
	return older(b, a)
}

func largerThenOlder(a, b *appsv1.ReplicaSet) bool {
	if ra, rb := Replicas(a.Spec.Replicas), Replicas(b.Spec.Replicas); ra != rb {
		return ra > rb
	}
	return older(a, b)
}

// ReplicasAnnotations are the desired/max-replicas annotations a ReplicaSet of d carries
// after being scaled now.
func ReplicasAnnotations(d *appsv1.Deployment) map[string]string {
	desired := DesiredReplicas(d)
	return map[string]string{
		DesiredReplicasAnnotation: strconv.Itoa(int(desired)),
		MaxReplicasAnnotation:     strconv.Itoa(int(desired + DeploymentFenceposts(d).MaxSurge)),
	}
}

func annotatedInt(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// Draining tells whether an old ReplicaSet that has acted on its latest size still has
// pods beyond it (by status, or by seenPods when not nil): pods it is deleting, whose
// deletion its controller is about to report. The new ReplicaSet can then grow by all
// of the room they leave once they are gone, in one write, instead of by part of it now
// and the rest a moment later. An old ReplicaSet that has not observed its size is
// NewReplicaSetReplicas's business.
func Draining(oldRSs []*appsv1.ReplicaSet, seenPods func(*appsv1.ReplicaSet) int32) bool {
	for _, rs := range oldRSs {
		if rs == nil || rs.Status.ObservedGeneration < rs.Generation {
			continue
		}
		n := rs.Status.Replicas
		if seenPods != nil {
			n = max(n, seenPods(rs))
		}
		if n > Replicas(rs.Spec.Replicas) {
			return true
		}
	}
	return false
}
