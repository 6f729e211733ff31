package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A staged rollout's `analyze` step (kroll.dev/rollout-steps) is judged by the
// workload's kroll.dev/analysis checks (pkg/analysis), the same way for a
// Deployment, a StatefulSet and a DaemonSet. staging.Decide holds the rollout there
// as at a bare pause; AnalyzeStep runs the analysis on each pass (no timer of its
// own: the pass requeues for the next measurement) and acts on its verdict:
//
//   - Running: the step holds; the Staged condition says what was measured; the
//     analysis state (kroll.dev/analysis-status) is written after each measurement,
//     alone, in one Update.
//   - Successful: one Update moves the step record on (as `kroll rollout promote`)
//     with the final state; an AnalysisSucceeded event gives the values.
//   - Failed: kroll.dev/on-failure's action, as a failed pod's (the kind's Fail):
//     Rollback to the revision an abort goes back to, or Pause, with the
//     RolloutFailed condition (reason AnalysisFailed) naming the check, its value
//     and its limit. Without an action the step holds, and says why.
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
// Without a Prometheus (no Analysis: the controller's SetAnalysis not called) every
// analyze step is a bare pause.
//
// The placeholders {{revision}} and {{pod-template-hash}} are the revision rolled
// out: a Deployment's new ReplicaSet's pod-template-hash for both; a StatefulSet's
// update ControllerRevision name for both, which is the value of its new pods'
// controller-revision-hash label (web-5d8c7f9b6c); a DaemonSet's ControllerRevision
// name (logs-5d8c7f9b6c) and the hash its pods' label carries (5d8c7f9b6c).

// Analysis is where a controller reads analyze steps' checks and asks Prometheus,
// and what it announced of each workload's analysis.
type Analysis struct {
	configMaps corelisters.ConfigMapLister
	runner     analysis.Runner
	recorder   record.EventRecorder
	// announced is the topic of the Warning event last sent per workload UID (see
	// announce).
	announced sync.Map
}

// NewAnalysis is the analysis of a controller whose events go to recorder: checks
// from configMaps, asked of prometheus, at the times now gives.
func NewAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier, recorder record.EventRecorder, now func() time.Time) *Analysis {
	return &Analysis{configMaps: configMaps, runner: analysis.Runner{Prometheus: prometheus, Now: now}, recorder: recorder}
}

// Forget drops what was announced of uid: the workload is gone. Nil-safe.
func (a *Analysis) Forget(uid types.UID) {
	if a != nil {
		a.announced.Delete(uid)
	}
}

// Analyzed is a workload with analyze steps: a Deployment, a StatefulSet or a DaemonSet.
type Analyzed[T any] interface {
	metav1.Object
	runtime.Object
	DeepCopy() T
}

// AnalysisPass is one pass of a workload's controller at its staged rollout, and
// the kind's ways to act on what its analysis says.
type AnalysisPass[T Analyzed[T]] struct {
	// Settings and Decision are the staged rollout's; Decision's message gets the
	// analysis's standing.
	Settings staging.Settings
	Decision *staging.Decision
	// PodTemplateHash fills {{pod-template-hash}} (see above).
	PodTemplateHash string
	// Update writes next: the workload with the analysis state, and the step moved on
	// when it succeeded.
	Update func(ctx context.Context, next T) error
	// Fail carries out kroll.dev/on-failure's action for a failed analysis (why), on
	// next, the workload with the analysis state to keep; acted is false when there
	// is nothing to do (no action, or paused once already for this revision).
	Fail func(ctx context.Context, next T, why string) (acted bool, err error)
	// Requeue asks for another pass after a delay.
	Requeue func(after time.Duration)
}

