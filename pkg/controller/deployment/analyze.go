package deployment

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A staged rollout's `analyze` step (kroll.dev/rollout-steps) is judged by the
// workload's kroll.dev/analysis checks (pkg/analysis). staging.Decide holds the
// rollout there as at a bare pause; analyzeStep runs the analysis on each pass (no
// timer of its own: the pass requeues for the next measurement) and acts on its
// verdict:
//
//   - Running: the step holds; the Staged condition says what was measured; the
//     analysis state (kroll.dev/analysis-status) is written after each measurement,
//     alone, in one Update.
//   - Successful: one Update moves the step record on (as `kroll rollout promote`)
//     with the final state; an AnalysisSucceeded event gives the values.
//   - Failed: kroll.dev/on-failure's action, as a failed pod's: Rollback to the
//     revision an abort goes back to, or Pause, with the RolloutFailed condition
//     (reason AnalysisFailed) naming the check, its value and its limit. Without an
//     action the step holds, and says why.
//   - Inconclusive, Error (Prometheus unreachable): the step holds, with an
//     AnalysisHeld event and the Staged condition saying why; `kroll rollout
//     promote` moves it on, `kroll rollout abort` goes back. In Error the checks
//     are asked again at each interval (10s at least), and the first answer
//     resumes the analysis where it stood.
//   - A problem (no ConfigMap, checks that do not parse, a placeholder without a
//     value, a query Prometheus refuses): an InvalidAnalysis event, the Staged
//     condition and kroll.dev/analysis-status saying it, and the step holds as a
//     bare pause: a broken analysis never promotes by itself.
//
// Without a Prometheus (SetAnalysis not called) every analyze step is a bare pause.

// analysisSource is where the controller reads checks and asks Prometheus.
type analysisSource struct {
	configMaps corelisters.ConfigMapLister
	runner     analysis.Runner
}

// SetAnalysis lets the controller run analyze steps: checks from configMaps, asked of
// prometheus. Call before Run.
func (c *Controller) SetAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier) {
	c.analysis = &analysisSource{configMaps: configMaps, runner: analysis.Runner{Prometheus: prometheus, Now: func() time.Time { return c.now() }}}
}

// analysisKey is where c.announced keeps the analysis problem announced for d.
func analysisKey(d *appsv1.Deployment) string { return string(d.UID) + "/analysis" }

// analysisSpec reads d's checks from its kroll.dev/analysis ConfigMap; problem says
// why there are none to run.
func (c *Controller) analysisSpec(d *appsv1.Deployment) (spec analysis.Spec, vars analysis.Vars, problem string) {
	name := d.Annotations[analysis.Annotation]
	if name == "" {
		return spec, vars, fmt.Sprintf("an analyze step, and no %s naming the ConfigMap of its checks", analysis.Annotation)
	}
	cm, err := c.analysis.configMaps.ConfigMaps(d.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return spec, vars, fmt.Sprintf("%s=%s: ConfigMap %s/%s does not exist", analysis.Annotation, name, d.Namespace, name)
	case err != nil:
		return spec, vars, err.Error()
	}
	data, ok := cm.Data[analysis.ConfigMapKey]
	if !ok {
		return spec, vars, fmt.Sprintf("ConfigMap %s/%s has no key %s", d.Namespace, name, analysis.ConfigMapKey)
	}
	spec, problems := analysis.Parse(data, nil)
	if len(problems) > 0 {
		return spec, vars, fmt.Sprintf("ConfigMap %s/%s: %s", d.Namespace, name, problems[0])
	}
	args, err := analysis.ParseArgs(d.Annotations[analysis.ArgsAnnotation])
	if err != nil {
		return spec, vars, err.Error()
	}
	return spec, analysis.Vars{Namespace: d.Namespace, Workload: d.Name, Args: args}, ""
}

