package deployment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// syncReplicaSets makes d's pass (see newPass) and brings its new ReplicaSet, if it
// has one, up to date: its revision (raised when a rollback brought it back), d's
// annotations and minReadySeconds, and d's revision annotation. It writes when those
// differ.
func (c *Controller) syncReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, cfg configPass) (*pass, error) {
	p := newPassFor(d, cfg.templateOf(d), rsList, cfg)
	if p.newRS == nil {
		return p, nil
	}
	var err error
	if p.newRS, err = c.syncNewReplicaSet(ctx, d, p.newRS, p.revision); err != nil {
		return p, err
	}
	// Snapshots a pass that created the ReplicaSet did not write (it stopped, or the
	// write was refused) are written now.
	return p, c.writeSnapshots(ctx, d, p.newRS, &p.config)
}

// createNewReplicaSet creates p's new ReplicaSet if it has none yet, at the size the
// strategy allows now (see createReplicaSet). statusFollows tells that the pass ends
// with a status write of its own.
func (c *Controller) createNewReplicaSet(ctx context.Context, p *pass, statusFollows bool) error {
	if p.newRS != nil {
		return nil
	}
	rs, err := c.createReplicaSet(ctx, p, statusFollows)
	if err != nil {
		return err
	}
	p.newRS = rs
	return nil
}

// syncNewReplicaSet gives an existing new ReplicaSet its revision (raising it when a
// rollback brought it back), d's annotations and minReadySeconds, then mirrors its
// revision on d.
func (c *Controller) syncNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision int64) (*appsv1.ReplicaSet, error) {
	// The annotations are all SetNewReplicaSetAnnotations changes: tried on a copy of
	// them first, the cached ReplicaSet is copied only when it is to be written, and
	// otherwise is the pass's new ReplicaSet as it is (the pass writes none in place).
	probe := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: maps.Clone(rs.Annotations)}}
	if history.SetNewReplicaSetAnnotations(d, probe, revision) || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		next := rs.DeepCopy()
		next.Annotations = probe.Annotations
		next.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		return c.writes.updateReplicaSet(ctx, next)
	}
	next := rs
	needsUpdate := setDeploymentRevision(d, next.Annotations[history.RevisionAnnotation])
	if rollout.HasProgressDeadline(d) && rollout.Condition(&d.Status, appsv1.DeploymentProgressing) == nil {
		// Progress is watched, and no rollout was recorded yet (a Deployment made before
		// it had a deadline): start the clock now.
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonFoundNewReplicaSet,
			fmt.Sprintf("Found new replica set %q", next.Name), c.now()))
		needsUpdate = true
	}
	if needsUpdate {
		if err := c.updateStatusOf(ctx, d); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// createReplicaSet creates the ReplicaSet of p's Deployment's current template, named
// "<deployment>-<pod-template-hash>". If that name is taken by a ReplicaSet with another
// template (a hash collision), status.collisionCount is raised, which changes the hash
// on the next try. The Deployment gets the new revision and, under a progress deadline,
// NewReplicaSetCreated: written at once unless statusFollows and the pass's status
// write is sure to be made (observedGeneration moves on), which then carries them.
func (c *Controller) createReplicaSet(ctx context.Context, p *pass, statusFollows bool) (*appsv1.ReplicaSet, error) {
	d, oldRSs, revision := p.d, p.oldRSs, p.revision
	hash := history.TemplateHash(p.template, d.Status.CollisionCount)
	template := *p.template.DeepCopy()
	template.Labels = withLabel(p.template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: template},
	}
	size := rollout.PartitionedNewReplicas(d, append(append([]*appsv1.ReplicaSet{}, oldRSs...), rs), rs, c.seenPods, p.staged.Partition)
	if v := p.verdict; p.judged && (v.Proceeds() || v.Reason == inplace.ReasonBlocked) {
		// No surge: the old pods come over in place (or, blocked, stay where they are).
		size = max(0, rollout.DesiredReplicas(d)-rollout.SpecReplicas(oldRSs))
	}
	rs.Spec.Replicas = &size
	history.SetNewReplicaSetAnnotations(d, rs, revision)
	for k, v := range rollout.ReplicasAnnotations(d) {
		rs.Annotations[k] = v
	}
	p.config.annotate(rs, hash, oldRSs)

	created, err := c.writes.createReplicaSet(ctx, rs)
	alreadyExisted := false
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, getErr := c.rsLister.ReplicaSets(rs.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == d.UID && history.EqualIgnoringHash(p.template, &existing.Spec.Template) {
			created, err, alreadyExisted = existing, nil, true // ours, made by an earlier pass the cache had not shown yet
			break
		}
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if _, uerr := c.writes.updateStatus(ctx, d); uerr == nil {
			klog.FromContext(ctx).V(2).Info("Hash collision; raised collisionCount", "deployment", klog.KObj(d), "collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if rollout.HasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonReplicaSetCreateError, msg, c.now()))
			_, _ = c.writes.updateStatus(ctx, d)
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, reasonReplicaSetCreateError, "%s", msg)
		return nil, err
	}
	if err := c.writeSnapshots(ctx, d, created, &p.config); err != nil {
		return created, err
	}
	if p.config.waiting {
		// Nothing else moves this pass; the next one (configRetry) reports it.
		return created, errConfigWaiting
	}
	if !alreadyExisted && size > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, size)
	}
	needsUpdate := setDeploymentRevision(d, strconv.FormatInt(revision, 10))
	if !alreadyExisted && rollout.HasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), c.now()))
		needsUpdate = true
	}
	if needsUpdate && !(statusFollows && d.Status.ObservedGeneration < d.Generation) {
		if err := c.updateStatusOf(ctx, d); err != nil {
			return created, err
		}
	}
	return created, nil
}

// updateStatusOf writes d's status and revision annotation mid-pass, and gives d the
// resourceVersion the write returned: the pass's status write at its end is of the
// same d, and made with the version read from the cache it would be refused (409
// Conflict) by this very write, and the pass made again.
func (c *Controller) updateStatusOf(ctx context.Context, d *appsv1.Deployment) error {
	written, err := c.writes.updateStatus(ctx, d)
	if err != nil {
		return err
	}
	d.ResourceVersion = written.ResourceVersion
	return nil
}

// errConfigWaiting ends a pass whose new ReplicaSet's snapshots could not be written;
// sync drops it (the retry is scheduled, the problem reported).
var errConfigWaiting = errors.New("configuration snapshots not written")

// reasonReplicaSetCreateError is the Progressing reason when the new ReplicaSet cannot be created.
const reasonReplicaSetCreateError = "ReplicaSetCreateError"

// setDeploymentRevision puts revision on d's annotations; it reports a change.
func setDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations[history.RevisionAnnotation] == revision {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[history.RevisionAnnotation] = revision
	return true
}

func withLabel(in map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	out[key] = value
	return out
}

// cleanupHistory deletes the oldest old ReplicaSets beyond revisionHistoryLimit — only
// those with no pods left, fully observed, and not already being deleted.
func (c *Controller) cleanupHistory(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if excess <= 0 {
		return nil
	}
	history.SortByRevision(alive) // oldest revision first
	for _, rs := range alive[:excess] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.writes.deleteReplicaSet(ctx, rs)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
