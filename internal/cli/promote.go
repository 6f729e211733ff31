package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// newRolloutPromoteCommand is `kroll rollout promote`: the staged rollout's record one
// step on (or to the end), in one update of the workload that kroll's controller then
// carries out.
func (k *kubectlVerbs) newRolloutPromoteCommand(stdout io.Writer) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "promote (TYPE NAME | TYPE/NAME) [--full]",
		Short: "Move a staged rollout (kroll.dev/rollout-steps) to its next step",
		Long: `Move a staged rollout to its next step: past a pause, or past a share of pods not yet
reached. With --full, to the end: the rollout finishes.

A Deployment, StatefulSet or DaemonSet is staged with the annotation
kroll.dev/rollout-steps ("10%, pause, 50%, pause: 5m, 100%"); kroll's controller records
the steps done in kroll.dev/rollout-step ("1/5"), and promote moves that record on.`,
		Example: `  kroll rollout promote deployment/web
  kroll rollout promote daemonset/agent --full`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ref, _, err := k.target(args)
			if err != nil {
				return err
			}
			record, err := promote(cmd.Context(), client, ref, full, time.Now())
			if err != nil {
				return explainUnreachable(err, k.host())
			}
			fmt.Fprintf(stdout, "%s.apps/%s promoted to step %s\n", ref.kind, ref.name, record)
			return nil
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "skip every step left: the rollout finishes")
	return cmd
}

// newRolloutAbortCommand is `kroll rollout abort`: it asks kroll's controller to roll
// the revision being rolled out back, as the failure policy's rollback does.
func (k *kubectlVerbs) newRolloutAbortCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "abort (TYPE NAME | TYPE/NAME)",
		Short: "Roll back the revision being rolled out, as kroll's rollback on failure does",
		Long: `Roll back the revision being rolled out: kroll's controller brings back the revision
the rollout started from, at once (a rollback is never staged), and reports it in the
RolloutFailed condition (reason Aborted) and a Warning event.

The request is the annotation kroll.dev/abort, naming the revision to abort: a rollout of
another revision, started after the request, is not aborted by it.`,
		Example: `  kroll rollout abort deployment/web
  kroll rollout abort statefulset/db`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ref, _, err := k.target(args)
			if err != nil {
				return err
			}
			revision, err := abort(cmd.Context(), client, ref)
			if err != nil {
				return explainUnreachable(err, k.host())
			}
			fmt.Fprintf(stdout, "%s.apps/%s abort of revision %s requested\n", ref.kind, ref.name, revision)
			return nil
		},
	}
	return cmd
}

// promote writes ref's step record one step on (to the end with full), in one update,
// and returns it. It refuses a workload whose steps kroll's controller has not started
// for the revision rolled out now: the record of an earlier template would be moved
// on for nothing (the controller starts the new one at 0).
func promote(ctx context.Context, client kubernetes.Interface, ref workloadRef, full bool, now time.Time) (staging.Record, error) {
	var record staging.Record
	err := updateWorkload(ctx, client, ref, func(obj runtime.Object) error {
		// Read on every attempt: a conflict may be the controller starting the
		// steps of a new revision, which the next attempt must see.
		snap, err := ref.snapshot(ctx, client)
		if err != nil {
			return err
		}
		progress, err := rolloutview.ProgressOf(snap)
		if err != nil {
			return err
		}
		meta := metaOf(obj)
		settings := staging.SettingsOf(meta.Annotations)
		if len(settings.Problems) == 0 && len(settings.Steps) == 0 && settings.Partition != nil && ref.kind != kindStatefulSet {
			return fmt.Errorf("%s cannot be promoted: it is staged by %s, not by steps; lower the partition instead: kroll annotate %s %s=0 --overwrite",
				ref, staging.PartitionAnnotation, ref, staging.PartitionAnnotation)
		}
		r, err := staging.Promote(meta.Annotations, full, now)
		if err != nil {
			return fmt.Errorf("%s cannot be promoted: %w", ref, err)
		}
		switch st := progress.Staged; {
		case st == nil:
			return fmt.Errorf("%s cannot be promoted: its rollout of revision %s is not staged (a rollback, or no pod left on an older revision)", ref, progress.Revision)
		case r.Revision != st.Revision:
			return fmt.Errorf("%s cannot be promoted: its recorded steps (%s=%q) are not of the revision rolled out now (%s); kroll's controller starts its steps at its next sync, try again then",
				ref, staging.StepRevisionAnnotation, r.Revision, progress.Revision)
		}
		r.Set(meta.Annotations)
		record = r
		return nil
	})
	return record, err
}

// abort asks kroll's controller to roll back the revision ref rolls out now, and
// returns that revision. It refuses a workload with no rollout in progress.
func abort(ctx context.Context, client kubernetes.Interface, ref workloadRef) (string, error) {
	snap, err := ref.snapshot(ctx, client)
	if err != nil {
		return "", err
	}
	progress, err := rolloutview.ProgressOf(snap)
	if err != nil {
		return "", err
	}
	if progress.Phase == rolloutview.Complete || progress.Phase == rolloutview.RolledBack || progress.Revision == "" {
		return "", fmt.Errorf("%s has no rollout in progress to abort (revision %s is %s)", ref, progress.Revision, progress.Phase)
	}
	return progress.Revision, updateWorkload(ctx, client, ref, func(obj runtime.Object) error {
		metaOf(obj).Annotations[staging.AbortAnnotation] = progress.Revision
		return nil
	})
}

// updateWorkload reads the workload, lets edit change it (its annotations are never
// nil), and updates it, again on a conflict.
func updateWorkload(ctx context.Context, client kubernetes.Interface, ref workloadRef, edit func(runtime.Object) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := ref.get(ctx, client)
		if err != nil {
			return err
		}
		if meta := metaOf(obj); meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		if err := edit(obj); err != nil {
			return err
		}
		apps := client.AppsV1()
		switch o := obj.(type) {
		case *appsv1.Deployment:
			_, err = apps.Deployments(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		case *appsv1.StatefulSet:
			_, err = apps.StatefulSets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		case *appsv1.DaemonSet:
			_, err = apps.DaemonSets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		}
		return err
	})
}

// metaOf is the object's metadata, to change in place.
func metaOf(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.ObjectMeta
	case *appsv1.StatefulSet:
		return &o.ObjectMeta
	case *appsv1.DaemonSet:
		return &o.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}
