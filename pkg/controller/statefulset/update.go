package statefulset

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// revisions are the two revisions a sync works with: current (what the pods below the
// partition run) and update (what the set's template says now), each with the set as
// that revision describes it.
type revisions struct {
	current, update       *appsv1.ControllerRevision
	currentSet, updateSet *appsv1.StatefulSet
	// all is the set's history, oldest first.
	all []*appsv1.ControllerRevision
}

// template is the pod template of revision name, if it is in the history.
func (r revisions) template(set *appsv1.StatefulSet, name string) (*corev1.PodTemplateSpec, bool) {
	switch name {
	case r.update.Name:
		return &r.updateSet.Spec.Template, true
	case r.current.Name:
		return &r.currentSet.Spec.Template, true
	}
	for _, rev := range r.all {
		if rev.Name == name {
			if s, err := history.ApplyRevision(set, rev); err == nil {
				return &s.Spec.Template, true
			}
		}
	}
	return nil, false
}

// inPlaceFields names the fields that keep p's template from becoming the update
// revision's in place (a pod whose revision is gone: the whole template).
func (r revisions) inPlaceFields(set *appsv1.StatefulSet, p *corev1.Pod) []string {
	from, ok := r.template(set, p.Labels[RevisionLabel])
	if !ok {
		return []string{"spec.template (the pod's revision is gone)"}
	}
	return inplace.Diff(from, &r.updateSet.Spec.Template)
}

// slots are the set's pods by role: replicas[i] is the pod of ordinal start+i (a pod
// not yet created where missing); condemned are existing pods whose ordinal is out of
// range, highest first.
type slots struct {
	replicas  []*corev1.Pod
	condemned []*corev1.Pod
}

func (c *Controller) slots(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, status *appsv1.StatefulSetStatus) slots {
	start, n := startOrdinal(set), replicasOf(set)
	s := slots{replicas: make([]*corev1.Pod, n)}
	for _, p := range pods {
		o := ordinalOf(p)
		switch {
		case o < 0:
		case o >= start && o < start+n:
			s.replicas[o-start] = p
		default:
			s.condemned = append(s.condemned, p)
		}
	}
	sort.Slice(s.condemned, func(i, j int) bool { return ordinalOf(s.condemned[i]) > ordinalOf(s.condemned[j]) })
	for i := range s.replicas {
		if s.replicas[i] == nil {
			s.replicas[i] = c.placeholder(set, revs, status, start+i)
		}
	}
	return s
}

// placeholder is the pod ordinal should have, not yet created: at the current revision
// below the partition (or below status.currentReplicas for an update without
// rollingUpdate), else at the update revision.
func (c *Controller) placeholder(set *appsv1.StatefulSet, revs revisions, status *appsv1.StatefulSetStatus, ordinal int) *corev1.Pod {
	start := startOrdinal(set)
	useCurrent := false
	switch ru := set.Spec.UpdateStrategy.RollingUpdate; {
	case set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil:
		useCurrent = ordinal < start+int(partitionOf(set))
	case set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType:
		useCurrent = ordinal < start+int(status.CurrentReplicas)
	}
	if useCurrent {
		return newPod(set, revs.currentSet, revs.current.Name, ordinal)
	}
	return newPod(set, revs.updateSet, revs.update.Name, ordinal)
}

func partitionOf(set *appsv1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

func isCreated(p *corev1.Pod) bool     { return p.Status.Phase != "" }
func isTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }
func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}
func isRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && rollout.IsPodReady(p)
}

// isHealthy: Running, Ready, available under minReadySeconds, not terminating — what
// OrderedReady waits for before it moves to the next ordinal.
func isHealthy(set *appsv1.StatefulSet, p *corev1.Pod, now time.Time) bool {
	return !isTerminating(p) && isRunningAndReady(p) && rollout.IsPodAvailable(p, set.Spec.MinReadySeconds, now)
}

func isUnavailable(set *appsv1.StatefulSet, p *corev1.Pod, now time.Time) bool {
	return isTerminating(p) || !rollout.IsPodAvailable(p, set.Spec.MinReadySeconds, now)
}

// abandoned tells whether pod runs a revision the set has left behind: neither the
// current one (what the pods below the partition run, and what an unfinished rollout
// started from) nor the update one.
func abandoned(p *corev1.Pod, revs revisions) bool {
	r := p.Labels[RevisionLabel]
	return r != revs.current.Name && r != revs.update.Name
}

