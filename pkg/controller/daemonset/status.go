package daemonset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// writeStatus computes and writes ds's status: per node that should run it, whether it
// has a pod, and whether its oldest pod is ready, available and updated; per node that
// should not, whether it has one anyway (misscheduled). observedGeneration moves only
// when this sync acted on the generation (expectations satisfied).
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, acted bool, verdict *inplace.Verdict, failureConds []failure.Condition, staged *failure.Condition, config controller.SetConfig, takes *controller.Takes) error {
	now := c.now()
	st := statusOf(ds, nodes, fits, byNode, hash, now)
	st.ObservedGeneration = ds.Status.ObservedGeneration
	if acted {
		st.ObservedGeneration = ds.Generation
	}
	st.CollisionCount = ds.Status.CollisionCount
	st.Conditions = controller.WithStaged(failureConditions, failureConditions.Merge(conditions.With(ds.Status.Conditions, verdict, now), failureConds), staged)
	st.Conditions = controller.WithConfigCondition(failureConditions, st.Conditions, config.Problem, config.Reason, now)
	st.Conditions = c.settleBudget(ds, st, takes, now)
	if equality.Semantic.DeepEqual(st, ds.Status) {
		return nil
	}
	next := ds.DeepCopy()
	next.Status = st
	timeline.Stamp(next, hash, st.DesiredNumberScheduled, timeline.Counts{
		Old: st.CurrentNumberScheduled - st.UpdatedNumberScheduled, New: st.UpdatedNumberScheduled,
		Available: st.NumberAvailable, Unavailable: st.NumberUnavailable,
	}, controller.BudgetWaitOf(failureConditions, st.Conditions).HeldBy(), now)
	updated, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		c.fence.Wrote(ds.Namespace+"/"+ds.Name, ds.UID, "daemonsets", updated.ResourceVersion)
	}
	return err
}

// statusOf is ds's pod counts over nodes: those of writeStatus, without generation,
// collisions and conditions.
func statusOf(ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, now time.Time) appsv1.DaemonSetStatus {
	var st appsv1.DaemonSetStatus
	for _, n := range nodes {
		var pods []*corev1.Pod
		for _, p := range byNode[n.Name] {
			if p.DeletionTimestamp == nil || (p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded) {
				pods = append(pods, p)
			}
		}
		if !fits[n.Name].ShouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		p := pods[0]
		if rollout.IsPodReady(p) {
			st.NumberReady++
			if rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if isUpdated(ds, p, hash) && !resizing(ds, p, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st
}
