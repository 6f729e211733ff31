package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

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
