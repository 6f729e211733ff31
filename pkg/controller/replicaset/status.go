package replicaset

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// CalculateStatus is rs's status for its active and terminating pods at now:
// replicas (active pods), fullyLabeledReplicas (carrying every template label),
// readyReplicas, availableReplicas (ready for at least minReadySeconds, not about to
// restart on images an in-place update just set, see inplace.Restarting, and not
// resizing to the template, see resizing),
// terminatingReplicas, and a ReplicaFailure condition while resizeErr is set
// (FailedCreate when pods were missing, FailedDelete when there were too many).
// observedGeneration is left to the writer.
//
// A pod rs names leaving (inplace.LeavingAnnotation: handed over in place to another
// ReplicaSet of its Deployment) counts among its replicas but as neither ready nor
// available: it goes out of service as it arrives, and the Deployment controller
// counted it out when it picked it. Its departure then changes only replicas and
// fullyLabeledReplicas, a write that can wait (see putOff).
func CalculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, resizeErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fullyLabeled, ready, available int32
	leaving := inplace.Names(rs, inplace.LeavingAnnotation)
	for _, p := range active {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if !leaving.Has(p.Name) && rollout.IsPodReady(p) {
			ready++
			if rollout.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) && !inplace.Restarting(p) && !resizing(rs, p) {
				available++
			}
		}
	}
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
	terminatingCount := int32(len(terminating))
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = &terminatingCount
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

// resizing tells a pod of an in-place Deployment's ReplicaSet that is being resized to
// its template (inplace.Resizing): the Deployment controller resizes each pod once it
// arrives, and until the kubelet reports the new resources it is not counted
// available, so that the Deployment is not reported complete (`kubectl rollout status`
// done) before every pod runs with them, and a resize that restarts nothing is paced by
// maxUnavailable like one that does. Other ReplicaSets' pods are not judged: a pod
// resized by hand is the user's.
func resizing(rs *appsv1.ReplicaSet, p *corev1.Pod) bool {
	return inplace.DeploymentOptedIn(rs) && inplace.Resizing(p, &rs.Spec.Template)
}

// putOff tells whether a status write can wait, and for what: rs hands pods over in
// place and the status differs from the one written only in fewer replicas and
// fullyLabeledReplicas — pods that left (they counted as neither ready nor available
// from the moment they were named).
//
// While a pod rs names leaving is still its own, the write waits for the last of them
// to leave (whileLeaving): its new ReplicaSet reports them at the end of its take-over
// sync, about when the last one leaves, and written at each departure, a round of 250
// pods taken over cost this ReplicaSet a status write a second on the client the
// take-overs wait for. Once all have left it waits for the Deployment's next write of
// the record (forRecord, bounded by recordWait): the next round's pick, which the new
// ReplicaSet's report of the round wakes the Deployment to make, or the record's
// clearing. That write changes rs's generation, and the one status write then carries
// the departures, the pods newly named leaving counted out, and the observedGeneration
// the new ReplicaSet waits for before taking them in; written apart, the two cost the
// take-over client a request a round. Meanwhile the status counts a departed pod where
// it was.
func putOff(rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus, active []*corev1.Pod) statusWait {
	if status.Replicas > rs.Status.Replicas || status.FullyLabeledReplicas > rs.Status.FullyLabeledReplicas {
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

// statusWait is what putOff decides.
type statusWait int

const (
	writeNow statusWait = iota
	// whileLeaving: a pod named leaving is still the ReplicaSet's own; its departure
	// wakes the sync.
	whileLeaving
	// forRecord: every pod named leaving has left; the write waits for the record's
	// next write, at most recordWait.
	forRecord
)

// recordWait bounds a forRecord wait: the Deployment writes the record within moments
// of the new ReplicaSet's report, but a Deployment deleted with --cascade=orphan, or
// whose controller is down, never does, and the status must not stay stale.
const recordWait = time.Second

// recordWaits remembers, per ReplicaSet and generation, when its status write first
// waited forRecord, so that the wait ends recordWait later. A restarted controller
// starts afresh: its first sync waits at most recordWait more.
type recordWaits struct {
	mu    sync.Mutex
	since map[string]recordWaitStart
}

type recordWaitStart struct {
	generation int64
	at         time.Time
}

// left is how much longer a forRecord wait of key at generation may last, from now:
// recordWait from its first wait at this generation.
func (w *recordWaits) left(key string, generation int64, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	start, ok := w.since[key]
	if !ok || start.generation != generation {
		if w.since == nil {
			w.since = map[string]recordWaitStart{}
		}
		start = recordWaitStart{generation, now}
		w.since[key] = start
	}
	return start.at.Add(recordWait).Sub(now)
}

// forget ends key's wait: its status was written, or it is gone.
func (w *recordWaits) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.since, key)
}
