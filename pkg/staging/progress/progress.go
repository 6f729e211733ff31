// Package progress reads staging.Progress — what a staged rollout has reached — from a
// workload and what it owns, one function per kind. The controllers feed staging.Decide
// with it, and `kroll rollout status` and `kroll rollout plan` call the same functions
// on what they list or model, so that the three never count a step differently.
//
// Each function counts what its controller acts on, as upstream's controllers count
// it:
//
//   - A Deployment's pods are its ReplicaSets' counts, not its pods: the rolling
//     update scales ReplicaSets by spec.replicas and reads their status.replicas and
//     status.availableReplicas (upstream's deployment/util counts the same way), and
//     the Deployment's status.updatedReplicas is the new ReplicaSet's status.replicas.
//     An old ReplicaSet counts the larger of spec and status: a scale-down decided but
//     not yet carried out, or pods not yet gone, both still hold old pods.
//   - A StatefulSet's are its pods, by revision label: created (a phase), not
//     terminating; an updated pod is available when Running, Ready and available for
//     minReadySeconds (upstream's isRunningAndReady and availability).
//   - A DaemonSet's are nodes: the eligible ones (those the template should run on,
//     as the controller's placement decides them); a node is updated when it runs a
//     pod of the template, old when it runs any other. status.desiredNumberScheduled
//     is the same count written at the controller's last status update, a sync behind.
package progress

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// Deployment is the progress of d's rollout to newRS (nil while it does not exist:
// the revision is then the pod-template-hash it will get) over oldRSs; newPods are
// newRS's pods (only active ones count, for Failed under d's failure policy). A newRS
// brought back from an older revision is a rollback (history.BroughtBack).
//
// With 10 replicas, the new ReplicaSet at 4 (3 available) and the old one at
// spec 7, status 8: Updated 4, UpdatedAvailable 3, Old 8.
func Deployment(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, newPods []*corev1.Pod, now time.Time) staging.Progress {
	p := staging.Progress{Desired: rollout.DesiredReplicas(d), Paused: d.Spec.Paused}
	for _, rs := range oldRSs {
		if rs != nil {
			p.Old += max(rs.Status.Replicas, rollout.Replicas(rs.Spec.Replicas))
		}
	}
	if newRS == nil {
		p.Revision = history.TemplateHash(&d.Spec.Template, d.Status.CollisionCount)
		return p
	}
	p.Revision = newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if p.Revision == "" {
		p.Revision = newRS.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	}
	p.Rollback = history.BroughtBack(newRS, oldRSs)
	p.Updated = newRS.Status.Replicas
	p.UpdatedAvailable = newRS.Status.AvailableReplicas
	policy := failure.PolicyOf(d.Annotations)
	for _, pod := range newPods {
		if rollout.IsPodActive(pod) && failure.PodFailure(pod, policy, now) != "" {
			p.Failed++
		}
	}
	return p
}

// StatefulSet is the progress of set's rollout from the current revision to the
// update revision (both must be given; the same one when nothing rolls out). A pod
// counts when created and not terminating: of the update revision (its
// controller-revision-hash label) it is updated, of any other old. An update revision
// brought back (history.RevisionBroughtBack), or the current one itself, is a rollback. set is
// paused while kroll's failure policy holds it (kroll.dev/partition-before-pause).
//
// With 5 replicas, web-3 and web-4 updated (web-4 not ready yet) and web-0..2 on the
// current revision: Updated 2, UpdatedAvailable 1, Old 3.
func StatefulSet(set *appsv1.StatefulSet, pods []*corev1.Pod, current, update *appsv1.ControllerRevision, now time.Time) staging.Progress {
	_, paused := set.Annotations[failure.PartitionBeforePauseAnnotation]
	p := staging.Progress{
		Revision: update.Name,
		Rollback: update.Name == current.Name || history.RevisionBroughtBack(update, []*appsv1.ControllerRevision{current}),
		Desired:  rollout.Replicas(set.Spec.Replicas),
		Paused:   paused,
	}
	policy := failure.PolicyOf(set.Annotations)
	for _, pod := range pods {
		if pod.Status.Phase == "" || pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Labels[appsv1.StatefulSetRevisionLabel] != update.Name {
			p.Old++
			continue
		}
		p.Updated++
		if pod.Status.Phase == corev1.PodRunning && rollout.IsPodReady(pod) && rollout.IsPodAvailable(pod, set.Spec.MinReadySeconds, now) {
			p.UpdatedAvailable++
		}
		if failure.PodFailure(pod, policy, now) != "" {
			p.Failed++
		}
	}
	return p
}

// DaemonSet is the progress of ds's rollout to newest (its template's revision, whose
// hash is hash) over the eligible nodes (those ds should run on, sorted by name) and
// the pods on each node (byNode, as placement.TargetNode places them). A node running
// a pod of the template (DaemonPodUpdated) is updated, and available when that pod
// is; one running any other pod is old (a node in a surge has both). owned are ds's
// revisions: newest brought back among those whose pods still run is a rollback. ds is
// paused while kroll.dev/paused is "true".
//
// With eligible nodes a, b, c: a running the new pod (available), b the old one and
// c both (a surge): Desired 3, Updated 2, UpdatedAvailable 1 or 2, Old 2.
func DaemonSet(ds *appsv1.DaemonSet, eligible []string, byNode map[string][]*corev1.Pod, hash string,
	newest *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision, now time.Time) staging.Progress {
	p := staging.Progress{Revision: newest.Name, Desired: int32(len(eligible)), Paused: ds.Annotations[failure.PausedAnnotation] == "true"}
	policy := failure.PolicyOf(ds.Annotations)
	running := map[string]bool{} // revision hashes some pod runs
	for _, name := range eligible {
		var updated, old bool
		for _, pod := range byNode[name] {
			if pod.DeletionTimestamp != nil {
				continue
			}
			running[pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
			if !DaemonPodUpdated(ds, pod, hash) {
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
	// Back to a revision that ran before (renumbered by the rollback): never staged.
	// Its record tells (history.RevisionBroughtBack); without one, it was created
	// before another revision whose pods still run.
	var others []*appsv1.ControllerRevision
	for _, r := range owned {
		if r.Name != newest.Name && running[r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			others = append(others, r)
		}
	}
	p.Rollback = history.RevisionBroughtBack(newest, others)
	return p
}

// DaemonPodUpdated tells a pod of ds's template: its controller-revision-hash label is
// hash, or (a pod made before revisions had hashes) its pod-template-generation label
// is ds's deprecated.daemonset.template.generation, as upstream's controller tells it.
// With configuration rollout (kroll.dev/config-rollout) the hash alone tells: an edit
// of a ConfigMap makes a new revision without a new template generation, and every
// old pod would otherwise count as updated.
func DaemonPodUpdated(ds *appsv1.DaemonSet, pod *corev1.Pod, hash string) bool {
	if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
		return true
	}
	if on, _ := configrollout.Enabled(ds.Annotations); on {
		return false
	}
	gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	return ok && pod.Labels[daemonSetTemplateGenerationLabel] == gen
}

// daemonSetTemplateGenerationLabel is the label of a DaemonSet pod's template
// generation (upstream's extensions.DaemonSetTemplateGenerationKey).
const daemonSetTemplateGenerationLabel = "pod-template-generation"
