package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/rolloutview/chart"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

func (k *kubectlVerbs) newRolloutTimelineCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "timeline (TYPE NAME | TYPE/NAME) -o FILE.svg|FILE.png",
		Short: "Chart the latest rollout over time: old, new, available and unavailable pods",
		Long: `Chart the latest rollout of a Deployment, StatefulSet or DaemonSet over time: old,
new, available and unavailable pods, and the desired count.

kroll's controllers record each rollout in the annotation kroll.dev/rollout-timeline
of the workload, with the status write they make anyway: one sample per status change,
started again by each new revision; at 240 samples every other one is dropped. Workloads run by other
controllers have no record.

After kroll's automatic rollback (kroll.dev/on-failure: Rollback, or rollout abort)
the record holds the failed rollout and the recovery: a red line marks the moment of
the rollback ("rolled back from 5"); before it "new" counts the failed revision's pods,
after it the restored revision's.

Where a PodDisruptionBudget held the rollout (the workload's DisruptionBudget condition,
under kroll.dev/disruption-budget: Respect), a shaded band marks each wait, labelled
"waiting on PDB NAME", and each wait is listed below the summary line. The title
carries the revision's change-cause when one is recorded ("configmap/app-config
changed" for a configuration rollout).

A staged rollout's step boundaries are marked with dashed lines ("1/5", "partition 10"),
from its RolloutStep events: events expire (after an hour by default), so an older
rollout's chart has fewer marks, or none.`,
		Example: `  kroll rollout timeline deployment/web -o web.svg
  kroll rollout timeline daemonset/agent -o agent.png`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ext := strings.ToLower(filepath.Ext(output))
			if ext != ".svg" && ext != ".png" {
				return fmt.Errorf("-o must name an .svg or .png file, not %q", output)
			}
			client, ref, _, err := k.target(args)
			if err != nil {
				return err
			}
			return k.writeTimeline(cmd.Context(), client, ref, output, ext)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "File to write: .svg or .png (required)")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// writeTimeline charts ref's recorded rollout into output (ext: ".svg" or ".png") and
// prints the summary line, with the budget waits under it.
func (k *kubectlVerbs) writeTimeline(ctx context.Context, client kubernetes.Interface, ref workloadRef, output, ext string) error {
	obj, err := ref.get(ctx, client)
	if err != nil {
		return explainUnreachable(err, k.host())
	}
	raw := annotationsOf(obj)[timeline.Annotation]
	if raw == "" {
		return fmt.Errorf("%s has no recorded timeline: kroll's controllers record one (annotation %s) at its next status change", ref, timeline.Annotation)
	}
	t, err := timeline.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	// The latest revision's change-cause is on what the workload owns (its
	// ReplicaSet or ControllerRevision): a title without it beats no chart.
	var p rolloutview.Progress
	if snap, err := ref.snapshotOf(ctx, client, obj); err == nil {
		p, _ = rolloutview.ProgressOf(snap)
	}
	opts := chart.Options{Title: rolloutview.TimelineTitle(ref.String(), t, p)}
	if _, recorded := staging.RecordOf(annotationsOf(obj)); recorded || staging.SettingsOf(annotationsOf(obj)).Staged() {
		events, err := stepEvents(ctx, client, obj)
		if err != nil {
			fmt.Fprintf(k.streams.ErrOut, "Warning: %s: step boundaries not marked: %v\n", ref, err)
		}
		opts.Marks = rolloutview.RolloutMarks(t, events)
	}
	var data []byte
	if ext == ".svg" {
		data = chart.SVG(t, opts)
	} else if data, err = chart.PNG(t, opts); err != nil {
		return err
	}
	if err := os.WriteFile(output, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(k.streams.Out, "%s: %d samples over %s written to %s\n", ref, len(t.Samples), span(t), output)
	for _, l := range rolloutview.WaitLines(t) {
		fmt.Fprintf(k.streams.Out, "  %s\n", l)
	}
	return nil
}

// stepEvents are the RolloutStep events of obj, which mark its step boundaries.
func stepEvents(ctx context.Context, client kubernetes.Interface, obj runtime.Object) ([]corev1.Event, error) {
	meta := obj.(metav1.Object)
	list, err := client.CoreV1().Events(meta.GetNamespace()).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.uid": string(meta.GetUID()), "reason": staging.EventReason}.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func span(t timeline.Timeline) time.Duration {
	if len(t.Samples) == 0 {
		return 0
	}
	return t.Samples[len(t.Samples)-1].At.Round(100 * time.Millisecond)
}