// update brings set's pods one step towards its spec, and returns the status to
// write. Contract (upstream's, by ordinal):
//
//   - Pods of in-range ordinals are made to exist, lowest first. OrderedReady creates
//     one at a time and moves on only once the previous is Running, Ready and
//     available; Parallel creates all at once. Failed and Succeeded pods are deleted,
//     to be recreated. Scaling comes before updating.
//   - Out-of-range pods are deleted highest first: OrderedReady one at a time, only
//     once every in-range pod is healthy; Parallel all at once.
//   - RollingUpdate then replaces pods at or above the partition that are not at the
//     update revision, highest first: one at a time, each waited for, without
//     maxUnavailable; up to maxUnavailable unavailable at once with it. OnDelete
//     replaces nothing: a pod the user deletes comes back at the update revision.
//
// Beyond upstream (kubernetes/kubernetes#67250): under OrderedReady, an in-range pod
// that is not available and runs an abandoned revision — neither the current nor the
// update one — is deleted instead of waited for. Upstream waits for it to become Ready
// first, so a rollout stuck on a pod that can never start (a bad image) stays stuck
// after `kubectl rollout undo` (or a fix-forward to a third template) until someone
// deletes that pod by hand: the undo makes the update revision the current one again,
// and the stuck pod's revision is then neither. Deleting it is safe: it serves nothing
// (it is not available), no setting of the set asks for its revision any more, and it
// is recreated at a revision the set does ask for. A pod of the current or the update
// revision that is briefly not ready is still waited for, as upstream does: during a
// rollout only one pod is ever down.
func (c *Controller) update(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, now time.Time) (appsv1.StatefulSetStatus, error) {
	status := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    revs.current.Name,
		UpdateRevision:     revs.update.Name,
		CollisionCount:     set.Status.CollisionCount,
		CurrentReplicas:    set.Status.CurrentReplicas,
		Conditions:         set.Status.Conditions,
	}
	countPods(set, pods, revs, &status, now)
	s := c.slots(set, pods, revs, &status)
	if set.DeletionTimestamp != nil {
		return status, nil
	}
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	mode, _ := inplace.ModeOf(set.Annotations)
	status.Conditions = conditions.With(set.Status.Conditions, c.inPlaceVerdict(set, s, revs, mode, now), now)
	// Pods mid-way through an in-place update (or new, waiting to be put in service)
	// move on first: OrderedReady waits for them. This holds after an opt-out too, so
	// that no pod is left out of service.
	if acted, err := c.settleInPlace(ctx, set, s, revs, now); acted || err != nil {
		return status, err
	}

	// Replicas: create what is missing, lowest ordinal first.
	var errs []error
	for _, p := range s.replicas {
		acted, err := c.replicaStep(ctx, set, p, revs, ordered, now)
		if err != nil {
			errs = append(errs, err)
			if ordered {
				break
			}
		}
		if acted && ordered {
			return status, firstErr(errs)
		}
	}
	if len(errs) > 0 {
		return status, firstErr(errs)
	}

	// Condemned pods: their claims first (so a whenScaled=Delete claim goes with its
	// pod), then the pods, highest first.
	for _, p := range s.condemned {
		if err := c.claims.fixRetention(ctx, set, p, true); err != nil {
			return status, err
		}
	}
	firstUnhealthy := firstUnhealthyPod(set, s, now)
	for _, p := range s.condemned {
		if isTerminating(p) {
			if ordered {
				return status, nil
			}
			continue
		}
		if ordered && !isHealthy(set, p, now) && p != firstUnhealthy {
			return status, nil
		}
		if err := c.pods.delete(ctx, set, p); err != nil {
			return status, err
		}
		if ordered {
			return status, nil
		}
	}

	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return status, nil
	}
	partition := int(partitionOf(set))
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		return c.updateWithMaxUnavailable(ctx, set, s, revs, status, now)
	}
	for i := len(s.replicas) - 1; i >= partition && i >= 0; i-- {
		p := s.replicas[i]
		if p.Labels[RevisionLabel] != revs.update.Name && !isTerminating(p) {
			if inPlace, err := c.updateInPlace(ctx, set, p, revs, mode, now); inPlace || err != nil {
				return status, err
			}
			if err := c.pods.delete(ctx, set, p); err != nil {
				return status, err
			}
			deletedCurrent(p, revs, &status)
			return status, nil
		}
		if isUnavailable(set, p, now) {
			return status, nil
		}
	}
	return status, nil
}

