package statefulset

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
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
		return controller.WithConfig(newPod(set, revs.currentSet, revs.current.Name, ordinal), revs.current)
	}
	return controller.WithConfig(newPod(set, revs.updateSet, revs.update.Name, ordinal), revs.update)
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
//
// Under kroll.dev/disruption-budget: Respect, the pods the rolling update replaces go
// through the Eviction API (takeDown), and those it restarts in place take their
// disruptions from the budgets first (inPlaceBudget): a pod a PodDisruptionBudget
// keeps stays as it is, is recorded in takes, and the update goes no further in this
// sync under OrderedReady. The disruptions of pods whose in-place update is over are
// given back in the sync's first budget write, or at its end.
func (c *Controller) update(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, takes *controller.Takes, now time.Time) (status appsv1.StatefulSetStatus, err error) {
	status = appsv1.StatefulSetStatus{
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
	budget := c.inPlaceBudget(set, pods, revs, takes, now)
	defer func() {
		if releaseErr := budget.Release(ctx); err == nil {
			err = releaseErr
		}
	}()
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	mode, _ := inplace.ModeOf(set.Annotations)
	status.Conditions = conditions.With(set.Status.Conditions, c.inPlaceVerdict(set, s, revs, mode, now), now)
	// Pods mid-way through an in-place update (or new, waiting to be put in service)
	// move on first: OrderedReady waits for them. This holds after an opt-out too, so
	// that no pod is left out of service.
	if acted, err := c.settleInPlace(ctx, set, s, revs, mode, now); acted || err != nil {
		return status, err
	}

	// Replicas: create what is missing, lowest ordinal first. The status counts the
	// pods created: the API server has them, and the status write the cache's first
	// sight of them would make is saved.
	var errs []error
	var made []*corev1.Pod
	recount := func() {
		if len(made) > 0 {
			countPods(set, append(pods[:len(pods):len(pods)], made...), revs, &status, now)
		}
	}
	for _, p := range s.replicas {
		acted, created, err := c.replicaStep(ctx, set, p, revs, ordered, takes, budget, now)
		if created != nil {
			made = append(made, created)
		}
		if err != nil {
			errs = append(errs, err)
			if ordered {
				break
			}
		}
		if acted && ordered {
			recount()
			return status, firstErr(errs)
		}
	}
	recount()
	if len(errs) > 0 {
		return status, firstErr(errs)
	}

	// Condemned pods: their claims first (so a whenScaled=Delete claim goes with its
	// pod), then the pods, highest first.
	for _, p := range s.condemned {
		if err := c.claims.fixRetention(ctx, set, p); err != nil {
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
		if err := c.pods.DeletePod(ctx, set, p); err != nil {
			return status, err
		}
		if ordered {
			return status, nil
		}
	}

	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return status, nil
	}
	maxUnavailable, err := rollout.StatefulSetMaxUnavailable(set, !c.maxUnavailableOff)
	if err != nil {
		return status, err
	}
	slots := make([]rollout.SetSlot, len(s.replicas))
	for i, p := range s.replicas {
		slots[i] = rollout.SetSlot{Stale: p.Labels[RevisionLabel] != revs.update.Name && !isTerminating(p),
			Unavailable: c.outOfService(set, p, now) || resizing(set, p, revs)}
	}
	// The pods to update now (rollout.StatefulSetUpdate, which `kroll rollout plan`
	// replays too): each in place when the set opted in and its change allows it,
	// replaced otherwise.
	var removed []int
	for _, i := range rollout.StatefulSetUpdate(slots, int(partitionOf(set)), maxUnavailable) {
		p := s.replicas[i]
		inPlace, kept, err := c.updateInPlace(ctx, set, p, revs, mode, budget, now)
		if err != nil {
			return status, err
		}
		if inPlace && !kept {
			continue
		}
		if !inPlace {
			if kept, err = c.takeDown(ctx, set, p, takes); err != nil {
				return status, err
			}
		}
		if kept {
			if ordered {
				break
			}
			continue
		}
		deletedCurrent(p, revs, &status)
		if rollout.RemovedOnDelete(p) {
			removed = append(removed, i)
		}
	}
	return status, c.recreate(ctx, set, pods, s, removed, revs, ordered, &status, now)
}

// recreate makes the successors of the pods the rolling update just deleted that the API
// server removed in the deleting request (removed: their indexes in s.replicas), as the
// next sync would: the lowest alone under OrderedReady, all of them under Parallel. The
// ordinal is free at once, so waiting for the cache's sight of the deletion would only
// add a status write and a sync's round trip to every step of the rollout. A successor the API server refuses as already there (a finalizer the cache
// did not show yet) is left to the next sync. status then counts the successors made,
// not the pods they replace.
func (c *Controller) recreate(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, s slots, removed []int, revs revisions, ordered bool, status *appsv1.StatefulSetStatus, now time.Time) error {
	var made []*corev1.Pod
	gone := map[*corev1.Pod]bool{}
	var err error
	sort.Ints(removed)
	for _, i := range removed {
		old := s.replicas[i]
		successor := c.placeholder(set, revs, status, ordinalOf(old))
		_, created, stepErr := c.replicaStep(ctx, set, successor, revs, ordered, nil, nil, now)
		if created != nil {
			made, gone[old] = append(made, created), true
		}
		if err = stepErr; err != nil || ordered {
			break
		}
	}
	if len(made) == 0 {
		return err
	}
	live := make([]*corev1.Pod, 0, len(pods)+len(made))
	for _, p := range pods {
		if !gone[p] {
			live = append(live, p)
		}
	}
	countPods(set, append(live, made...), revs, status, now)
	// Pods deleted without a successor yet still count until the cache drops them, but
	// not as current, as deletedCurrent had it.
	for _, i := range removed {
		if !gone[s.replicas[i]] {
			deletedCurrent(s.replicas[i], revs, status)
		}
	}
	return err
}

// replicaStep acts on the in-range pod p, if it needs it; acted says whether
// OrderedReady must stop here (a write made, or p not yet healthy), created is the pod
// it created, as the API server returned it.
func (c *Controller) replicaStep(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, revs revisions, ordered bool, takes *controller.Takes, budget *controller.InPlaceBudget, now time.Time) (acted bool, created *corev1.Pod, err error) {
	ordinal := ordinalOf(p)
	switch {
	case isFinished(p):
		if !isTerminating(p) {
			return true, nil, c.pods.DeletePod(ctx, set, p)
		}
		return true, nil, nil
	case !isCreated(p):
		if waiting, err := c.claims.staleClaim(set, p); err != nil || waiting {
			return true, nil, err
		}
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return true, nil, err
		}
		created, err := c.pods.CreatePod(ctx, set, p)
		if err != nil || created == nil || created.UID == "" {
			created = nil // not made, or a stale cache's create of one that is there
		} else {
			c.fence.Wrote(set.Namespace+"/"+set.Name, set.UID, "pods", created.ResourceVersion)
			// Claims kept from an earlier pod take the owners the policy gives now.
			err = c.claims.fixRetention(ctx, set, created)
		}
		return true, created, err
	case p.Status.Phase == corev1.PodPending:
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return true, nil, err
		}
		if err := c.claims.fixRetention(ctx, set, p); err != nil {
			return true, nil, err
		}
	}
	if ordered && !isHealthy(set, p, now) {
		if !isTerminating(p) && abandoned(p, revs) && isUnavailable(set, p, now) {
			// A pod of an abandoned revision that serves nothing: do not wait for it.
			// An opted-in set takes it to the update revision in place where the
			// change allows (a rollback of an image), and replaces it otherwise.
			mode, _ := inplace.ModeOf(set.Annotations)
			if inPlace, _, err := c.updateInPlace(ctx, set, p, revs, mode, budget, now); inPlace || err != nil {
				return true, nil, err
			}
			_, err := c.takeDown(ctx, set, p, takes)
			return true, nil, err
		}
		return true, nil, nil
	}
	if !hasIdentity(set, p) || !hasStorage(set, p, ordinal) {
		if err := c.claims.create(ctx, set, p, ordinal); err != nil {
			return false, nil, err
		}
		return false, nil, c.pods.UpdatePod(ctx, set, p, func(pod *corev1.Pod) {
			setIdentity(set, pod, ordinal)
			setStorage(set, pod, ordinal)
		})
	}
	return false, nil, c.claims.fixRetention(ctx, set, p)
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

// deletedCurrent takes a pod just deleted off status.currentReplicas if it counted
// there: at the current revision. A pod of neither revision (a set deleted with
// --cascade=orphan and made again with another template adopts such pods) never
// counted; taking it off anyway wrote currentReplicas -1, which the API refuses.
func deletedCurrent(p *corev1.Pod, revs revisions, status *appsv1.StatefulSetStatus) {
	if p.Labels[RevisionLabel] == revs.current.Name && status.CurrentReplicas > 0 {
		status.CurrentReplicas--
	}
}
