package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/gates"
)

// rollout is kubectl's `rollout` with kroll's status in place of kubectl's, history
// with --diff, and the verbs kubectl lacks: watch, plan and timeline.
func (k *kubectlVerbs) rollout(cmd *cobra.Command) *cobra.Command {
	var pause, resume, undo *cobra.Command
	for _, sub := range cmd.Commands() {
		switch sub.Name() {
		case "status":
			cmd.RemoveCommand(sub)
		case "history":
			k.withDiff(sub)
		case "pause":
			pause = sub
		case "resume":
			resume = sub
		case "undo":
			undo = sub
		}
	}
	withKrollPauseResume(pause, resume)
	withKrollUndo(undo)
	cmd.AddCommand(k.newRolloutStatusCommand(), k.newRolloutWatchCommand(), k.newRolloutPlanCommand(), k.newRolloutTimelineCommand(),
		k.newRolloutPromoteCommand(k.streams.Out), k.newRolloutAbortCommand(k.streams.Out))
	cmd.Long = strings.TrimSpace(cmd.Long) + "\n\nkroll adds: status with a progress bar and -o json, watch, plan, timeline, history --diff, promote and abort of staged rollouts, and pause/resume of what kroll pauses (DaemonSets, StatefulSets paused on failure), and undo of a Deployment paused on failure."
	return cmd
}

// client is a clientset and the namespace (-n, else the context's) for kroll's own
// rollout verbs, from the same flags as the kubectl verbs.
func (k *kubectlVerbs) client() (kubernetes.Interface, string, error) {
	if err := k.kubeconfig.resolve(k.config, k.streams.ErrOut); err != nil {
		return nil, "", err
	}
	if err := kubeconfigMissing(*k.config.KubeConfig); err != nil {
		return nil, "", err
	}
	ns, _, err := k.factory.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	client, err := k.factory.KubernetesClientSet()
	if err != nil {
		return nil, "", fmt.Errorf("no usable kubeconfig: %w; start a cluster with 'kroll up' or pass --kubeconfig", err)
	}
	return client, ns, nil
}

// target is the client and the workload args name (KIND/NAME or KIND NAME, then the
// rest), for kroll's own rollout verbs.
func (k *kubectlVerbs) target(args []string) (kubernetes.Interface, workloadRef, []string, error) {
	client, ns, err := k.client()
	if err != nil {
		return nil, workloadRef{}, nil, err
	}
	ref, rest, err := parseWorkloadRef(args, ns)
	return client, ref, rest, err
}

// host is the API server the verbs talk to, for error messages.
func (k *kubectlVerbs) host() string {
	cfg, err := k.factory.ToRESTConfig()
	if err != nil {
		return "the API server"
	}
	return cfg.Host
}

// interruptible is ctx ended by Ctrl-C or SIGTERM, as a live view should be.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// isTerminal tells whether w is a terminal, where views redraw in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// redraw replaces the lines last drawn on a terminal with text.
type redraw struct {
	w     io.Writer
	lines int
}

func (r *redraw) show(text string) {
	if r.lines > 0 {
		fmt.Fprintf(r.w, "\x1b[%dA\x1b[J", r.lines)
	}
	fmt.Fprint(r.w, text)
	r.lines = strings.Count(text, "\n")
}

