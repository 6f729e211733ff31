package rolloutview

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// A workload that opts into kroll's failure policy (kroll.dev/on-failure Rollback or
// Pause) is judged by kroll's controller after its counts say rolled out: the revision
// counts as complete only once its pods stayed Ready failure.SettleTime, and the
// controller then marks it (failure.CompleteAnnotation on the ReplicaSet or
// ControllerRevision). A crash-looping release shows every pod updated and available
// for a moment before its first crash; reporting Complete then would pass a release
// that the controller rolls back a second later. So for a watched workload the views
// report Complete only once the mark is there, read from the cluster: the rule stays
// the controller's, the view only waits for its outcome. While it waits the rollout is
// Progressing and says so, with Settling set.
//
// Nothing marks a revision on a cluster whose workload controllers are upstream's
// (kube-controller-manager): there the views fall back to kubectl's semantics, with a
// warning, rather than wait forever. Which controller runs is read from the workload's
// managedFields: the manager of its newest status write.

// Settling is a watched rollout whose pods are all updated and available, waiting for
// kroll's controller to judge its revision complete.
type Settling struct {
	// Holder names the object the controller marks: `ReplicaSet "web-7d9f"` or
	// `ControllerRevision "db-5c8d"`.
	Holder string `json:"holder"`
	// SecondsLeft is how long until every new pod will have been Ready
	// failure.SettleTime (whole seconds, rounded up); 0 once due (the mark is written
	// on the controller's next pass); absent while a new pod is not Ready.
	SecondsLeft *float64 `json:"secondsLeft,omitempty"`
	// line is what the wait is, for a view's line: "watching for failures for 8 s
	// more (until ReplicaSet "web-7d9f" is marked kroll.dev/complete)".
	line string
}

// upstreamManager is the field manager of kube-controller-manager's writes.
const upstreamManager = "kube-controller-manager"

// verdictView is what the wait for a watched rollout's verdict is decided from.
type verdictView struct {
	policy failure.Policy
	// statusWriter is the field manager of the workload's newest status write; ""
	// when its managedFields do not say.
	statusWriter string
	// holder is the object holding the current revision, which carries the mark.
	holder holder
	// pods are the current revision's pods.
	pods []*corev1.Pod
	// partial: a partition holds pods on older revisions (a StatefulSet's), so the
	// rollout is done at the partition, and the controller marks a revision only once
	// every pod runs it.
	partial bool
	now     time.Time
}

// verdictWait is what a Complete rollout becomes under a watched policy.
type verdictWait struct {
	// wait: the revision is not judged complete yet; Complete waits.
	wait bool
	// settling is set with wait.
	settling *Settling
	// warning is set when the wait is skipped because nothing would ever end it.
	warning string
}

// awaitVerdict decides whether a rollout whose counts say complete is complete for a
// watched policy. It is pure.
//
// 4 pods all available, policy Rollback, the ReplicaSet unmarked, the last pod Ready
// since 2s: wait, 8 s left. The same ReplicaSet marked: complete (a rollback to a
// revision that completed before is marked already: complete at once). Policy None:
// complete, as kubectl says. Status written by kube-controller-manager: complete, with
// a warning that nothing judges the revision.
func awaitVerdict(v verdictView) verdictWait {
	if !v.policy.Watched() || len(v.pods) == 0 || v.partial {
		// Nothing to judge (no pod of the revision can fail), or nothing will be
		// marked until the partition is lowered: done at the partition, as kubectl says.
		return verdictWait{}
	}
	if v.holder.marked {
		return verdictWait{}
	}
	if v.statusWriter == upstreamManager {
		return verdictWait{warning: fmt.Sprintf("%s=%s is set, but the status is written by %s, not kroll's controllers: "+
			"no revision is judged or marked %s here, so complete is reported as kubectl reports it",
			failure.OnFailureAnnotation, v.policy.Action, upstreamManager, failure.CompleteAnnotation)}
	}
	s := &Settling{Holder: "the new revision"}
	if v.holder.name != "" {
		s.Holder = fmt.Sprintf("%s %q", v.holder.kind, v.holder.name)
	}
	if at, ok := failure.SettledAt(v.pods, failure.SettleTime); ok {
		left := math.Max(0, math.Ceil(at.Sub(v.now).Seconds()))
		s.SecondsLeft = &left
	}
	return verdictWait{wait: true, settling: s}
}

