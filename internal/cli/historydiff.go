package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// withDiff adds --diff to kubectl's `rollout history`: with it, the template diff
// between two revisions (the previous and the latest unless named); without it,
// kubectl's history as it is.
func (k *kubectlVerbs) withDiff(history *cobra.Command) {
	var diff bool
	kubectlRun := history.Run
	history.Use = "history (TYPE NAME | TYPE/NAME) [flags] [--diff [A B]]"
	history.Example += `

  # Show what changed in the pod template between revisions 1 and 3
  kroll rollout history deployment/web --diff 1 3`
	history.Flags().BoolVar(&diff, "diff", false, "Show the pod template diff between two revisions A and B (default: the previous and the latest).")
	history.Run = nil
	history.RunE = func(cmd *cobra.Command, args []string) error {
		if !diff {
			kubectlRun(cmd, args)
			return nil
		}
		return k.historyDiff(cmd.Context(), args)
	}
}

func (k *kubectlVerbs) historyDiff(ctx context.Context, args []string) error {
	client, ref, rest, err := k.target(args)
	if err != nil {
		return err
	}
	snap, err := ref.snapshot(ctx, client)
	if err != nil {
		return explainUnreachable(err, k.host())
	}
	revs, err := rolloutview.RevisionsOf(snap)
	if err != nil {
		return err
	}
	numbers := rolloutview.RevisionNumbers(revs)
	var a, b int64
	switch len(rest) {
	case 0:
		if len(numbers) < 2 {
			return fmt.Errorf("%s has %d revision(s): nothing to compare", ref, len(numbers))
		}
		a, b = numbers[len(numbers)-2], numbers[len(numbers)-1]
	case 2:
		if a, err = strconv.ParseInt(rest[0], 10, 64); err == nil {
			b, err = strconv.ParseInt(rest[1], 10, 64)
		}
		if err != nil {
			return fmt.Errorf("--diff takes two revision numbers, e.g. --diff 1 2: %w", err)
		}
	default:
		return fmt.Errorf("--diff takes two revision numbers or none, got %q", strings.Join(rest, " "))
	}
	ra, ok := revs[a]
	if !ok {
		return fmt.Errorf("%s has no revision %d (revisions: %s)", ref, a, joinNumbers(numbers))
	}
	rb, ok := revs[b]
	if !ok {
		return fmt.Errorf("%s has no revision %d (revisions: %s)", ref, b, joinNumbers(numbers))
	}
	text, err := rolloutview.TemplateDiff(ra, rb)
	if err != nil {
		return err
	}
	if text == "" {
		text = fmt.Sprintf("revisions %d and %d have the same pod template\n", a, b)
	}
	fmt.Fprint(k.streams.Out, text)
	return nil
}

func joinNumbers(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}
