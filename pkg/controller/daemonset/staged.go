package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A DaemonSet's staged rollout (see pkg/staging): kroll.dev/partition counts nodes, and
// kroll.dev/rollout-steps shares of the eligible nodes (those the DaemonSet should run
// on). The nodes a partition keeps on their old pods are the FIRST partition eligible
// nodes sorted by name (rollout.DaemonSetHeld); the rest update, within maxUnavailable
// and maxSurge as always. With nodes node-00..node-09 and partition 7, node-07, node-08
// and node-09 run the new revision and the seven others keep the old one; lowering the
// partition to 5 updates node-05 and node-06 next. A node that joins gets the current
// template (a DaemonSet never makes pods of an older revision), and so does a held node
// whose old pod is gone. In-place DaemonSets hold the same nodes.

// stagePlan is what a DaemonSet's staging settings do in one sync.
type stagePlan struct {
	// problem is the settings' problem (staging is off); empty when they are valid.
	problem string
	// decision is staging.Decide's answer (Unstaged without settings).
	decision staging.Decision
	// held are the nodes kept on their old pods (none when nothing is held).
	held map[string]bool
	// write is ds with the step record as the decision has it: written alone, before
	// anything else of the decision; nil when the record is as it should be.
	write *appsv1.DaemonSet
}

// planStaging decides ds's staged rollout from what the sync sees: its nodes (sorted
// by name) and where it fits them, its pods by node, the revision of its template
// (newest: nil until the cache has it, when every eligible node is held so that no
// update step runs ahead of the decision) and its other revisions (owned).
func planStaging(ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string,
	newest *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision, now time.Time) stagePlan {
	s := staging.SettingsOf(ds.Annotations)
	plan := stagePlan{problem: s.Problem()}
	var eligible []string
	for _, n := range nodes {
		if fits[n.Name].ShouldRun {
			eligible = append(eligible, n.Name)
		}
	}
	if !s.Staged() {
		plan.decision = staging.Decide(s, recordOf(ds), staging.Progress{}, now)
		plan.write = withRecord(ds, plan.decision)
		return plan
	}
	if newest == nil {
		plan.held = rollout.DaemonSetHeld(eligible, int32(len(eligible)))
		return plan
	}
	p := staging.Progress{Revision: newest.Name, Desired: int32(len(eligible)), Paused: paused(ds)}
	policy := failure.PolicyOf(ds.Annotations)
	running := map[string]bool{} // revision hashes some pod runs
	for _, name := range eligible {
		var updated, old bool
		for _, pod := range byNode[name] {
			if pod.DeletionTimestamp != nil {
				continue
			}
			running[pod.Labels[RevisionLabel]] = true
			if !isUpdated(ds, pod, hash) {
				old = true
				continue
			}
			if !updated {
				updated = true
				p.Updated++
				if rollout.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now) {
					p.UpdatedAvailable++
				}
			}
			if failure.PodFailure(pod, policy, now) != "" {
				p.Failed++
			}
		}
		if old {
			p.Old++
		}
	}
	// Back to a revision that ran before (its number raised by the rollback): never
	// staged. Its record tells (history.RevisionBroughtBack); without one, it was
	// created before another revision whose pods still run.
	var others []*appsv1.ControllerRevision
	for _, r := range owned {
		if r.Name != newest.Name && running[r.Labels[RevisionLabel]] {
			others = append(others, r)
		}
	}
	p.Rollback = history.RevisionBroughtBack(newest, others)
	plan.decision = staging.Decide(s, recordOf(ds), p, now)
	plan.write = withRecord(ds, plan.decision)
	plan.held = rollout.DaemonSetHeld(eligible, plan.decision.Partition)
	return plan
}

// recordOf is ds's step record; nil without one.
func recordOf(ds *appsv1.DaemonSet) *staging.Record {
	if r, ok := staging.RecordOf(ds.Annotations); ok {
		return &r
	}
	if _, ok := ds.Annotations[staging.StepAnnotation]; ok {
		return &staging.Record{} // unreadable: rewritten (or removed)
	}
	return nil
}

// withRecord is ds carrying d's step record (a copy), or nil when d writes none.
func withRecord(ds *appsv1.DaemonSet, d staging.Decision) *appsv1.DaemonSet {
	if !d.Write {
		return nil
	}
	next := ds.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	if d.Record == nil {
		staging.Clear(next.Annotations)
	} else {
		d.Record.Set(next.Annotations)
	}
	return next
}

// stagedNews is the Staged condition and events of plan, against ds's status.
func stagedNews(ds *appsv1.DaemonSet, plan stagePlan, now time.Time) controller.StagedNews {
	return controller.PlanStaged(plan.problem, plan.decision, controller.StagedOf(failureConditions, ds.Status.Conditions), now)
}
