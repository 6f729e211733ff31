package cli

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// newStatusCommand is `kroll status`: every Deployment, StatefulSet and DaemonSet of a
// namespace (or all) with where its rollout stands — the batch status script of the
// upgrade-strategies article as one command.
func (k *kubectlVerbs) newStatusCommand() *cobra.Command {
	var (
		allNamespaces bool
		failOn        []string
		output        string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Every Deployment, StatefulSet and DaemonSet: succeeded, updating, failed, paused or rolled back",
		Long: `List every Deployment, StatefulSet and DaemonSet of the namespace (or of all with
-A) with where its rollout stands: succeeded, updating, failed or paused, its counts, and
for one not done the pod it waits on.

A rollout has failed when it cannot finish without a change: a Deployment past its
progress deadline, an InPlaceOnly change that cannot be made in place, or one kroll's
controller judged failed under its kroll.dev/on-failure policy (rolled-back or
paused-on-failure, with the RolloutFailed condition's line). A staged rollout held at a
pause or at its partition is paused, its detail where: "paused at step 2/5", "at
partition 10". A watched rollout (kroll.dev/on-failure Rollback or Pause) is
succeeded only once kroll's controller marked its revision complete (its pods stayed
Ready 10 s): until then it is updating, "watching for failures for 8 s more".

The exit code is 1 when any rollout fails the gate, 0 otherwise. These always fail it:
failed, paused-on-failure, and rolled-back while the workload is not yet healthy again
(still rolling back, or its restored revision not marked complete). A workload kroll
rolled back that is healthy again on a complete revision is listed rolled-back (the
detail says so) but does not fail it: the gate is about whether what runs now is
sound, and kroll already healed it. --fail-on adds verdicts that fail it too:
rolled-back (any rollback the records still show, until the next change), updating
(a gate that wants every rollout finished, its verdict included), paused. A failure
policy whose annotations do not parse is a Warning line on stderr.

-o json prints {"items": [...]}: for each workload the object 'kroll rollout status -o
json' prints (kind, namespace, name, revision, phase, counts, staged, failure,
analysis, ...) with "status" and "detail", the table's columns. A workload whose
rollout steps are judged by metrics (kroll.dev/analysis) carries "analysis": each
check's query as asked, its last measurements, its conditions and its decision
(Running, Successful, Failed, Inconclusive, Error, with decidedAt), and the action
it took (Promoted, RolledBack, PausedOnFailure, Held). The exit code is the same.`,
		Example: `  kroll status
  kroll status -A
  kroll status --fail-on=rolled-back,updating
  kroll status -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("unknown output format %q: use -o json", output)
			}
			gate, err := rolloutview.ParseFailOn(failOn)
			if err != nil {
				return err
			}
			client, ns, err := k.client()
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = metav1.NamespaceAll
			}
			ctx := cmd.Context()
			apps := client.AppsV1()
			var objs []runtime.Object
			ds, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return explainUnreachable(err, k.host())
			}
			for _, d := range pointers(ds.Items) {
				objs = append(objs, d)
			}
			sts, err := apps.StatefulSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, s := range pointers(sts.Items) {
				objs = append(objs, s)
			}
			dss, err := apps.DaemonSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, d := range pointers(dss.Items) {
				objs = append(objs, d)
			}
			if len(objs) == 0 && output == "json" {
				fmt.Fprint(k.streams.Out, rolloutview.StatusJSON(nil))
				return nil
			}
			if len(objs) == 0 {
				where := fmt.Sprintf("in namespace %q", ns)
				if allNamespaces {
					where = "in any namespace"
				}
				fmt.Fprintf(k.streams.ErrOut, "No Deployments, StatefulSets or DaemonSets %s.\n", where)
				return nil
			}
			owned, err := listOwned(ctx, client, ns, "", nil)
			if err != nil {
				return err
			}
			now := time.Now()
			var rows []rolloutview.Progress
			for _, obj := range objs {
				p, err := rolloutview.ProgressOf(owned.SnapshotOf(obj, now))
				if err != nil {
					return err
				}
				rows = append(rows, p)
			}
			// Kind by kind as listed, and by namespace then name within a kind, as
			// kubectl's `get` orders them.
			sort.SliceStable(rows, func(i, j int) bool {
				if rows[i].Kind != rows[j].Kind {
					return false
				}
				if rows[i].Namespace != rows[j].Namespace {
					return rows[i].Namespace < rows[j].Namespace
				}
				return rows[i].Name < rows[j].Name
			})
			if output == "json" {
				fmt.Fprint(k.streams.Out, rolloutview.StatusJSON(rows))
			} else {
				fmt.Fprint(k.streams.Out, rolloutview.Summary(rows, allNamespaces))
			}
			for _, p := range rows {
				for _, w := range p.Warnings {
					fmt.Fprintf(k.streams.ErrOut, "Warning: %s/%s: %s\n", p.Kind, p.Name, w)
				}
			}
			if failed := rolloutview.Failures(rows, gate); failed > 0 {
				return fmt.Errorf("%d of %d rollouts failed", failed, len(rows))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List the workloads of every namespace.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json ({\"items\": [...]}, each the object 'kroll rollout status -o json' prints, with status and detail). Default: a table.")
	cmd.Flags().StringSliceVar(&failOn, "fail-on", nil, "Verdicts that also fail the command (exit 1), comma-separated: rolled-back, updating, paused. Failed and paused-on-failure always do.")
	return cmd
}
