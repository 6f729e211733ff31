package deployment

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A staged rollout's `analyze` step is judged as controller.AnalyzeStep says, the
// same way for every kind; here are the Deployment's parts: its writes, and its
// kroll.dev/on-failure action on a failed analysis (failAnalysis). The
// placeholders {{revision}} and {{pod-template-hash}} are the new ReplicaSet's
// pod-template-hash. Without a Prometheus (SetAnalysis not called) every analyze
// step is a bare pause.

// SetAnalysis lets the controller run analyze steps: checks from configMaps, asked of
// prometheus. Call before Run.
func (c *Controller) SetAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier) {
	c.analysis = controller.NewAnalysis(configMaps, prometheus, c.recorder, func() time.Time { return c.now() })
}

// analyzeStep runs the analysis of p's Deployment when decision holds it at an
// analyze step, and acts on the verdict (controller.AnalyzeStep); acted says it
// wrote (the pass ends there). A paused Deployment's analysis waits for its resume.
func (c *Controller) analyzeStep(ctx context.Context, p *pass, settings staging.Settings, decision *staging.Decision) (acted bool, err error) {
	if c.analysis == nil || p.d.Spec.Paused || p.newRS == nil {
		return false, nil
	}
	return controller.AnalyzeStep(ctx, c.analysis, p.d, controller.AnalysisPass[*appsv1.Deployment]{
		Settings: settings, Decision: decision,
		PodTemplateHash: p.newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey],
		Update: func(ctx context.Context, next *appsv1.Deployment) error {
			_, err := c.writes.updateDeployment(ctx, next)
			return err
		},
		Fail: func(ctx context.Context, next *appsv1.Deployment, why string) (bool, error) {
			return c.failAnalysis(ctx, p, next, why)
		},
		Requeue: func(after time.Duration) { c.queue.EnqueueAfter(p.d, after) },
	})
}

// failAnalysis carries out d's on-failure action for a failed analysis, as
// planHeal's for failed pods: Rollback to abortTarget (nothing to go back to: Pause
// instead), or Pause, once per revision. next is d with the analysis state to keep.
// acted is false when there is nothing to do.
func (c *Controller) failAnalysis(ctx context.Context, p *pass, next *appsv1.Deployment, why string) (acted bool, err error) {
	from := strconv.FormatInt(history.Revision(p.newRS), 10)
	switch failure.PolicyOf(p.d.Annotations).Action {
	case failure.Rollback:
		if to := abortTarget(p); to != nil {
			msg := why + "; " + failure.RolledBackOutcome(from, strconv.FormatInt(history.Revision(to), 10))
			return true, c.rollBack(ctx, next, to, from, analysis.ReasonFailed, msg)
		}
		fallthrough
	case failure.Pause:
		if p.d.Annotations[failure.PausedOnFailureAnnotation] == from {
			return false, nil // paused once for this revision, and resumed by its user
		}
		next.Spec.Paused = true
		next.Annotations[failure.PausedOnFailureAnnotation] = from
		return true, c.actAndReport(ctx, next, failure.Report{Action: failure.Pause, Reason: analysis.ReasonFailed, Message: why + "; " + failure.PausedOutcome(from)})
	}
	return false, nil
}
