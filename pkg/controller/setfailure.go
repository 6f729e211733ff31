package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/failure"
)

// The failure policy's writes for StatefulSets and DaemonSets (see pkg/failure): both
// kinds act on a failed rollout, or on kroll.dev/abort, the same way, and report it
// the same way. The protocol, as invariants per state of the set:
//
//   - Acted: one Update carries the action (a template, a partition, an annotation)
//     with its records: the revision it acted on (kroll.dev/rolled-back-from,
//     kroll.dev/paused-on-failure: never acted on again) and the report to make
//     (kroll.dev/rollout-failed, see failure.Report).
//   - Reporting: the status gets the RolloutFailed condition, then the Warning event
//     and the metric go out, then one Update removes kroll.dev/rollout-failed.
//   - A controller stopped anywhere in between finds kroll.dev/rollout-failed on its
//     next pass (Recover): a report whose condition the status does not show is made
//     then (condition, event, metric); the record is removed either way. A pass on a
//     stale cache fails its status write on a conflict before any event goes out.

// Set is a StatefulSet or a DaemonSet, as the failure policy writes it.
type Set[T any] interface {
	*appsv1.StatefulSet | *appsv1.DaemonSet
	metav1.Object
	runtime.Object
	DeepCopy() T
}

// SetWriter writes a set itself, not only its status: the failure policy changes its
// template, partition or annotations.
type SetWriter[T any] interface {
	Update(ctx context.Context, set T) (T, error)
	UpdateStatus(ctx context.Context, set T) (T, error)
}

// StatefulSetWriter writes StatefulSets through the client.
type StatefulSetWriter struct{ Client kubernetes.Interface }

func (w StatefulSetWriter) Update(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	return w.Client.AppsV1().StatefulSets(set.Namespace).Update(ctx, set, metav1.UpdateOptions{})
}

func (w StatefulSetWriter) UpdateStatus(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	return w.Client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
}

var _ SetWriter[*appsv1.StatefulSet] = StatefulSetWriter{}

// DaemonSetWriter writes DaemonSets through the client.
type DaemonSetWriter struct{ Client kubernetes.Interface }

func (w DaemonSetWriter) Update(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	return w.Client.AppsV1().DaemonSets(ds.Namespace).Update(ctx, ds, metav1.UpdateOptions{})
}

func (w DaemonSetWriter) UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	return w.Client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
}

var _ SetWriter[*appsv1.DaemonSet] = DaemonSetWriter{}

// SetFailure is the failure policy's writes for one set kind (T its object, C its
// status condition).
type SetFailure[T Set[T], C any] struct {
	// Kind names the kind in events and metrics: "StatefulSet", "DaemonSet".
	Kind string
	// Conditions converts the kind's status conditions.
	Conditions failure.Conditions[C]
	// Status points at a set's status conditions.
	Status func(T) *[]C
}

