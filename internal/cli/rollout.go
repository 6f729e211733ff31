package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
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

// rollout is kubectl's `rollout` with kroll's status in place of kubectl's, history
// with --diff, and the verbs kubectl lacks: watch, plan and timeline.
func (k *kubectlVerbs) rollout(cmd *cobra.Command) *cobra.Command {
	var pause, resume *cobra.Command
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
		}
	}
	withKrollPauseResume(pause, resume)
	cmd.AddCommand(k.newRolloutStatusCommand(), k.newRolloutWatchCommand(), k.newRolloutPlanCommand(), k.newRolloutTimelineCommand(),
		k.newRolloutPromoteCommand(k.streams.Out), k.newRolloutAbortCommand(k.streams.Out))
	cmd.Long = strings.TrimSpace(cmd.Long) + "\n\nkroll adds: status with a progress bar and -o json, watch, plan, timeline, history --diff, promote and abort of staged rollouts, and pause/resume of what kroll pauses (DaemonSets, StatefulSets paused on failure)."
	return cmd
}

// client is a clientset and the namespace (-n, else the context's) for kroll's own
// rollout verbs, from the same flags as the kubectl verbs.
func (k *kubectlVerbs) client() (kubernetes.Interface, string, error) {
	resolveKubeconfig(k.config)
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

func (k *kubectlVerbs) newRolloutStatusCommand() *cobra.Command {
	var (
		watch, untilPaused bool
		timeout            time.Duration
		output             string
	)
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME)",
		Short: "Show the status of the rollout: a progress bar in a terminal, kubectl's lines otherwise, or -o json",
		Long: `Show the status of the rollout of a Deployment, StatefulSet or DaemonSet and, by
default, wait until it finishes.

In a terminal it draws a live progress bar per revision (█ available, ▒ there but not
available), the pod the rollout waits on and why, and an ETA from the observed rate.
Elsewhere it prints kubectl's status lines, each with the pod it waits on. -o json prints
one JSON object per change: revision, phase (Progressing, Complete, Failed, Paused,
RolledBack, PausedOnFailure),
counts, the blocking pod and the ETA in seconds.

Pods being resized in place (pods/resize written, the kubelet not done) are counted
under the bars and on each line, "2 pods resizing", with each one the kubelet holds
pending (PodResizePending) named with its reason and message: "web-7d9f-abcde resize
Deferred: Node didn't have enough resource: cpu, …"; -o json carries "resizing": pods,
pending.

A workload that opts into kroll's failure policy (kroll.dev/on-failure) and whose
rollout kroll's controller judged failed is reported with the RolloutFailed condition's
line: "error: deployment "web" rollout failed: 3 of 4 new pods failed, threshold 1
(web-7d9f-abcde: CrashLoopBackOff); rolled back from revision 5 to 4"; in -o json its
phase is RolledBack or PausedOnFailure and "failure" holds the condition's reason and
message. A policy whose annotations do not parse is a Warning line.

A staged rollout (kroll.dev/partition, kroll.dev/rollout-steps) shows its step:
"step 1/5: 10% (2 of 20 updated), paused until promoted". Held at a pause or at its
partition it is Paused, and the line names the command that continues ('kroll rollout
promote deployment/web', or lowering kroll.dev/partition); status keeps waiting there,
as kubectl's does on a paused Deployment, unless --until-paused is given: then it
exits 0 once the rollout is held (or paused with 'kroll rollout pause'). -o json
carries "staged": phase, step, total, partition, message.

Exit codes are kubectl's: 0 once rolled out (or at once with --watch=false), 1 when the
rollout failed (progress deadline exceeded, or an InPlaceOnly change that cannot be made
in place), the timeout passed, or the workload is not found; and 1 when kroll's
controller rolled the rollout back or paused it on failure.`,
		Example: `  kroll rollout status deployment/web
  kroll rollout status statefulset/db --timeout=5m
  kroll rollout status deployment/web --watch=false -o json
  kroll rollout status deployment/web --until-paused`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("unknown output format %q: use -o json", output)
			}
			client, ref, rest, err := k.target(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return fmt.Errorf("one workload at a time: unexpected %q", strings.Join(rest, " "))
			}
			s := statusPrinter{out: k.streams.Out, errOut: k.streams.ErrOut, json: output == "json", terminal: output == "" && isTerminal(k.streams.Out), untilPaused: untilPaused}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			if timeout > 0 {
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			if !watch {
				snap, err := ref.snapshot(ctx, client)
				if err != nil {
					return explainUnreachable(err, k.host())
				}
				_, err = s.print(snap)
				return err
			}
			err = ref.watchSnapshots(ctx, client, s.print)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				return kubectlError{errors.New("timed out waiting for the condition")}
			case errors.Is(err, context.Canceled):
				return fmt.Errorf("interrupted: %s is still rolling out", ref)
			}
			return explainUnreachable(err, k.host())
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Watch the status of the rollout until it's done.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "The length of time to wait before ending watch, zero means never. Any other values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json (one object per change). Default: a progress bar in a terminal, plain lines otherwise.")
	cmd.Flags().BoolVar(&untilPaused, "until-paused", false, "Also stop, exit 0, once the rollout is paused: held at a step's pause or its kroll.dev/partition, or paused by 'kroll rollout pause'.")
	return cmd
}

