package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

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

A staged rollout judged by its metrics (an analyze step, kroll.dev/analysis) gets one
line per check while the analysis holds the rollout or failed it, with the values
measured, what they were judged against, the decision and what it did:
"analysis "error-ratio": Running, 1 of 2 measured: 0.002 (want < 0.01)", "analysis
"error-ratio": Failed at 16:00:45Z: 0.2 (want < 0.01); rolled back". -o json carries
"analysis": revision, step, outcome, action (Promoted, RolledBack, PausedOnFailure,
Held), current, and per check its query as asked, conditions, counts, last
measurements, outcome and decidedAt.

A Deployment whose rollout a PodDisruptionBudget holds (kroll.dev/disruption-budget:
Respect; its DisruptionBudget condition is False) says which budget before kubectl's
closing dots: "Waiting for deployment "web" rollout to finish: 3 old replicas are
pending termination; waiting for PodDisruptionBudget web-pdb: 1 pod to take down,
disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are)..."; -o json carries
"disruptionBudget": the condition's message.

A workload watched by kroll's failure policy (kroll.dev/on-failure Rollback or Pause)
is Complete only once kroll's controller judged its revision complete: its pods all
stayed Ready 10 s and the controller marked the revision's ReplicaSet or
ControllerRevision kroll.dev/complete. Until then the phase is Progressing, the line
says what it waits for ("Waiting for deployment "web" rollout to finish: all 4 pods
updated and available; watching for failures for 8 s more (until ReplicaSet
"web-7d9f" is marked kroll.dev/complete)...") and -o json carries "settling": holder,
secondsLeft. So a crash-looping release that shows every pod available for a moment
ends RolledBack or PausedOnFailure (exit 1), never Complete; kubectl rollout status
passes it. A revision marked already (a rollback or undo to one that completed
before) is Complete at once; a workload without a watched policy, one scaled to 0, or
a StatefulSet done at its partition (nothing is marked until every pod is updated) is
Complete as kubectl says. On a cluster whose workload controllers are upstream's
(the status is written by kube-controller-manager) nothing marks a revision: status
warns and reports as kubectl does.

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
		if t, err := timeline.Parse(annotationsOf(s.Object)[timeline.Annotation]); err == nil && t.Revision == prog.RecordedRevision() {
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
		text = rolloutview.Plain(prog)
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

// annotationsOf reads a workload's annotations (every kind the views take is a
// metav1.Object).
func annotationsOf(obj runtime.Object) map[string]string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetAnnotations()
	}
	return nil
}
