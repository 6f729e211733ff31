package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// kubectlRollbacker is kubectl's own, kept for everything but a Deployment that kroll
// paused on failure.
var kubectlRollbacker = polymorphichelpers.RollbackerFn

// withKrollUndo makes kubectl's `rollout undo`, which takes its rollbacker from
// polymorphichelpers when it runs, roll back a Deployment that kroll.dev/on-failure:
// Pause paused. kubectl refuses every paused Deployment ("you cannot rollback a paused
// deployment; resume it first"), in its client: no controller can change that. kroll's
// verb makes the rollback and the resume one write instead, so the failed revision
// never runs again unpaused in between. A Deployment its user paused keeps kubectl's
// refusal.
func withKrollUndo(undo *cobra.Command) {
	polymorphichelpers.RollbackerFn = rollbackerFor
	undo.Long = strings.TrimSpace(undo.Long) + "\n\nkroll also rolls back a Deployment that kroll.dev/on-failure: Pause paused (" +
		failure.PausedOnFailureAnnotation + " naming its current revision): one write gives it the previous revision's template and resumes it. " +
		"A Deployment paused otherwise must be resumed first, as with kubectl."
}

// rollbackerFor is kubectl's rollbacker, wrapped for Deployments.
func rollbackerFor(getter genericclioptions.RESTClientGetter, mapping *meta.RESTMapping) (polymorphichelpers.Rollbacker, error) {
	inner, err := kubectlRollbacker(getter, mapping)
	if err != nil || mapping.GroupVersionKind.GroupKind() != appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind() {
		return inner, err
	}
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &pausedOnFailureRollbacker{client: client, kubectl: inner}, nil
}

// pausedOnFailureRollbacker rolls back Deployments kroll paused on failure and hands
// every other one to kubectl's rollbacker.
type pausedOnFailureRollbacker struct {
	client  kubernetes.Interface
	kubectl polymorphichelpers.Rollbacker
}

var _ polymorphichelpers.Rollbacker = &pausedOnFailureRollbacker{}

func (r *pausedOnFailureRollbacker) Rollback(obj runtime.Object, updatedAnnotations map[string]string, toRevision int64, dryRun cmdutil.DryRunStrategy) (string, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	ctx := context.TODO()
	d, err := r.client.AppsV1().Deployments(accessor.GetNamespace()).Get(ctx, accessor.GetName(), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to retrieve Deployment %s: %v", accessor.GetName(), err)
	}
	if dryRun == cmdutil.DryRunClient || !pausedOnFailure(d) {
		return r.kubectl.Rollback(obj, updatedAnnotations, toRevision, dryRun)
	}
	list, err := r.client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return "", fmt.Errorf("failed to retrieve replica sets from deployment %s: %v", d.Name, err)
	}
	target, err := undoTarget(d, list.Items, toRevision)
	if err != nil {
		return "", err
	}
	patch, err := undoAndResumePatch(d, target)
	if err != nil {
		return "", err
	}
	opts := metav1.PatchOptions{}
	if dryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := r.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, patch, opts); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "resourceVersion") {
			return "", fmt.Errorf("deployment %q changed while it was being rolled back; run the undo again: %v", d.Name, err)
		}
		return "", fmt.Errorf("failed restoring revision %d: %v", history.Revision(target), err)
	}
	return fmt.Sprintf("rolled back to revision %d and resumed (paused on failure of revision %s)", history.Revision(target), d.Annotations[failure.PausedOnFailureAnnotation]), nil
}

// pausedOnFailure tells whether d is paused by kroll.dev/on-failure: Pause: paused, with
// kroll.dev/paused-on-failure naming its current revision. A user who resumed such a
// Deployment and paused it again on the same revision is not told apart: the undo then
// resumes it too, which is what the undo asks for anyway.
func pausedOnFailure(d *appsv1.Deployment) bool {
	failed, ok := d.Annotations[failure.PausedOnFailureAnnotation]
	return d.Spec.Paused && ok && failed != "" && failed == d.Annotations[history.RevisionAnnotation]
}

// undoTarget is the ReplicaSet of d that `rollout undo --to-revision=toRevision` goes
// back to: the one of that revision, or with 0 the newest below the current one.
func undoTarget(d *appsv1.Deployment, replicaSets []appsv1.ReplicaSet, toRevision int64) (*appsv1.ReplicaSet, error) {
	var owned []*appsv1.ReplicaSet
	for i := range replicaSets {
		if ref := metav1.GetControllerOf(&replicaSets[i]); ref != nil && ref.UID == d.UID {
			owned = append(owned, &replicaSets[i])
		}
	}
	if toRevision < 0 {
		return nil, fmt.Errorf("unable to find specified revision %d in history", toRevision)
	}
	if toRevision == 0 {
		if toRevision = history.LastRevision(owned); toRevision == 0 {
			return nil, errors.New("no last revision to roll back to")
		}
	}
	for _, rs := range owned {
		if history.Revision(rs) == toRevision {
			return rs, nil
		}
	}
	return nil, fmt.Errorf("unable to find specified revision %d in history", toRevision)
}

// keptOnUndo are the annotations a Deployment keeps through an undo; the others come
// from the revision's ReplicaSet, as with kubectl's undo (kroll's records, such as
// kroll.dev/paused-on-failure, are not on ReplicaSets, so they go).
var keptOnUndo = []string{
	corev1.LastAppliedConfigAnnotation,
	history.RevisionAnnotation,
	history.RevisionHistoryAnnotation,
	"deployment.kubernetes.io/desired-replicas",
	"deployment.kubernetes.io/max-replicas",
	"deprecated.deployment.rollback.to",
}

// undoAndResumePatch is the one JSON patch that gives d the template of target (less
// its pod-template-hash label) and target's annotations, and unpauses it; it applies
// only to the d that was read (its resourceVersion is tested), so a Deployment changed
// in between is left as it is.
func undoAndResumePatch(d *appsv1.Deployment, target *appsv1.ReplicaSet) ([]byte, error) {
	template := target.Spec.Template.DeepCopy()
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	annotations := map[string]string{}
	for k, v := range target.Annotations {
		annotations[k] = v
	}
	for _, k := range keptOnUndo {
		delete(annotations, k)
		if v, ok := d.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	return json.Marshal([]op{
		{"test", "/metadata/resourceVersion", d.ResourceVersion},
		{"replace", "/spec/template", template},
		{"replace", "/metadata/annotations", annotations},
		{"replace", "/spec/paused", false},
	})
}
