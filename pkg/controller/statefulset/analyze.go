package statefulset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A StatefulSet's `analyze` step (kroll.dev/rollout-steps: "20%, analyze, 100%",
// with 5 replicas partition 4, then the analysis, then 0) is judged as a
// Deployment's is (controller.AnalyzeStep): the step holds the partition where the
// step before left it while the checks run; all
// successful moves the step record on (the next step's partition is written by the
// pass after); a failed check is kroll.dev/on-failure's action, carried out as the
// failure policy's for failed pods (actOnFailure: Rollback to the current revision's
// template, or Pause at pausePartition), with RolloutFailed reason AnalysisFailed.
// The placeholders {{revision}} and {{pod-template-hash}} are both the update
// revision's name, the value of its pods' controller-revision-hash label
// (web-5d8c7f9b6c). While paused on failure (kroll.dev/partition-before-pause) the
// analysis waits, as the steps do.

// SetAnalysis lets the controller run analyze steps: checks from configMaps, asked of
// prometheus. Call before Run; without it every analyze step is a bare pause.
func (c *Controller) SetAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier) {
	c.analysis = controller.NewAnalysis(configMaps, prometheus, c.recorder, func() time.Time { return c.now() })
}

// analyzeStep runs set's analysis when stage holds it at an analyze step, and acts
// on the verdict; acted says it wrote (the sync ends there). It adds the analysis's
// standing to stage's decision.
func (c *Controller) analyzeStep(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, stage *setStagePlan) (acted bool, err error) {
	if _, paused := set.Annotations[failure.PartitionBeforePauseAnnotation]; c.analysis == nil || paused || set.DeletionTimestamp != nil {
		return false, nil
	}
	return controller.AnalyzeStep(ctx, c.analysis, set, controller.AnalysisPass[*appsv1.StatefulSet]{
		Settings: staging.StatefulSetSettingsOf(set.Annotations), Decision: &stage.decision,
		PodTemplateHash: revs.update.Name,
		Update: func(ctx context.Context, next *appsv1.StatefulSet) error {
			_, err := c.setWriter.Update(ctx, next)
			return err
		},
		Fail: func(ctx context.Context, next *appsv1.StatefulSet, why string) (bool, error) {
			return c.failAnalysis(ctx, next, pods, revs, why)
		},
		Requeue: func(after time.Duration) { c.queue.EnqueueAfter(set, after) },
	})
}

// failAnalysis carries out next's on-failure action for a failed analysis (why), as
// carryOut does for failed pods (controller.SetFailure.FailAnalysis).
func (c *Controller) failAnalysis(ctx context.Context, next *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, why string) (acted bool, err error) {
	now := c.now()
	return controller.StatefulSetFailure.FailAnalysis(ctx, c.setWriter, c.recorder, next, revs.update.Revision, rollbackTarget(next, revs) != nil, why,
		func(act failure.Action) (*appsv1.StatefulSet, string, error) {
			return actOnFailure(next, pods, revs, act, now)
		}, now)
}
