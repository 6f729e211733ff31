package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// withDiff adds --diff to kubectl's `rollout history`: with it, the template diff
// between two revisions (the previous and the latest unless named), then what changed
// in their configuration (configuration rollout's snapshots: ConfigMap data as a diff,
// Secrets by key, changed or not, and hash); without it, kubectl's history as it is.
func (k *kubectlVerbs) withDiff(history *cobra.Command) {
	var diff bool
	kubectlRun := history.Run
	history.Use = "history (TYPE NAME | TYPE/NAME) [flags] [--diff [A B]]"
	history.Example += `

  # Show what changed in the pod template between revisions 1 and 3
  kroll rollout history deployment/web --diff 1 3`
	history.Flags().BoolVar(&diff, "diff", false, "Show the pod template and configuration diff between two revisions A and B (default: the previous and the latest).")
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
	config := rolloutview.ConfigDiff(ra, rb, configSnapshots(ctx, client, ref.namespace, ra, rb))
	switch {
	case text == "" && config == "":
		text = fmt.Sprintf("revisions %d and %d have the same pod template and configuration\n", a, b)
	case text == "":
		text = fmt.Sprintf("revisions %d and %d have the same pod template\n", a, b)
	}
	fmt.Fprint(k.streams.Out, text+config)
	return nil
}

// configSnapshots reads the snapshots revs' configuration records name (see
// rolloutview.ConfigDiff): one that is gone is left out, one that cannot be read is
// named with the reason (a user who may not read Secrets still sees the rest).
func configSnapshots(ctx context.Context, client kubernetes.Interface, namespace string, revs ...rolloutview.Revision) rolloutview.ConfigObjects {
	objs := rolloutview.ConfigObjects{ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{}, Unreadable: map[string]string{}}
	unreadable := func(name string, err error) {
		if !apierrors.IsNotFound(err) {
			objs.Unreadable[name] = string(apierrors.ReasonForError(err))
			if objs.Unreadable[name] == "" {
				objs.Unreadable[name] = err.Error()
			}
		}
	}
	configMaps, secrets := rolloutview.SnapshotNames(revs...)
	for _, name := range configMaps {
		cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			unreadable(name, err)
			continue
		}
		objs.ConfigMaps[name] = cm
	}
	for _, name := range secrets {
		s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			unreadable(name, err)
			continue
		}
		objs.Secrets[name] = s
	}
	return objs
}

func joinNumbers(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}
