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
// resources (resizing).
func arrivalsComingBack(rs *appsv1.ReplicaSet, active []*corev1.Pod) bool {
	arriving := inplace.Names(rs, inplace.ArrivingAnnotation)
	if arriving.Len() == 0 {
		return false
	}
	images := inplace.Images(&rs.Spec.Template)
	for _, p := range active {
		if arriving.Has(p.Name) && (inplace.ComingBack(p, images) || resizing(rs, p)) {
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