// statusPrinter shows successive snapshots of one rollout in the chosen form, keeping
// the observations its ETA is computed from.
type statusPrinter struct {
	out, errOut    io.Writer
	json, terminal bool
	// untilPaused: a paused rollout ends the wait too (--until-paused).
	untilPaused bool
	// warned are the warnings printed already: each once, not on every change.
	warned         map[string]bool
	screen         redraw
	obs            []rolloutview.Observation
	revision, last string
}

// print shows s and says whether the rollout is over (done, or failed: an error).
func (p *statusPrinter) print(s rolloutview.Snapshot) (bool, error) {
	prog, err := rolloutview.ProgressOf(s)
	if err != nil {
		return true, err
	}
	if prog.Revision != p.revision {
		// A new revision: the pace of the old one says nothing. A recorded timeline of
		// this one gives a pace from the first snapshot.
		p.revision, p.obs = prog.Revision, nil
		if t, err := timeline.Parse(annotationsOf(s.Object)[timeline.Annotation]); err == nil && t.Revision == recordedRevision(prog) {
			p.obs = rolloutview.ObservationsOf(t)
		}
	}
	if n := len(p.obs); n == 0 || p.obs[n-1].Done != prog.DoneCount() {
		p.obs = append(p.obs, rolloutview.Observation{At: s.Now, Done: prog.DoneCount()})
	}
	prog = prog.WithETA(p.obs)

	var text string
	switch {
	case p.json:
		text = rolloutview.JSON(prog) + "\n"
	case p.terminal:
		p.screen.w = p.out
		p.screen.show(rolloutview.Bar(prog))
	default:
		if line := rolloutview.Line(prog); line != "" {
			text = line + "\n"
		}
	}
	if text != "" && text != p.last {
		fmt.Fprint(p.out, text)
		p.last = text
	}
	p.warn(prog)
	switch {
	case prog.Err != nil:
		return true, kubectlError{prog.Err}
	case prog.Done:
		if p.terminal {
			fmt.Fprintln(p.out, prog.Message)
		}
		return true, nil
	case prog.Phase == rolloutview.Failed:
		return true, fmt.Errorf("%s/%s failed: %s", prog.Kind, prog.Name, inPlaceBlocked)
	case p.untilPaused && prog.Phase == rolloutview.Paused:
		if p.terminal {
			fmt.Fprintln(p.out, prog.Message)
		}
		return true, nil
	}
	return false, nil
}

// warn prints each of prog's warnings once, on stderr, as kubectl prints the API's:
// "Warning: deployment/web: kroll.dev/failure-threshold="abc" is not valid: …". A
// terminal's bar and -o json carry them already.
func (p *statusPrinter) warn(prog rolloutview.Progress) {
	if p.terminal || p.json || p.errOut == nil {
		return
	}
	for _, w := range prog.Warnings {
		if p.warned[w] {
			continue
		}
		if p.warned == nil {
			p.warned = map[string]bool{}
		}
		p.warned[w] = true
		fmt.Fprintf(p.errOut, "Warning: %s/%s: %s\n", prog.Kind, prog.Name, w)
	}
}

// inPlaceBlocked is why a rollout is Failed without kubectl's error: the one Failed
// phase kubectl's viewer does not report (a missed deadline comes as Err).
const inPlaceBlocked = "the change cannot be made in place and the workload is InPlaceOnly (see its InPlaceUpdate condition)"

// recordedRevision is the revision a workload's timeline is recorded under: what the
// controller passes (the revision number, update revision, or DaemonSet hash).
func recordedRevision(p rolloutview.Progress) string {
	if p.Kind == "daemonset" {
		if i := strings.LastIndexByte(p.Revision, '-'); i >= 0 {
			return p.Revision[i+1:]
		}
	}
	return p.Revision
}

// annotationsOf reads a workload's annotations (every kind the views take is a
// metav1.Object).
func annotationsOf(obj runtime.Object) map[string]string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetAnnotations()
	}
	return nil
}

