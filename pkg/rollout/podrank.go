package rollout

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodDeletionCostAnnotation lets a user say which pods of a ReplicaSet to remove first
// on scale-down: lower cost goes first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// PodsToDelete picks n pods of candidates to remove on scale-down, the most expendable
// first. related are all active pods of the same owner (a Deployment's other
// ReplicaSets too), used to prefer pods doubled up on a node. The order is upstream's:
//
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost first;
//  5. more related pods on the same node first;
//  6. ready for a shorter time first (on a log2 scale of how long ago);
//  7. more container restarts first;
//  8. newer first (on a log2 scale of age); then by UID.
func PodsToDelete(candidates, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(candidates) {
		return append([]*corev1.Pod{}, candidates...)
	}
	onNode := map[string]int{}
	for _, p := range related {
		if IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]rankedPod, len(candidates))
	for i, p := range candidates {
		ranked[i] = rankedPod{pod: p, coLocated: onNode[p.Spec.NodeName]}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return deleteFirst(ranked[i], ranked[j], now) })
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = ranked[i].pod
	}
	return out
}

type rankedPod struct {
	pod       *corev1.Pod
	coLocated int
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// deleteFirst reports whether a should be deleted before b.
func deleteFirst(a, b rankedPod, now time.Time) bool {
	pa, pb := a.pod, b.pod
	if pa.Spec.NodeName != pb.Spec.NodeName && (pa.Spec.NodeName == "" || pb.Spec.NodeName == "") {
		return pa.Spec.NodeName == ""
	}
	if phaseOrder[pa.Status.Phase] != phaseOrder[pb.Status.Phase] {
		return phaseOrder[pa.Status.Phase] < phaseOrder[pb.Status.Phase]
	}
	readyA, readyB := IsPodReady(pa), IsPodReady(pb)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(pa), deletionCost(pb); ca != cb {
		return ca < cb
	}
	if a.coLocated != b.coLocated {
		return a.coLocated > b.coLocated
	}
	if readyA && readyB {
		if first, decided := moreRecent(readySince(pa), readySince(pb), a, b, now); decided {
			return first
		}
	}
	if ra, rb := maxRestarts(pa), maxRestarts(pb); ra != rb {
		return ra > rb
	}
	first, _ := moreRecent(pa.CreationTimestamp.Time, pb.CreationTimestamp.Time, a, b, now)
	return first
}

// moreRecent orders a's and b's instants ta and tb for deletion: the more recent first,
// compared on a log2 scale of how long ago they were, so that pods of similar age are
// treated alike and then picked by UID (spreading deletions). An unknown instant goes
// first; without now, plain order is used. decided is false when ta equals tb.
func moreRecent(ta, tb time.Time, a, b rankedPod, now time.Time) (first, decided bool) {
	if ta.Equal(tb) {
		return false, false
	}
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero(), true
	}
	if now.IsZero() {
		return ta.After(tb), true
	}
	rank := func(t time.Time) int64 {
		if d := now.Sub(t); d > 0 {
			return int64(math.Log2(float64(d)))
		}
		return -1
	}
	if d := rank(ta) - rank(tb); d != 0 {
		return d < 0, true
	}
	return a.pod.UID < b.pod.UID, true
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// maxRestarts is the highest restart count of p's regular containers.
func maxRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// readySince is when p's Ready condition last turned True; zero if it is not ready.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// IsPodReady tells whether p's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IsPodAvailable tells whether p has been Ready for at least minReadySeconds at now:
// readyTime + minReadySeconds <= now, as upstream's controllers count it
// (k8s.io/kubernetes/pkg/api/v1/pod IsPodAvailable). Ready at 12:00:00 with
// minReadySeconds 5 is available from 12:00:05 on, that instant included: the moment
// AvailableAt names, when a controller that requeued itself for it looks again.
// Every availability count in kroll (controllers, views, plans, test watchers) goes
// through here, so they all agree.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !IsPodReady(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	since := readySince(p)
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// AvailableAt is when a Ready pod becomes available under minReadySeconds; zero when it
// is not ready (it has no such instant yet).
func AvailableAt(p *corev1.Pod, minReadySeconds int32) time.Time {
	since := readySince(p)
	if since.IsZero() || !IsPodReady(p) {
		return time.Time{}
	}
	return since.Add(time.Duration(minReadySeconds) * time.Second)
}

// IsPodActive tells a pod that counts toward its owner: not finished, not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// IsPodTerminating tells a pod being deleted that has not finished: a ReplicaSet's
// status counts it in terminatingReplicas.
func IsPodTerminating(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// RemovedOnDelete tells a pod the API server removes in the request that deletes it
// with default options, rather than marking it terminating: one whose grace period is
// zero (spec.terminationGracePeriodSeconds 0, or never scheduled, or finished) and that
// no finalizer holds.
func RemovedOnDelete(p *corev1.Pod) bool {
	if len(p.Finalizers) > 0 {
		return false
	}
	zeroGrace := p.Spec.TerminationGracePeriodSeconds != nil && *p.Spec.TerminationGracePeriodSeconds == 0
	return zeroGrace || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// NextAvailable is the earliest instant one of pods that is ready but not yet available
// under minReadySeconds becomes available: when a controller must look again, as no
// event will tell it. Zero when no pod is waiting for that.
func NextAvailable(pods []*corev1.Pod, minReadySeconds int32, now time.Time) time.Time {
	if minReadySeconds == 0 {
		return time.Time{}
	}
	var next time.Time
	for _, p := range pods {
		at := AvailableAt(p, minReadySeconds)
		if at.IsZero() || IsPodAvailable(p, minReadySeconds, now) {
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}