// StatefulSetFailure and DaemonSetFailure are the two kinds'.
var (
	StatefulSetFailure = SetFailure[*appsv1.StatefulSet, appsv1.StatefulSetCondition]{
		Kind: "StatefulSet",
		Conditions: failure.Conditions[appsv1.StatefulSetCondition]{
			View: func(c appsv1.StatefulSetCondition) failure.Condition {
				return failure.Condition{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
			},
			Make: func(c failure.Condition) appsv1.StatefulSetCondition {
				return appsv1.StatefulSetCondition{Type: appsv1.StatefulSetConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
			},
		},
		Status: func(s *appsv1.StatefulSet) *[]appsv1.StatefulSetCondition { return &s.Status.Conditions },
	}
	DaemonSetFailure = SetFailure[*appsv1.DaemonSet, appsv1.DaemonSetCondition]{
		Kind: "DaemonSet",
		Conditions: failure.Conditions[appsv1.DaemonSetCondition]{
			View: func(c appsv1.DaemonSetCondition) failure.Condition {
				return failure.Condition{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
			},
			Make: func(c failure.Condition) appsv1.DaemonSetCondition {
				return appsv1.DaemonSetCondition{Type: appsv1.DaemonSetConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
			},
		},
		Status: func(d *appsv1.DaemonSet) *[]appsv1.DaemonSetCondition { return &d.Status.Conditions },
	}
)

// ConditionsOf is set's status conditions as the failure policy sees them.
func (k SetFailure[T, C]) ConditionsOf(set T) []failure.Condition {
	return k.Conditions.All(*k.Status(set))
}

// Act writes next — the set as an action on its failed rollout leaves it, with that
// action's records — carrying r too (kroll.dev/rollout-failed) in the same Update,
// then reports r (see report) over conds: the set's failure conditions as this pass
// planned them.
func (k SetFailure[T, C]) Act(ctx context.Context, w SetWriter[T], rec record.EventRecorder, next T, r failure.Report, conds []failure.Condition, now time.Time) error {
	annotations := next.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	r.Record(annotations)
	next.SetAnnotations(annotations)
	updated, err := w.Update(ctx, next)
	if err != nil {
		return err
	}
	return k.report(ctx, w, rec, updated, r, conds, now)
}

// Answer writes next, the set with its kroll.dev/abort request removed: acted on
// (r is the rollback's report: see Act), or ignored (ignored is the AbortIgnored
// event's message, r is zero).
func (k SetFailure[T, C]) Answer(ctx context.Context, w SetWriter[T], rec record.EventRecorder, next T, ignored string, r failure.Report, now time.Time) error {
	if ignored == "" {
		return k.Act(ctx, w, rec, next, r, k.ConditionsOf(next), now)
	}
	updated, err := w.Update(ctx, next)
	if err != nil {
		return err
	}
	rec.Event(updated, corev1.EventTypeWarning, EventAbortIgnored, ignored)
	return nil
}

// Recover makes the report set still carries (kroll.dev/rollout-failed): the pass
// that acted was stopped before it finished reporting. handled is false when there
// is none; the pass ends otherwise.
func (k SetFailure[T, C]) Recover(ctx context.Context, w SetWriter[T], rec record.EventRecorder, set T, now time.Time) (handled bool, err error) {
	r, present, ok := failure.ReportOf(set.GetAnnotations())
	if !present {
		return false, nil
	}
	if !ok {
		return true, k.clear(ctx, w, set) // unreadable: nothing to report from it
	}
	return true, k.report(ctx, w, rec, set, r, k.ConditionsOf(set), now)
}

// report makes r's report for set, which carries it, unless set's status shows it
// already: the RolloutFailed condition (over conds), then the event and the metric;
// then it removes the record.
func (k SetFailure[T, C]) report(ctx context.Context, w SetWriter[T], rec record.EventRecorder, set T, r failure.Report, conds []failure.Condition, now time.Time) error {
	if !failure.Reported(r, k.ConditionsOf(set)) {
		next := set.DeepCopy()
		status := k.Status(next)
		*status = k.Conditions.Merge(*status, failure.WithReport(conds, r, now))
		updated, err := w.UpdateStatus(ctx, next)
		if err != nil {
			return err
		}
		ReportFailureAction(rec, updated, k.Kind, r.Action, r.Message)
		set = updated
	}
	return k.clear(ctx, w, set)
}

// clear removes kroll.dev/rollout-failed from set.
func (k SetFailure[T, C]) clear(ctx context.Context, w SetWriter[T], set T) error {
	next := set.DeepCopy()
	annotations := next.GetAnnotations()
	delete(annotations, failure.RolloutFailedAnnotation)
	next.SetAnnotations(annotations)
	_, err := w.Update(ctx, next)
	return err
}

// RevisionWriter writes a set's ControllerRevisions (client-go's
// ControllerRevisionInterface is one).
type RevisionWriter interface {
	Update(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.UpdateOptions) (*appsv1.ControllerRevision, error)
}

var _ RevisionWriter = typedappsv1.ControllerRevisionInterface(nil)

// MarkComplete records on rev that its revision completed once
// (failure.CompleteAnnotation: see failure.PlanSet's MarkComplete). A conflict means
// the cache was stale; the sync is retried and decides afresh.
func MarkComplete(ctx context.Context, w RevisionWriter, rev *appsv1.ControllerRevision) error {
	next := rev.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[failure.CompleteAnnotation] = "true"
	_, err := w.Update(ctx, next, metav1.UpdateOptions{})
	return err
}
