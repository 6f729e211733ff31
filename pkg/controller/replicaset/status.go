package replicaset

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// CalculateStatus is rs's status for its active and terminating pods at now: the counts
// of controller.CountReplicas (replicas, fullyLabeledReplicas, readyReplicas,
// availableReplicas, terminatingReplicas), and a ReplicaFailure condition while
// resizeErr is set (FailedCreate when pods were missing, FailedDelete when there were
// too many). observedGeneration is left to the writer.
//
// A pod rs names leaving counts as neither ready nor available (see CountReplicas): its
// departure then changes only replicas and fullyLabeledReplicas, a write that can wait
// (see putOff).
func CalculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, resizeErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	counts := controller.CountReplicas(rs, active, terminating, now)
	failure := condition(&status, appsv1.ReplicaSetReplicaFailure)
	switch {
	case resizeErr != nil && failure == nil:
		reason := ""
		if diff := len(active) - int(replicasOf(rs)); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: reason,
			Message: resizeErr.Error(), LastTransitionTime: metav1.NewTime(now),
		})
	case resizeErr == nil && failure != nil:
		kept := status.Conditions[:0]
		for _, c := range status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		status.Conditions = kept
		if len(status.Conditions) == 0 {
			status.Conditions = nil
		}
	}
	status.Replicas = counts.Replicas
	status.FullyLabeledReplicas = counts.FullyLabeled
	status.ReadyReplicas = counts.Ready
	status.AvailableReplicas = counts.Available
	status.TerminatingReplicas = &counts.Terminating
	return status
}

func condition(s *appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// putOff tells whether a status write of rs can wait, and for what. Each wait is of an
// in-place hand-over (see pkg/inplace), where the ReplicaSets' status writes share the
// client that takes the pods over, one write per pod: a write saved is a pod taken
// over 50 ms sooner at the default QPS.
//
// The giver's: the status differs from the one written only in fewer replicas and
// fullyLabeledReplicas — pods that left (they counted as neither ready nor available
// from the moment they were named). While a pod rs names leaving is still its own, the
// write waits for the last of them to leave (whileLeaving): its new ReplicaSet reports
// them at the end of its take-over sync, about when the last one leaves, and written
// at each departure, a round of 250 pods taken over cost this ReplicaSet a status
// write a second. Once all have left it waits for the Deployment's next write of the
// record (forRecord): the next round's pick, which the new ReplicaSet's report of the
// round wakes the Deployment to make, or the record's clearing. That write changes
// rs's generation, and the one status write then carries the departures, the pods
// newly named leaving counted out, and the observedGeneration the new ReplicaSet waits
// for before taking them in. Meanwhile the status counts a departed pod where it was.
//
// The taker's: the status counts more replicas than written — pods taken over — while
// a pod rs names arriving, and has taken over, is still restarting onto the images its
// take-over set, or being resized: the write waits for it to run them, ready, with its
// new resources (forRestarts). The last pods of a round are taken over moments before
// its end, and the Deployment's next pick waits for them to be available anyway (they
// hold maxUnavailable); reported without them, the round let it pick that many pods
// short, a round of its own at the end, and each of them cost a write of its own as it
// came back.
//
// forRecord and forRestarts wait maxPutOff at most.
func putOff(rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus, active []*corev1.Pod) statusWait {
	if status.Replicas > rs.Status.Replicas {
		if arrivalsComingBack(rs, active) {
			return forRestarts
		}
		return writeNow
	}
	if status.FullyLabeledReplicas > rs.Status.FullyLabeledReplicas {
		return writeNow
	}
	same := status
	same.Replicas, same.FullyLabeledReplicas = rs.Status.Replicas, rs.Status.FullyLabeledReplicas
	if !equality.Semantic.DeepEqual(rs.Status, same) {
		return writeNow
	}
	leaving := inplace.Names(rs, inplace.LeavingAnnotation)
	if leaving.Len() == 0 {
		return writeNow
	}
	for _, p := range active {
		if leaving.Has(p.Name) {
			return whileLeaving
		}
	}
	return forRecord
}

// arrivalsComingBack tells whether a pod rs names arriving, and has taken over, is still
// restarting onto rs's images (inplace.ComingBack) or being resized to its container
// resources (controller.ResizingToTemplate).
func arrivalsComingBack(rs *appsv1.ReplicaSet, active []*corev1.Pod) bool {
	arriving := inplace.Names(rs, inplace.ArrivingAnnotation)
	if arriving.Len() == 0 {
		return false
	}
	images := inplace.Images(&rs.Spec.Template)
	for _, p := range active {
		if arriving.Has(p.Name) && (inplace.ComingBack(p, images) || controller.ResizingToTemplate(rs, p)) {
			return true
		}
	}
	return false
}

// statusWait is what putOff decides.
type statusWait int

const (
	writeNow statusWait = iota
	// whileLeaving: a pod named leaving is still the ReplicaSet's own; its departure
	// wakes the sync.
	whileLeaving
	// forRecord: every pod named leaving has left; the write waits for the record's
	// next write.
	forRecord
	// forRestarts: pods taken over are counted, and one is still restarting onto its
	// new images or being resized.
	forRestarts
)

// maxPutOff bounds the forRecord and forRestarts waits: the Deployment writes the
// record within moments of the new ReplicaSet's report, and a pod taken over restarts
// in about the time a new one takes to start; but a Deployment deleted with
// --cascade=orphan never writes the record again, an image pull may take minutes, and
// the status must not stay stale for them.
const maxPutOff = time.Second

// statusWaits remembers, per ReplicaSet, when its status write first waited for what,
// at which generation, so that the wait ends maxPutOff later. A restarted controller
// starts afresh: its first sync waits at most maxPutOff more.
type statusWaits struct {
	mu    sync.Mutex
	since map[string]statusWaitStart
}

type statusWaitStart struct {
	wait       statusWait
	generation int64
	at         time.Time
}

// left is how much longer key's wait may last, from now: maxPutOff from its first wait
// for the same thing at the same generation.
func (w *statusWaits) left(key string, wait statusWait, generation int64, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	start, ok := w.since[key]
	if !ok || start.wait != wait || start.generation != generation {
		if w.since == nil {
			w.since = map[string]statusWaitStart{}
		}
		start = statusWaitStart{wait, generation, now}
		w.since[key] = start
	}
	return start.at.Add(maxPutOff).Sub(now)
}

// forget ends key's wait: its status was written, or it is gone.
func (w *statusWaits) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.since, key)
}