// replicaStep acts on the in-range pod p, if it needs it; acted says whether
// OrderedReady must stop here (a write made, or p not yet healthy).
func (c *Controller) replicaStep(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, revs revisions, ordered bool, now time.Time) (acted bool, err error) {
	ordinal := ordinalOf(p)
	switch {
	case isFinished(p):
		if !isTerminating(p) {
			return true, c.pods.delete(ctx, set, p)
		}
		return true, nil
	case !isCreated(p):
		if waiting, err := c.claims.staleClaim(set, ordinal); err != nil || waiting {
			return true, err
		}
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return true, err
		}
		return true, c.pods.create(ctx, set, p)
	case p.Status.Phase == corev1.PodPending:
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return true, err
		}
	}
	if ordered && !isHealthy(set, p, now) {
		if !isTerminating(p) && abandoned(p, revs) && isUnavailable(set, p, now) {
			// A pod of an abandoned revision that serves nothing: do not wait for it.
			return true, c.pods.delete(ctx, set, p)
		}
		return true, nil
	}
	if !hasIdentity(set, p) || !hasStorage(set, p, ordinal) {
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return false, err
		}
		return false, c.pods.update(ctx, set, p, func(pod *corev1.Pod) {
			setIdentity(set, pod, ordinal)
			setStorage(set, pod, ordinal)
		})
	}
	return false, c.claims.fixRetention(ctx, set, p, false)
}

// updateWithMaxUnavailable replaces stale pods at or above the partition, highest first,
// as many at once as keep at most maxUnavailable (rounded down, at least 1) in-range
// pods unavailable.
func (c *Controller) updateWithMaxUnavailable(ctx context.Context, set *appsv1.StatefulSet, s slots, revs revisions, status appsv1.StatefulSetStatus, now time.Time) (appsv1.StatefulSetStatus, error) {
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, replicasOf(set), false)
	if err != nil {
		return status, err
	}
	maxUnavailable = max(maxUnavailable, 1)
	mode, _ := inplace.ModeOf(set.Annotations)
	unavailable := 0
	for _, p := range s.replicas {
		if c.outOfService(set, p, now) {
			unavailable++
		}
	}
	partition := int(partitionOf(set))
	for i := len(s.replicas) - 1; i >= partition && i >= 0; i-- {
		p := s.replicas[i]
		if p.Labels[RevisionLabel] == revs.update.Name || isTerminating(p) {
			continue
		}
		wasOut := c.outOfService(set, p, now)
		if !wasOut && unavailable >= maxUnavailable {
			break
		}
		inPlace, err := c.updateInPlace(ctx, set, p, revs, mode, now)
		if err != nil {
			return status, err
		}
		if !inPlace {
			if err := c.pods.delete(ctx, set, p); err != nil {
				return status, err
			}
			deletedCurrent(p, revs, &status)
		}
		if !wasOut {
			unavailable++
		}
	}
	return status, nil
}

// firstUnhealthyPod is the lowest in-range pod that is not healthy, else the lowest
// condemned one: the one unhealthy pod OrderedReady may still scale down.
func firstUnhealthyPod(set *appsv1.StatefulSet, s slots, now time.Time) *corev1.Pod {
	for _, p := range s.replicas {
		if !isHealthy(set, p, now) {
			return p
		}
	}
	for i := len(s.condemned) - 1; i >= 0; i-- {
		if !isHealthy(set, s.condemned[i], now) {
			return s.condemned[i]
		}
	}
	return nil
}

func firstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// settleInPlace moves on every pod of an opted-in set that an in-place update left
// mid-way (out of service, or patched and restarting) or that waits to be put in
// service; acted says a write was made (one kind of change per sync).
func (c *Controller) settleInPlace(ctx context.Context, set *appsv1.StatefulSet, s slots, revs revisions, now time.Time) (bool, error) {
	acted := false
	for _, p := range append(append([]*corev1.Pod(nil), s.replicas...), s.condemned...) {
		if !isCreated(p) || isTerminating(p) || !inplace.HasGate(p) {
			continue
		}
		target, ok := c.inPlaceTarget(set, p, revs)
		if !ok {
			continue
		}
		if _, mid := inplace.StateOf(p); !mid && inplace.GateStatus(p) == corev1.ConditionTrue {
			continue
		}
		r, err := inplace.Writer{Client: c.client}.Step(ctx, p, target, inplace.GracePeriod(set.Annotations), now)
		if err != nil {
			return true, err
		}
		if r.After > 0 {
			c.queue.EnqueueAfter(set, r.After)
		}
		acted = acted || (r.Step != inplace.Wait && r.Step != inplace.Done)
	}
	return acted, nil
}

// inPlaceTarget is what pod p is (being) updated to: the update revision once it is
// mid-update to it, else the revision it is labelled with (a pod whose update was
// overtaken by another change is put back as it is, and updated afresh).
func (c *Controller) inPlaceTarget(set *appsv1.StatefulSet, p *corev1.Pod, revs revisions) (inplace.Target, bool) {
	name := p.Labels[RevisionLabel]
	if st, mid := inplace.StateOf(p); mid && st.Revision == revs.update.Name {
		name = revs.update.Name
	}
	return revs.target(set, p, name)
}