// AnalyzeStep runs obj's analysis when p's decision holds it at an analyze step,
// and acts on the verdict (see above); acted says it wrote (the pass ends there).
// The caller leaves out a workload whose rollout is paused, and passes a nil a
// without a Prometheus.
func AnalyzeStep[T Analyzed[T]](ctx context.Context, a *Analysis, obj T, p AnalysisPass[T]) (acted bool, err error) {
	decision := p.Decision
	r := decision.Record
	if a == nil || decision.Phase != staging.StepPaused || r == nil || r.Done >= len(p.Settings.Steps) || !p.Settings.Steps[r.Done].Analyze {
		return false, nil
	}
	annotations := obj.GetAnnotations()
	st, _ := analysis.ParseState(annotations[analysis.StatusAnnotation]) // unreadable: start afresh
	target := analysis.Target{Revision: r.Revision, Step: r.Done}
	next := obj.DeepCopy()
	nextAnnotations := next.GetAnnotations()
	if nextAnnotations == nil {
		nextAnnotations = map[string]string{}
	}
	spec, vars, problem := a.spec(obj)
	if problem != "" {
		a.announce(obj, analysis.EventInvalid, problem, problem)
		decision.Message += "; analysis not run: " + problem
		// Recorded once where the views read every analysis.
		state := analysis.Unjudged(st, target, problem, a.runner.Now()).Encode()
		if annotations[analysis.StatusAnnotation] == state {
			return false, nil
		}
		nextAnnotations[analysis.StatusAnnotation] = state
		next.SetAnnotations(nextAnnotations)
		return true, p.Update(ctx, next)
	}
	vars.Revision, vars.PodTemplateHash = r.Revision, p.PodTemplateHash
	plan := a.runner.Run(ctx, spec, vars, target, st)
	now := a.runner.Now()
	state := plan.State.Encode()
	changed := annotations[analysis.StatusAnnotation] != state
	nextAnnotations[analysis.StatusAnnotation] = state
	next.SetAnnotations(nextAnnotations)
	status := plan.Status
	switch {
	case plan.Problem != "":
		a.announce(obj, analysis.EventInvalid, plan.Problem, plan.Problem)
		decision.Message += "; analysis not run: " + plan.Problem
	case status.Outcome == analysis.Running:
		a.announced.Delete(obj.GetUID())
		decision.Message += "; analysis running: " + status.Message
		p.Requeue(status.Next.Sub(now) + 100*time.Millisecond)
	case status.Outcome == analysis.Successful:
		moved := *r
		moved.Done, moved.Since = r.Done+1, now
		moved.Set(nextAnnotations)
		if err := p.Update(ctx, next); err != nil {
			return true, err
		}
		a.recorder.Eventf(obj, corev1.EventTypeNormal, analysis.EventSucceeded, "step %s: %s", r, status.Message)
		return true, nil
	case status.Outcome == analysis.Failed:
		if acted, err := p.Fail(ctx, next, status.Message); acted || err != nil {
			return acted, err
		}
		a.announce(obj, analysis.EventHeld, status.Message, status.Message)
		decision.Message += "; analysis failed, held (no " + failure.OnFailureAnnotation + " action): " + status.Message
	default: // Inconclusive, Error
		a.announce(obj, analysis.EventHeld, string(status.Outcome)+" "+status.Check, status.Message)
		decision.Message += "; analysis held: " + status.Message
		if status.Outcome == analysis.Error {
			// Asked again at each interval: the first answer resumes the analysis.
			p.Requeue(status.Next.Sub(now) + 100*time.Millisecond)
		}
	}
	if !changed {
		return false, nil
	}
	return true, p.Update(ctx, next)
}

// spec reads obj's checks from its kroll.dev/analysis ConfigMap; problem says why
// there are none to run.
func (a *Analysis) spec(obj metav1.Object) (spec analysis.Spec, vars analysis.Vars, problem string) {
	ns, annotations := obj.GetNamespace(), obj.GetAnnotations()
	name := annotations[analysis.Annotation]
	if name == "" {
		return spec, vars, fmt.Sprintf("an analyze step, and no %s naming the ConfigMap of its checks", analysis.Annotation)
	}
	cm, err := a.configMaps.ConfigMaps(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return spec, vars, fmt.Sprintf("%s=%s: ConfigMap %s/%s does not exist", analysis.Annotation, name, ns, name)
	case err != nil:
		return spec, vars, err.Error()
	}
	data, ok := cm.Data[analysis.ConfigMapKey]
	if !ok {
		return spec, vars, fmt.Sprintf("ConfigMap %s/%s has no key %s", ns, name, analysis.ConfigMapKey)
	}
	spec, problems := analysis.Parse(data, nil)
	if len(problems) > 0 {
		return spec, vars, fmt.Sprintf("ConfigMap %s/%s: %s", ns, name, problems[0])
	}
	args, err := analysis.ParseArgs(annotations[analysis.ArgsAnnotation])
	if err != nil {
		return spec, vars, err.Error()
	}
	return spec, analysis.Vars{Namespace: ns, Workload: obj.GetName(), Args: args}, ""
}

// announce records a Warning event (reason, msg) for an analysis that holds its
// step or cannot run, once per distinct topic (the Staged condition carries the
// message after): a check in Error is announced once, not at each retry whose count
// of errors changes its message.
func (a *Analysis) announce(obj interface {
	metav1.Object
	runtime.Object
}, reason, topic, msg string) {
	if prev, ok := a.announced.Swap(obj.GetUID(), topic); ok && prev == topic {
		return
	}
	a.recorder.Event(obj, corev1.EventTypeWarning, reason, msg)
}

// FailAnalysis carries out next's kroll.dev/on-failure action for its failed
// analysis (why), as the kind's failure policy does for failed pods: act makes the
// set as the action leaves it (actOnFailure), then one Update carries it with the
// report (RolloutFailed, reason AnalysisFailed: "<why>; rolled back from revision 2
// to 1"), as Act does. next is the set with the analysis state to keep; bad the
// number of the revision analysed; back tells there is a revision to roll back to
// (without one a Rollback pauses instead, as the failure policy does). acted is
// false when there is nothing to do: no action, or Pause and paused once already
// for this revision (resumed by its user).
func (k SetFailure[T, C]) FailAnalysis(ctx context.Context, w SetWriter[T], rec record.EventRecorder, next T, bad int64, back bool, why string,
	act func(failure.Action) (T, string, error), now time.Time) (acted bool, err error) {
	a := failure.PolicyOf(next.GetAnnotations()).Action
	if a == failure.Rollback && !back {
		a = failure.Pause
	}
	switch {
	case a != failure.Rollback && a != failure.Pause:
		return false, nil
	case a == failure.Pause && next.GetAnnotations()[failure.PausedOnFailureAnnotation] == strconv.FormatInt(bad, 10):
		return false, nil
	}
	acting, outcome, err := act(a)
	if err != nil {
		return true, err
	}
	r := failure.Report{Action: a, Reason: analysis.ReasonFailed, Message: why + "; " + outcome}
	return true, k.Act(ctx, w, rec, acting, r, k.ConditionsOf(next), now)
}