func (k *kubectlVerbs) newRolloutWatchCommand() *cobra.Command {
	var (
		untilDone bool
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "watch (TYPE NAME | TYPE/NAME)",
		Short: "Watch a rollout as a live tree: revision, ReplicaSet or ControllerRevision, pods",
		Long: `Watch a rollout as a live tree, newest revision first: each revision, the ReplicaSet
(Deployment) or ControllerRevision (StatefulSet, DaemonSet) holding it, and its pods with
ready containers, status, restarts, age and image (a pod being resized in place shows
Resizing, or ResizeDeferred / ResizeInfeasible while its kubelet holds the resize, and
the tree ends with the count and the pending ones). In a terminal the tree is redrawn in
place; elsewhere each change prints a new tree. Runs until interrupted, or until the
rollout completes with --until-complete.

A staged rollout (kroll.dev/partition, kroll.dev/rollout-steps) shows its step under
the heading, and each step boundary it crosses while watched is marked with a line
that stays: "--- 12:00:05 step 2/5: rolling out to 50% (2 of 20 updated)".`,
		Example: `  kroll rollout watch deployment/web
  kroll rollout watch statefulset/db --until-complete`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ref, _, err := k.target(args)
			if err != nil {
				return err
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			if timeout > 0 {
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			w := treeWatcher{out: k.streams.Out, terminal: isTerminal(k.streams.Out), untilDone: untilDone}
			err = ref.watchSnapshots(ctx, client, w.show)
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return explainUnreachable(err, k.host())
		},
	}
	cmd.Flags().BoolVar(&untilDone, "until-complete", false, "Stop once the rollout is complete.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "Stop watching after this long; zero means never.")
	return cmd
}

// treeWatcher shows successive snapshots of one rollout as `rollout watch`'s tree.
type treeWatcher struct {
	out                 io.Writer
	terminal, untilDone bool
	screen              redraw
	last                string
	// staged is the staged state last shown, to mark the step boundaries crossed.
	staged *rolloutview.Staged
}

// show draws s and says whether to stop (--until-complete and complete).
func (w *treeWatcher) show(s rolloutview.Snapshot) (bool, error) {
	p, err := rolloutview.ProgressOf(s)
	if err != nil {
		return true, err
	}
	w.screen.w = w.out
	if rolloutview.StepChanged(w.staged, p.Staged) {
		// A step boundary stays on screen, above the redrawn tree.
		w.screen.show("")
		fmt.Fprintf(w.out, "--- %s %s\n", s.Now.UTC().Format(time.TimeOnly), p.Staged.Message)
		w.screen.lines = 0
	}
	w.staged = p.Staged
	tree := rolloutview.Tree(s, p)
	switch {
	case w.terminal:
		w.screen.show(tree)
	case tree != w.last:
		fmt.Fprintln(w.out, tree)
	}
	w.last = tree
	return w.untilDone && p.Phase == rolloutview.Complete, nil
}

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
			obj, err := ref.get(cmd.Context(), client)
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
			opts := chart.Options{Title: fmt.Sprintf("%s → revision %s", ref, t.Revision)}
			if _, recorded := staging.RecordOf(annotationsOf(obj)); recorded || staging.SettingsOf(annotationsOf(obj)).Staged() {
				events, err := stepEvents(cmd.Context(), client, obj)
				if err != nil {
					fmt.Fprintf(k.streams.ErrOut, "Warning: %s: step boundaries not marked: %v\n", ref, err)
				}
				opts.Marks = rolloutview.StepMarks(t, events)
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
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "File to write: .svg or .png (required)")
	_ = cmd.MarkFlagRequired("output")
	return cmd
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

func (k *kubectlVerbs) newRolloutPlanCommand() *cobra.Command {
	var (
		file, output string
		images       []string
	)
	cmd := &cobra.Command{
		Use:   "plan [TYPE/NAME] (-f FILE | --image CONTAINER=IMAGE ...)",
		Short: "Dry run: the ordered batches of pod creates, deletes and in-place updates a change would cause",
		Long: `Show, without changing anything, what a change to a Deployment, StatefulSet or
DaemonSet would do to its pods: the ordered batches of creates, deletes and in-place
updates kroll's controllers would make from the current state, given maxSurge and
maxUnavailable, partition, and in-place eligibility.

The change is either a manifest (-f), taken as the API server would store it after
'kroll apply --server-side --force-conflicts' (a server-side dry run), or new images
(--image, as 'kroll set image' takes them; * names every container). The plan assumes
each batch completes before the next starts.

The batches come from the planners kroll's controllers decide with (pkg/rollout and
pkg/inplace), replayed on a model of the workload. A cpu or memory change the API's
pods/resize accepts is made in place (with kroll.dev/update-strategy): each batch says
how its pods are resized, "resize in place: app: cpu request 100m → 200m (no
restart)" or "(restarts app)" for a container whose resizePolicy is RestartContainer.
-o json prints the plan as one object (kind, object, strategy, from, to, changes,
inPlace, batches of ops with their resize, notes, maxPods, minAvailable).`,
		Example: `  kroll rollout plan -f web-v2.yaml
  kroll rollout plan deployment/web --image app=nginx:1.26
  kroll rollout plan deployment/web --image app=nginx:1.26 -o json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (file == "") == (len(images) == 0) {
				return fmt.Errorf("give the change as -f FILE or as --image CONTAINER=IMAGE (one of them)")
			}
			if output != "" && output != "json" {
				return fmt.Errorf("unknown output format %q: use -o json", output)
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
			plan, err := ref.plan(ctx, client, next)
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
	return cmd
}