// target is the in-place update of p to revision name, from the revision p is
// labelled with (whose labels and annotations p loses where name's template has none).
func (r revisions) target(set *appsv1.StatefulSet, p *corev1.Pod, name string) (inplace.Target, bool) {
	template, ok := r.template(set, name)
	if !ok {
		return inplace.Target{}, false
	}
	t := inplace.Target{Revision: name, Template: template, Labels: map[string]string{RevisionLabel: name}}
	if from, ok := r.template(set, p.Labels[RevisionLabel]); ok {
		t.From = from
	}
	return t, true
}

// inPlaceVerdict judges, for an opted-in RollingUpdate set, the change from the
// revisions of its stale pods at or above the partition to the update revision,
// announcing news as an event; the InPlaceUpdate condition becomes it (nil:
// unchanged, no reason: removed). With no stale pod left, a change made in place is
// complete once every pod at or above the partition is healthy and back in service.
func (c *Controller) inPlaceVerdict(set *appsv1.StatefulSet, s slots, revs revisions, mode inplace.Mode, now time.Time) *inplace.Verdict {
	if mode == inplace.Off {
		return &inplace.Verdict{}
	}
	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return nil
	}
	seen := map[string]bool{}
	var fields []string
	judged := false
	for i := int(partitionOf(set)); i < len(s.replicas); i++ {
		p := s.replicas[i]
		if !isCreated(p) || p.Labels[RevisionLabel] == revs.update.Name {
			continue
		}
		judged = true
		for _, f := range revs.inPlaceFields(set, p) {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	if !judged {
		for i := int(partitionOf(set)); i < len(s.replicas); i++ {
			if p := s.replicas[i]; !isHealthy(set, p, now) || c.takenOut.Out(p, now) {
				return nil
			}
		}
		return inplace.Finish(conditions.Current(set.Status.Conditions))
	}
	sort.Strings(fields)
	v, _ := inplace.Judge(mode, fields)
	if inplace.IsNews(v, conditions.Current(set.Status.Conditions)) {
		c.recorder.Eventf(set, v.EventType, v.Reason, "%s", v.Message)
	}
	return &v
}

// conditions is how in-place updates read and write a StatefulSet's conditions.
var conditions = inplace.Conditions[appsv1.StatefulSetCondition]{
	View: func(c appsv1.StatefulSetCondition) (string, inplace.Condition) {
		return string(c.Type), inplace.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
	Make: func(c inplace.Condition) appsv1.StatefulSetCondition {
		return appsv1.StatefulSetCondition{Type: inplace.ConditionType, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
}

// updateInPlace starts updating the stale pod p in place, if set opted in and the
// change from p's revision allows it; inPlace false means: replace it as usual.
// InPlaceOnly with a change that does not allow it touches nothing (inPlace true).
func (c *Controller) updateInPlace(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, revs revisions, mode inplace.Mode, now time.Time) (bool, error) {
	if mode == inplace.Off {
		return false, nil
	}
	if fields := revs.inPlaceFields(set, p); len(fields) > 0 {
		return mode == inplace.Only, nil // announced by inPlaceVerdict
	}
	target, _ := revs.target(set, p, revs.update.Name) // the update revision is always known
	r, err := inplace.Writer{Client: c.client}.Step(ctx, p, target, inplace.GracePeriod(set.Annotations), now)
	if r.TookOut {
		c.takenOut.Record(p, now)
	}
	if r.After > 0 {
		c.queue.EnqueueAfter(set, r.After)
	}
	return true, err
}

// outOfService tells whether p counts as unavailable: not available, terminating, or
// out of service for an in-place update (see inplace.TakenOut).
func (c *Controller) outOfService(set *appsv1.StatefulSet, p *corev1.Pod, now time.Time) bool {
	return c.takenOut.Out(p, now) || isUnavailable(set, p, now)
}

// deletedCurrent takes a pod just deleted off status.currentReplicas if it counted
// there: at the current revision. A pod of neither revision (a set deleted with
// --cascade=orphan and made again with another template adopts such pods) never
// counted; taking it off anyway wrote currentReplicas -1, which the API refuses.
func deletedCurrent(p *corev1.Pod, revs revisions, status *appsv1.StatefulSetStatus) {
	if p.Labels[RevisionLabel] == revs.current.Name && status.CurrentReplicas > 0 {
		status.CurrentReplicas--
	}
}
