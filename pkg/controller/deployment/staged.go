package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
)

// A staged rollout (kroll.dev/partition, kroll.dev/rollout-steps) is decided by
// staging.Decide from what the caches show; this file feeds it and carries its answer
// out. The step record is written alone, in one Update of the Deployment, before the
// pass does anything else of the decision: a controller restarted at any moment finds
// the step it recorded and neither skips nor repeats one. The partition then bounds
// the rolling update (rollout.PartitionedNewReplicas, PartitionedScaleDown,
// PartitionedScale) and the in-place hand-over.

// reasonRecreateNotStaged is the Warning event of a Recreate Deployment with staging
// annotations: Recreate replaces every pod at once, there is nothing to hold.
const reasonRecreateNotStaged = "RecreateNotStaged"

// reasonInvalidStaging is the Warning event of staging annotations that do not parse.
const reasonInvalidStaging = "InvalidStaging"

// reasonPartitionReached is the Progressing condition's reason while a staged rollout
// is held at its partition or a step's pause.
const reasonPartitionReached = "PartitionReached"

// stagingSettings are d's staging settings; a Recreate Deployment has none.
func stagingSettings(d *appsv1.Deployment) staging.Settings {
	s := staging.SettingsOf(d.Annotations)
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return staging.Settings{Problems: s.Problems}
	}
	return s
}

// stagingProgress is what staging.Decide sees of p (progress.Deployment): the new
// ReplicaSet's revision and counts, its failed pods, and the old pods left.
func (c *Controller) stagingProgress(p *pass, now time.Time) staging.Progress {
	var pods []*corev1.Pod
	if p.newRS != nil {
		pods = controller.ActivePods(c.podIndexer, string(p.newRS.UID))
	}
	return progress.Deployment(p.d, p.newRS, p.oldRSs, pods, now)
}

// stage decides p's staged rollout and keeps it in p; acted says it wrote the step
// record (the pass ends there). It announces invalid settings and a Recreate
// Deployment's, and looks again when a timed pause ends.
func (c *Controller) stage(ctx context.Context, p *pass) (acted bool, err error) {
	d, now := p.d, c.now()
	s := staging.SettingsOf(d.Annotations)
	c.announceStagingProblem(d, s)
	settings := stagingSettings(d)
	var recorded *staging.Record
	if r, ok := staging.RecordOf(d.Annotations); ok {
		recorded = &r
	}
	if !settings.Staged() && recorded == nil {
		return false, nil // nothing to decide: no pod needs looking at
	}
	decision := staging.Decide(settings, recorded, c.stagingProgress(p, now), now)
	if decision.Write {
		next := d.DeepCopy()
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		if decision.Record == nil {
			staging.Clear(next.Annotations)
		} else {
			decision.Record.Set(next.Annotations)
		}
		_, err := c.writes.updateDeployment(ctx, next)
		return true, err
	}
	if acted, err := c.analyzeStep(ctx, p, settings, &decision); acted || err != nil {
		return acted, err
	}
	p.staged = decision
	if !decision.Until.IsZero() {
		c.queue.EnqueueAfter(d, decision.Until.Sub(now)+100*time.Millisecond)
	}
	return false, nil
}

// announceStagingProblem records a Warning event for staging annotations that do not
// parse, or that a Recreate Deployment cannot follow: once per distinct message, as
// announcePolicyProblem does (the Staged condition shows the message once written).
func (c *Controller) announceStagingProblem(d *appsv1.Deployment, s staging.Settings) {
	problem, reason := stagingProblem(d, s)
	c.announce(d, stagingProblemKey(d), staging.ConditionType, problem, reason)
}

// announce records a Warning event (reason) for problem, a Deployment's problem kept
// under key in c.announced, once per distinct message until condition t shows it; an
// empty problem forgets it.
func (c *Controller) announce(d *appsv1.Deployment, key string, t appsv1.DeploymentConditionType, problem, reason string) {
	if problem == "" {
		c.announced.Delete(key)
		return
	}
	if cur := rollout.Condition(&d.Status, t); cur != nil && cur.Message == problem {
		c.announced.Delete(key)
		return
	}
	if prev, ok := c.announced.Swap(key, problem); ok && prev == problem {
		return
	}
	c.recorder.Event(d, corev1.EventTypeWarning, reason, problem)
}

