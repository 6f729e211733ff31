package statefulset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A StatefulSet's staged rollout (see pkg/staging): kroll.dev/rollout-steps drive
// spec.updateStrategy.rollingUpdate.partition, which the set already has. Each step's
// partition (the ordinals kept on the current revision: with 5 replicas and "40%,
// pause, 100%", 3 until web-3 and web-4 are updated and available) is written in the
// same Update as the step record, before the rolling update acts on it; once the steps
// are done — or the rollout turns out to be a rollback, or the steps are removed
// mid-rollout — the partition written is 0. Without steps the partition field is the
// user's and is left alone; kroll.dev/partition on a StatefulSet is reported (use the
// field) and ignored. While the set is paused on failure
// (kroll.dev/partition-before-pause) the steps do not advance and the partition is
// the pause's.

// setStagePlan is what a StatefulSet's staging settings do in one sync.
type setStagePlan struct {
	// problem is the settings' problem (staging is off); empty when they are valid.
	problem string
	// decision is staging.Decide's answer (Unstaged without settings).
	decision staging.Decision
	// write is set with the step record and partition as the decision has them: written
	// in one Update before the rolling update; nil when both are as they should be.
	write *appsv1.StatefulSet
}

// planStaging decides set's staged rollout from its pods and revisions.
func planStaging(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, now time.Time) setStagePlan {
	s := staging.StatefulSetSettingsOf(set.Annotations)
	plan := setStagePlan{problem: s.Problem()}
	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		s = staging.Settings{} // only a RollingUpdate has a partition to drive
	}
	var recorded *staging.Record
	if r, ok := staging.RecordOf(set.Annotations); ok {
		recorded = &r
	} else if _, ok := set.Annotations[staging.StepAnnotation]; ok {
		recorded = &staging.Record{} // unreadable: rewritten (or removed)
	}
	_, paused := set.Annotations[failure.PartitionBeforePauseAnnotation]
	p := staging.Progress{
		Revision: revs.update.Name,
		Rollback: revs.update.Name == revs.current.Name || history.RevisionBroughtBack(revs.update, []*appsv1.ControllerRevision{revs.current}),
		Desired:  int32(replicasOf(set)),
		Paused:   paused,
	}
	policy := failure.PolicyOf(set.Annotations)
	for _, pod := range pods {
		if !isCreated(pod) || isTerminating(pod) {
			continue
		}
		if pod.Labels[RevisionLabel] != revs.update.Name {
			p.Old++
			continue
		}
		p.Updated++
		if isRunningAndReady(pod) && rollout.IsPodAvailable(pod, set.Spec.MinReadySeconds, now) {
			p.UpdatedAvailable++
		}
		if failure.PodFailure(pod, policy, now) != "" {
			p.Failed++
		}
	}
	d := staging.Decide(s, recorded, p, now)
	plan.decision = d
	next := set.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	changed := false
	if d.Write {
		if d.Record == nil {
			staging.Clear(next.Annotations)
		} else {
			d.Record.Set(next.Annotations)
		}
		changed = true
	}
	// The steps own the partition while they run, and hand it back at 0.
	rolling := set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType
	if owned := d.Phase != staging.Unstaged || (d.Write && d.Record == nil); owned && rolling && !paused {
		if partitionOf(set) != d.Partition {
			if next.Spec.UpdateStrategy.RollingUpdate == nil {
				next.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
			}
			partition := d.Partition
			next.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
			changed = true
		}
	}
	if changed {
		plan.write = next
	}
	return plan
}

// stagedNews is the Staged condition and events of plan, against set's status.
func stagedNews(set *appsv1.StatefulSet, plan setStagePlan, now time.Time) controller.StagedNews {
	return controller.PlanStaged(plan.problem, plan.decision, controller.StagedOf(failureConditions, set.Status.Conditions), now)
}
