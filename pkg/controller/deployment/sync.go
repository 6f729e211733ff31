package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// sync reconciles one Deployment.
//
// Contract, in order: a Deployment selecting everything is refused with an event; its
// ReplicaSets are claimed (adopted by selector, released when no longer selected); a
// Deployment being deleted only gets its status updated; its kroll.dev/ settings are
// kept on every ReplicaSet (so that an undo keeps them); pausing and resuming are
// recorded in the Progressing condition; with configuration rollout
// (kroll.dev/config-rollout, config.go) the referenced ConfigMaps and Secrets decide the
// new ReplicaSet's template, an undo's pin record is written alone, and a missing object
// holds back a Deployment that has no ReplicaSet yet, and a new ReplicaSet whose
// snapshots could not be written holds back everything (retried, reported); the new ReplicaSet's revision and annotations
// are brought up to date and the in-place verdict is judged (the pass, once); an
// invalid failure policy is reported; a request to abort (kroll.dev/abort) is rolled
// back or removed, and a staged rollout's step record is written, alone (staged.go),
// its partition bounding everything after; a paused
// Deployment is only scaled (in proportion across its ReplicaSets); a rollback asked
// for by the deprecated annotation is carried out; a failed rollout is rolled back or
// paused as its failure policy asks, and a watched one that completed is marked so
// (heal.go); a Deployment whose replicas changed is only scaled; otherwise its strategy rolls it forward one step.
func (c *Controller) sync(ctx context.Context, key string) error {
	err := c.syncDeployment(ctx, key)
	if errors.Is(err, errConfigWaiting) {
		return nil // retried after configRetry, reported by the next pass
	}
	return err
}

func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if c.fence.HoldBack(key, c.queue) {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.fence.Forget(key)
		c.waits.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()

	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := c.writes.updateStatus(ctx, d)
			return err
		}
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		p, err := c.syncReplicaSets(ctx, d, rsList, configPass{})
		if err != nil {
			return err
		}
		return c.writeStatus(ctx, d, c.calculateStatus(p))
	}
	if wrote, err := c.keepSettings(ctx, d, rsList); err != nil || wrote {
		return err
	}
	if d, err = c.recordPause(ctx, d); err != nil {
		return err
	}
	cfg, acted, err := c.configuration(ctx, d, rsList)
	if err != nil || acted {
		return err
	}
	p, err := c.syncReplicaSets(ctx, d, rsList, cfg)
	if err != nil {
		return err
	}
	if cfg.hold && p.newRS == nil || p.config.waiting {
		// A referenced object is missing: no ReplicaSet is made until it exists. Or a
		// snapshot of the new one could not be written: nothing moves until it is.
		return c.writeStatus(ctx, d, c.calculateStatus(p))
	}
	defer c.observeWait(ctx, p, rsList)
	policy := failure.PolicyOf(d.Annotations)
	c.announcePolicyProblem(d, policy)
	c.announce(d, inPlaceProblemKey(d), inplace.ConditionType, inplace.Problem(d.Annotations), inplace.ReasonInvalidAnnotation)
	// The report of a failure's action a stopped controller did not make is made
	// first; a request to abort goes back before anything else moves; then the staged
	// rollout's step record is written, alone, before the pass acts on it.
	if acted, err := c.recoverReport(ctx, d); err != nil || acted {
		return err
	}
	if acted, err := c.abortRollout(ctx, p); err != nil || acted {
		return err
	}
	if acted, err := c.stage(ctx, p); err != nil || acted {
		return err
	}
	if d.Spec.Paused {
		return c.scaleOnly(ctx, p)
	}
	// Not re-entrant: the ReplicaSets move on only once the annotation is gone.
	if revision, ok := rollbackTo(d); ok {
		return c.rollback(ctx, p, revision)
	}
	// Before anything moves on: a failed rollout goes back (or stops) first, a change
	// of replicas mid-failure is made after, on the restored revision.
	if acted, err := c.healRollout(ctx, p, policy); err != nil || acted {
		return err
	}
	if p.scalingEvent() {
		return c.scaleOnly(ctx, p)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, p)
	}
	return c.rolloutRolling(ctx, p)
}

// claimReplicaSets returns the ReplicaSets d controls, after adopting orphans its
// selector matches and releasing those it no longer selects.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	// Its own and its namespace's orphans: those of other Deployments are not its to claim.
	all, err := controller.Candidates[*appsv1.ReplicaSet](c.rsIndexer, d)
	if err != nil {
		return nil, err
	}
	return controller.Claim[*appsv1.ReplicaSet]{
		Owner: d, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Selects: controller.Matching[*appsv1.ReplicaSet](selector),
		// Re-read from the API server before ReplicaSets are adopted.
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		},
		Patch: func(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) (*appsv1.ReplicaSet, error) {
			return c.writes.patchReplicaSet(ctx, rs.Namespace, rs.Name, types.StrategicMergePatchType, patch)
		},
		KeepGoing: true,
	}.Claim(ctx, all)
}

// recordPause sets the Progressing condition to Unknown/DeploymentPaused when d is
// paused, and to Unknown/DeploymentResumed when it is resumed; a timed-out rollout keeps
// its ProgressDeadlineExceeded.
func (c *Controller) recordPause(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	if !rollout.HasProgressDeadline(d) {
		return d, nil
	}
	cond := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == rollout.ReasonProgressDeadlineExceeded {
		return d, nil
	}
	paused := cond != nil && cond.Reason == rollout.ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, rollout.ReasonDeploymentPaused, "Deployment is paused", c.now()))
	case !d.Spec.Paused && paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, rollout.ReasonDeploymentResumed, "Deployment is resumed", c.now()))
	default:
		return d, nil
	}
	return c.writes.updateStatus(ctx, d)
}

