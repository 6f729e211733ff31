package daemonset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A DaemonSet's `analyze` step (kroll.dev/rollout-steps: "30%, analyze, 100%": with
// 10 eligible nodes, the last 3 by name updated, then the analysis, then the rest) is
// judged as a Deployment's is (controller.AnalyzeStep): the held nodes stay held
// while the checks run; all successful moves the step record on; a failed check is
// kroll.dev/on-failure's action, carried out as the failure policy's for failed pods
// (actOnFailure: Rollback to revs.target's template, or kroll.dev/paused), with
// RolloutFailed reason AnalysisFailed. {{revision}} is the template's
// ControllerRevision name (logs-5d8c7f9b6c), {{pod-template-hash}} its hash, the
// value of its pods' controller-revision-hash label (5d8c7f9b6c). While paused
// (kroll.dev/paused) the analysis waits, as the steps do.

// SetAnalysis lets the controller run analyze steps: checks from configMaps, asked of
// prometheus. Call before Run; without it every analyze step is a bare pause.
func (c *Controller) SetAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier) {
	c.analysis = controller.NewAnalysis(configMaps, prometheus, c.recorder, func() time.Time { return c.now() })
}

// analyzeStep runs ds's analysis when stage holds it at an analyze step, and acts on
// the verdict; acted says it wrote (the sync ends there). It adds the analysis's
// standing to stage's decision. hash is the template's revision hash.
func (c *Controller) analyzeStep(ctx context.Context, ds *appsv1.DaemonSet, revs dsRevisions, hash string, stage *stagePlan) (acted bool, err error) {
	if c.analysis == nil || revs.newest == nil || ds.Annotations[failure.PausedAnnotation] == "true" || ds.DeletionTimestamp != nil {
		return false, nil
	}
	return controller.AnalyzeStep(ctx, c.analysis, ds, controller.AnalysisPass[*appsv1.DaemonSet]{
		Settings: staging.SettingsOf(ds.Annotations), Decision: &stage.decision,
		PodTemplateHash: hash,
		Update: func(ctx context.Context, next *appsv1.DaemonSet) error {
			_, err := c.dsWriter.Update(ctx, next)
			return err
		},
		Fail: func(ctx context.Context, next *appsv1.DaemonSet, why string) (bool, error) {
			now := c.now()
			return controller.DaemonSetFailure.FailAnalysis(ctx, c.dsWriter, c.recorder, next, revs.newest.Revision, revs.target != nil, why,
				func(act failure.Action) (*appsv1.DaemonSet, string, error) { return actOnFailure(next, revs, act, now) }, now)
		},
		Requeue: func(after time.Duration) { c.queue.EnqueueAfter(ds, after) },
	})
}