// stagingProblemKey is where c.announced keeps the staging problem announced for d
// (its failure-policy problem is under its UID).
func stagingProblemKey(d *appsv1.Deployment) string { return string(d.UID) + "/staging" }

// stagingProblem is the one line to report about d's staging annotations and the
// event reason for it; empty when there is none.
func stagingProblem(d *appsv1.Deployment, s staging.Settings) (problem, reason string) {
	switch {
	case s.Problem() != "":
		return s.Problem(), reasonInvalidStaging
	case s.Staged() && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return fmt.Sprintf("Recreate cannot be staged: %s and %s are ignored; use the RollingUpdate strategy", staging.PartitionAnnotation, staging.StepsAnnotation), reasonRecreateNotStaged
	}
	return "", ""
}

// held tells a staged rollout held where it is: at its partition or a step's pause.
func held(d staging.Decision) bool {
	switch d.Phase {
	case staging.PartitionReached, staging.StepPaused, staging.StepWaiting:
		return true
	}
	return false
}

// setStagedCondition brings the Staged condition of status up to date: False with
// InvalidAnnotation while the annotations do not parse (or Recreate cannot follow
// them), True with the phase and the decision's message while staged, gone otherwise.
func setStagedCondition(status *appsv1.DeploymentStatus, p *pass, now time.Time) {
	var want *appsv1.DeploymentCondition
	if problem, _ := stagingProblem(p.d, staging.SettingsOf(p.d.Annotations)); problem != "" {
		c := newCondition(staging.ConditionType, corev1.ConditionFalse, failure.ReasonInvalidAnnotation, problem, now)
		want = &c
	} else if p.staged.Phase != staging.Unstaged {
		c := newCondition(staging.ConditionType, corev1.ConditionTrue, string(p.staged.Phase), p.staged.Message, now)
		want = &c
	}
	cur := rollout.Condition(status, staging.ConditionType)
	switch {
	case want == nil:
		removeCondition(status, staging.ConditionType)
	case cur == nil || cur.Status != want.Status || cur.Reason != want.Reason:
		setCondition(status, *want)
	case cur.Message != want.Message:
		want.LastTransitionTime = cur.LastTransitionTime
		removeCondition(status, staging.ConditionType)
		setCondition(status, *want)
	}
}

// stepOf is the step and phase a Staged condition names: its reason and its
// message's "step 1/5" (or "partition 10"), without the counts.
func stepOf(reason, message string) string {
	head, _, _ := strings.Cut(message, ":")
	if !strings.HasPrefix(head, "step ") {
		head, _, _ = strings.Cut(message, " reached")
		head, _, _ = strings.Cut(head, ":")
	}
	return reason + " " + head
}

// announceStep records the RolloutStep event when the status about to be written moves
// the Staged condition to another step or phase than the Deployment shows.
func (c *Controller) announceStep(d *appsv1.Deployment, status *appsv1.DeploymentStatus) {
	next := rollout.Condition(status, staging.ConditionType)
	if next == nil || next.Status != corev1.ConditionTrue {
		return
	}
	if cur := rollout.Condition(&d.Status, staging.ConditionType); cur != nil && stepOf(cur.Reason, cur.Message) == stepOf(next.Reason, next.Message) {
		return
	}
	c.recorder.Event(d, corev1.EventTypeNormal, staging.EventReason, next.Message)
}

// partitionReachedMessage is the Progressing condition's message while held:
// `ReplicaSet "web-7d9f" reached its partition: 2 of 20 pods updated, 18 kept on older revisions.`
func partitionReachedMessage(p *pass, status *appsv1.DeploymentStatus) string {
	subject := fmt.Sprintf("Deployment %q", p.d.Name)
	if p.newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", p.newRS.Name)
	}
	return fmt.Sprintf("%s reached its partition: %d of %d pods updated, %d kept on older revisions.",
		subject, status.UpdatedReplicas, rollout.DesiredReplicas(p.d), max(0, status.Replicas-status.UpdatedReplicas))
}