func (k *kubectlVerbs) newRolloutPlanCommand() *cobra.Command {
	var (
		file, output string
		images       []string
		featureGates string
	)
	cmd := &cobra.Command{
		Use:   "plan [TYPE/NAME] [-f FILE | --image CONTAINER=IMAGE ...]",
		Short: "Dry run: the ordered batches of pod creates, deletes and in-place updates a change would cause",
		Long: `Show, without changing anything, what a change to a Deployment, StatefulSet or
DaemonSet would do to its pods: the ordered batches of creates, deletes and in-place
updates kroll's controllers would make from the current state, given maxSurge and
maxUnavailable, partition, and in-place eligibility.

The change is either a manifest (-f), taken as the API server would store it after
'kroll apply --server-side --force-conflicts' (a server-side dry run), or new images
(--image, as 'kroll set image' takes them; * names every container). The plan assumes
each batch completes before the next starts. With neither, the plan is of the workload
as it is: what its controller would still do (a rollout in flight, or a configuration
change that rolls).

With configuration rollout (kroll.dev/config-rollout), the plan reads the ConfigMaps and
Secrets the template references, and decides as the controller does whether their live
data rolls a new revision: "configmap/app-config changed: a new revision will roll out
with the live data".

The batches come from the planners kroll's controllers decide with (pkg/rollout and
pkg/inplace), replayed on a model of the workload. A cpu or memory change the API's
pods/resize accepts is made in place (with kroll.dev/update-strategy): each batch says
how its pods are resized, "resize in place: app: cpu request 100m → 200m (no
restart)" or "(restarts app)" for a container whose resizePolicy is RestartContainer.
Unless the workload has kroll.dev/disruption-budget: Ignore, the plan reads the
namespace's PodDisruptionBudgets and says how many old pods of the first batch that
takes them down the budgets let go now, and which budget holds the rest.
A StatefulSet's maxUnavailable is read as the controller reads it under its feature
gates: with --feature-gates MaxUnavailableStatefulSet=false (the controller manager's
setting on a cluster that turns the gate off), one pod at a time.
-o json prints the plan as one object (kind, object, strategy, from, to, changes,
inPlace, batches of ops with their resize, notes, maxPods, minAvailable).`,
		Example: `  kroll rollout plan -f web-v2.yaml
  kroll rollout plan deployment/web
  kroll rollout plan deployment/web --image app=nginx:1.26
  kroll rollout plan deployment/web --image app=nginx:1.26 -o json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" && len(images) > 0 {
				return fmt.Errorf("give the change as -f FILE or as --image CONTAINER=IMAGE, not both")
			}
			if file == "" && len(images) == 0 && len(args) == 0 {
				return fmt.Errorf("name the workload (TYPE/NAME), or give the change as -f FILE")
			}
			if output != "" && output != "json" {
				return fmt.Errorf("unknown output format %q: use -o json", output)
			}
			set, err := parseFeatureGates(featureGates)
			if err != nil {
				return err
			}
			client, ns, err := k.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var ref workloadRef
			var next runtime.Object
			if file != "" {
				manifest, err := readManifest(file, k.streams.In)
				if err != nil {
					return err
				}
				if ref, err = manifestRef(manifest, ns); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				if len(args) > 0 {
					named, _, err := parseWorkloadRef(args, ns)
					if err != nil {
						return err
					}
					if named != ref {
						return fmt.Errorf("%s holds %s, not %s", file, ref, named)
					}
				}
				if _, err := ref.get(ctx, client); err != nil {
					return explainUnreachable(err, k.host())
				}
				if next, err = ref.dryRunApply(ctx, client, manifest); err != nil {
					return fmt.Errorf("%s: %w", file, explainUnreachable(err, k.host()))
				}
			} else {
				if ref, _, err = parseWorkloadRef(args, ns); err != nil {
					return err
				}
				cur, err := ref.get(ctx, client)
				if err != nil {
					return explainUnreachable(err, k.host())
				}
				if next, err = withImages(cur, ref, images); err != nil {
					return err
				}
			}
			plan, err := ref.plan(ctx, client, next, gates.Defaults().With(set))
			if err != nil {
				return err
			}
			if output == "json" {
				b, err := json.MarshalIndent(plan, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(k.streams.Out, string(b))
				return nil
			}
			fmt.Fprint(k.streams.Out, plan.Text())
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "Manifest of the changed workload ('-' reads stdin)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json (the plan as one object). Default: text")
	cmd.Flags().StringArrayVar(&images, "image", nil, "CONTAINER=IMAGE: the change is this image (repeatable; * is every container)")
	cmd.Flags().StringVar(&featureGates, "feature-gates", "", "the Kubernetes feature gates the controllers run with, as kroll up and kroll controller-manager take them (Name=true|false,...); default kroll up's: MaxUnavailableStatefulSet on")
	return cmd
}