// analyzeStep runs the analysis of p's Deployment when decision holds it at an
// analyze step, and acts on the verdict (see above); acted says it wrote (the pass
// ends there). It adds the analysis's standing to decision's message.
func (c *Controller) analyzeStep(ctx context.Context, p *pass, settings staging.Settings, decision *staging.Decision) (acted bool, err error) {
	d, r := p.d, decision.Record
	if c.analysis == nil || decision.Phase != staging.StepPaused || r == nil || r.Done >= len(settings.Steps) ||
		!settings.Steps[r.Done].Analyze || d.Spec.Paused || p.newRS == nil {
		return false, nil
	}
	st, _ := analysis.ParseState(d.Annotations[analysis.StatusAnnotation]) // unreadable: start afresh
	target := analysis.Target{Revision: r.Revision, Step: r.Done}
	next := d.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	spec, vars, problem := c.analysisSpec(d)
	if problem != "" {
		c.announceAnalysis(d, analysis.EventInvalid, problem, problem)
		decision.Message += "; analysis not run: " + problem
		// Recorded once where the views read every analysis.
		state := analysis.Unjudged(st, target, problem, c.now()).Encode()
		if d.Annotations[analysis.StatusAnnotation] == state {
			return false, nil
		}
		next.Annotations[analysis.StatusAnnotation] = state
		_, err = c.writes.updateDeployment(ctx, next)
		return true, err
	}
	vars.Revision = r.Revision
	vars.PodTemplateHash = p.newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	plan := c.analysis.runner.Run(ctx, spec, vars, target, st)
	now := c.now()
	state := plan.State.Encode()
	changed := d.Annotations[analysis.StatusAnnotation] != state
	next.Annotations[analysis.StatusAnnotation] = state
	status := plan.Status
	switch {
	case plan.Problem != "":
		c.announceAnalysis(d, analysis.EventInvalid, plan.Problem, plan.Problem)
		decision.Message += "; analysis not run: " + plan.Problem
	case status.Outcome == analysis.Running:
		c.announced.Delete(analysisKey(d))
		decision.Message += "; analysis running: " + status.Message
		c.queue.EnqueueAfter(d, status.Next.Sub(now)+100*time.Millisecond)
	case status.Outcome == analysis.Successful:
		moved := *r
		moved.Done, moved.Since = r.Done+1, now
		moved.Set(next.Annotations)
		if _, err := c.writes.updateDeployment(ctx, next); err != nil {
			return true, err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, analysis.EventSucceeded, "step %s: %s", r, status.Message)
		return true, nil
	case status.Outcome == analysis.Failed:
		if acted, err := c.failAnalysis(ctx, p, next, status.Message); acted || err != nil {
			return acted, err
		}
		c.announceAnalysis(d, analysis.EventHeld, status.Message, status.Message)
		decision.Message += "; analysis failed, held (no " + failure.OnFailureAnnotation + " action): " + status.Message
	default: // Inconclusive, Error
		c.announceAnalysis(d, analysis.EventHeld, string(status.Outcome)+" "+status.Check, status.Message)
		decision.Message += "; analysis held: " + status.Message
		if status.Outcome == analysis.Error {
			// Asked again at each interval: the first answer resumes the analysis.
			c.queue.EnqueueAfter(d, status.Next.Sub(now)+100*time.Millisecond)
		}
	}
	if !changed {
		return false, nil
	}
	_, err = c.writes.updateDeployment(ctx, next)
	return true, err
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

// announceAnalysis records a Warning event (reason, msg) for an analysis that holds
// its step or cannot run, once per distinct topic (the Staged condition carries the
// message after): a check in Error is announced once, not at each retry whose count
// of errors changes its message.
func (c *Controller) announceAnalysis(d *appsv1.Deployment, reason, topic, msg string) {
	if prev, ok := c.announced.Swap(analysisKey(d), topic); ok && prev == topic {
		return
	}
	c.recorder.Event(d, corev1.EventTypeWarning, reason, msg)
}