// apply turns p, complete by its counts, into the wait: Progressing, with the line
// that says what it waits for; or adds the warning of a skipped wait.
//
//	Waiting for deployment "web" rollout to finish: all 4 pods updated and available;
//	watching for failures for 8 s more (until ReplicaSet "web-7d9f" is marked kroll.dev/complete)...
func (w verdictWait) apply(p *Progress) {
	if w.warning != "" {
		p.Warnings = append(p.Warnings, w.warning)
	}
	if !w.wait || p.Phase != Complete {
		return
	}
	p.Phase, p.Done, p.Settling = Progressing, false, w.settling
	what := fmt.Sprintf("until %s is marked %s", w.settling.Holder, failure.CompleteAnnotation)
	var watching string
	switch left := w.settling.SecondsLeft; {
	case left == nil:
		watching = "waiting for every new pod to be Ready, then watching for failures for " + failure.SettleTime.String()
	case *left > 0:
		watching = fmt.Sprintf("watching for failures for %.0f s more", *left)
	default:
		watching = "watched for failures " + failure.SettleTime.String() + ", waiting for kroll's controller"
	}
	w.settling.line = fmt.Sprintf("%s (%s)", watching, what)
	p.Message = fmt.Sprintf("Waiting for %s %q rollout to finish: all %s updated and available; %s...",
		kindWords(p.Kind), p.Name, pods(p.Target), w.settling.line)
}

// kindWords names a kind as kubectl's status lines do.
func kindWords(kind string) string {
	if kind == "daemonset" {
		return "daemon set"
	}
	return kind
}

// statusWriter is the field manager of obj's newest status write ("" when its
// managedFields name none).
func statusWriter(obj metav1.Object) string {
	if i := newestStatusWrite(obj.GetManagedFields()); i >= 0 {
		return obj.GetManagedFields()[i].Manager
	}
	return ""
}

// newestStatusWrite is the index of the newest status write among fields (the first
// of equal times), or -1.
func newestStatusWrite(fields []metav1.ManagedFieldsEntry) int {
	newest := -1
	for i, e := range fields {
		if e.Subresource != "status" || e.Time == nil {
			continue
		}
		if newest < 0 || e.Time.After(fields[newest].Time.Time) {
			newest = i
		}
	}
	return newest
}

// KeepStatusWriter trims obj's managedFields to what the views read of them: the
// newest status write's manager and time, without the fields it set. A cache that
// keeps workloads for the views (the dashboard's) calls it on each: managedFields list
// every field each writer set, about as much as the rest of a Deployment.
func KeepStatusWriter(obj metav1.Object) {
	fields := obj.GetManagedFields()
	i := newestStatusWrite(fields)
	if i < 0 {
		obj.SetManagedFields(nil)
		return
	}
	e := fields[i]
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource, Time: e.Time}})
}

// holder is the object holding a revision: a ReplicaSet or ControllerRevision.
type holder struct {
	// kind and name name it; name is "" when there is none yet.
	kind, name string
	// marked: the controller marked it complete (failure.CompleteAnnotation).
	marked bool
}

func replicaSetHolder(rs *appsv1.ReplicaSet) holder {
	if rs == nil {
		return holder{kind: "ReplicaSet"}
	}
	return holder{kind: "ReplicaSet", name: rs.Name, marked: failure.IsComplete(rs.Annotations)}
}

func revisionHolder(r *appsv1.ControllerRevision) holder {
	if r == nil {
		return holder{kind: "ControllerRevision"}
	}
	return holder{kind: "ControllerRevision", name: r.Name, marked: failure.IsComplete(r.Annotations)}
}

// awaitVerdict holds p's Complete until kroll's controller judged the revision that h
// holds complete, for a workload obj whose policy is watched; pods are the revision's.
func (p *Progress) awaitVerdict(obj metav1.Object, h holder, pods []*corev1.Pod, now time.Time) {
	if p.Phase != Complete {
		return
	}
	awaitVerdict(verdictView{
		policy: failure.PolicyOf(obj.GetAnnotations()), statusWriter: statusWriter(obj),
		holder: h, pods: activePods(pods), partial: p.Target < p.Desired, now: now,
	}).apply(p)
}

// revisionNamed is the ControllerRevision called name, or nil.
func revisionNamed(revs []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// activePods are the pods of pods not terminating or finished, as the controller
// judges them.
func activePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if rollout.IsPodActive(pod) {
			out = append(out, pod)
		}
	}
	return out
}