// scaleOnly resizes p's ReplicaSets for its Deployment's replicas without rolling
// anything forward (paused, or a change of replicas), cleans up history when paused,
// and writes status.
func (c *Controller) scaleOnly(ctx context.Context, p *pass) error {
	d := p.d
	// Pods an in-place update took out of service are moved on even now (none is
	// started): one kind of change per pass, so the resize waits for the next one.
	if ip, err := c.advanceInPlace(ctx, p, false); err != nil || ip.acted {
		if err != nil {
			return err
		}
		return c.writeStatus(ctx, d, c.calculateStatus(p))
	}
	if plan, ok := rollout.PartitionedScale(d, p.newRS, p.oldRSs, p.staged.Partition); ok {
		byName := map[string]*appsv1.ReplicaSet{}
		for _, rs := range p.all() {
			if rs != nil {
				byName[rs.Name] = rs
			}
		}
		for _, s := range plan {
			if _, err := c.scaleReplicaSet(ctx, p, byName[s.ReplicaSet], s.To); err != nil {
				return err
			}
		}
	}
	if d.Spec.Paused {
		if err := c.cleanupHistory(ctx, d, p.oldRSs); err != nil {
			return err
		}
	}
	return c.writeStatus(ctx, d, c.calculateStatus(p))
}

// scaleReplicaSet sets rs's replicas to size, with the desired/max-replicas
// annotations of p's Deployment, when either differs; it records a ScalingReplicaSet
// event when the size changed and reports whether it did. p holds the ReplicaSet as
// written from then on, so that the status the pass writes counts its new size rather
// than leave that to a second status write.
func (c *Controller) scaleReplicaSet(ctx context.Context, p *pass, rs *appsv1.ReplicaSet, size int32) (bool, error) {
	updated, wrote, err := c.resizeReplicaSet(ctx, p.d, rs, size, nil)
	if wrote {
		p.replace(updated)
	}
	return wrote && *rs.Spec.Replicas != size, err
}

// resizeReplicaSet is scaleReplicaSet with edit (an in-place hand-over's record, which
// reports whether it changed the copy it is given) made in the same write; it reports
// whether it wrote. A record is written as a patch (see recordPatch).
func (c *Controller) resizeReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, size int32, edit func(*appsv1.ReplicaSet) bool) (*appsv1.ReplicaSet, bool, error) {
	want := rollout.ReplicasAnnotations(d)
	sizeChanged := *rs.Spec.Replicas != size
	changed := sizeChanged
	for k, v := range want {
		if rs.Annotations[k] != v {
			changed = true
		}
	}
	var next *appsv1.ReplicaSet
	if edit != nil {
		next = rs.DeepCopy()
		changed = edit(next) || changed
	}
	if !changed {
		return rs, false, nil
	}
	from := *rs.Spec.Replicas
	if next == nil {
		next = rs.DeepCopy()
	}
	*next.Spec.Replicas = size
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	for k, v := range want {
		next.Annotations[k] = v
	}
	var updated *appsv1.ReplicaSet
	var err error
	if edit == nil {
		updated, err = c.writes.updateReplicaSet(ctx, next)
	} else {
		updated, err = c.writes.patchReplicaSet(ctx, rs.Namespace, rs.Name, types.JSONPatchType, recordPatch(rs, next))
	}
	if err != nil {
		return rs, false, err
	}
	if sizeChanged {
		direction := "up"
		if size < from {
			direction = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", direction, updated.Name, from, size)
	}
	return updated, true, nil
}

// recordPatch is a JSON patch that gives rs next's replicas and annotations (a
// hand-over record, with the Deployment's replicas annotations), provided rs is still
// the object with its uid and generation: its spec unchanged since the cache showed it.
// Not its resourceVersion: while a round is under way the ReplicaSets' status writes
// move it on at every pod that arrives or comes back into service, and a record write
// refused on one was planned again on a fresher cache, up to five times in a row, the
// next round waiting about a second. Records and the replicas annotations are written
// by this controller alone, and a pass runs on a cache that shows its last write (the
// Fence), so the annotations it read are the ones there.
func recordPatch(rs, next *appsv1.ReplicaSet) []byte {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": rs.UID},
		{"op": "test", "path": "/metadata/generation", "value": rs.Generation},
		{"op": "add", "path": "/spec/replicas", "value": *next.Spec.Replicas},
	}
	if len(rs.Annotations) == 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": next.Annotations})
	} else {
		for _, k := range slices.Sorted(maps.Keys(next.Annotations)) {
			if v, ok := rs.Annotations[k]; !ok || v != next.Annotations[k] {
				ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + jsonPointerEscape(k), "value": next.Annotations[k]})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(rs.Annotations)) {
			if _, ok := next.Annotations[k]; !ok {
				ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + jsonPointerEscape(k)})
			}
		}
	}
	patch, _ := json.Marshal(ops)
	return patch
}

// jsonPointerEscape is s as one token of a JSON pointer (RFC 6901): "~" as "~0", "/" as
// "~1".
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
