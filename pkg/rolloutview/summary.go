package rolloutview

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/kroll-dev/kroll/pkg/staging"
)

// Verdict is `kroll status`'s word for a rollout, as the batch status script of the
// upgrade-strategies article has it.
type Verdict string

const (
	Succeeded Verdict = "succeeded"
	Updating  Verdict = "updating"
	Failing   Verdict = "failed"
	Halted    Verdict = "paused"
	// Reverted and HeldOnFailure are failed rollouts kroll's controller acted on.
	Reverted      Verdict = "rolled-back"
	HeldOnFailure Verdict = "paused-on-failure"
)

// VerdictOf maps a phase to the script's words.
func VerdictOf(p Progress) Verdict {
	switch p.Phase {
	case Complete:
		return Succeeded
	case Failed:
		return Failing
	case Paused:
		return Halted
	case RolledBack:
		return Reverted
	case PausedOnFailure:
		return HeldOnFailure
	}
	return Updating
}

// Summary is `kroll status`: one row per workload, in the order given, with what is
// holding up each one that is not done. withNamespace adds kubectl's NAMESPACE column.
//
//	NAMESPACE  NAME              STATUS     UPDATED  AVAILABLE  DESIRED  DETAIL
//	default    deployment/web    updating   5        8          10       waiting on web-6f9c7d-abcde: ImagePullBackOff
func Summary(ps []Progress, withNamespace bool) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := "NAME\tSTATUS\tUPDATED\tAVAILABLE\tDESIRED\tDETAIL"
	if withNamespace {
		head = "NAMESPACE\t" + head
	}
	fmt.Fprintln(w, head)
	for _, p := range ps {
		if withNamespace {
			fmt.Fprintf(w, "%s\t", p.Namespace)
		}
		d := detail(p)
		if r := p.Resizing.String(); r != "" {
			d = strings.TrimPrefix(d+"; "+r, "; ")
		}
		fmt.Fprintf(w, "%s/%s\t%s\t%d\t%d\t%d\t%s\n", p.Kind, p.Name, VerdictOf(p), p.Updated, p.Available, p.Desired, d)
	}
	w.Flush()
	return b.String()
}

func detail(p Progress) string {
	switch {
	case p.Phase == Complete:
		return ""
	case p.Err == nil && p.Staged.Held():
		return p.Staged.Where()
	case p.onDelete:
		return fmt.Sprintf("OnDelete: %d pods to delete", p.Desired-p.Updated)
	case p.Err != nil && p.Blocking != nil:
		return p.Err.Error() + "; waiting on " + p.Blocking.String()
	case p.Err != nil:
		return p.Err.Error()
	case p.Blocking != nil && p.Staged != nil && p.Staged.Phase == staging.Progressing:
		return p.Staged.Message + "; waiting on " + p.Blocking.String()
	case p.Blocking != nil:
		return "waiting on " + p.Blocking.String()
	}
	return strings.TrimSuffix(p.Message, "...")
}

// Failures counts the failed rollouts among ps, those kroll's controllers rolled back
// or paused on failure included: `kroll status` exits 1 when any.
func Failures(ps []Progress) int {
	n := 0
	for _, p := range ps {
		if p.Failed() {
			n++
		}
	}
	return n
}

// Failed tells a rollout that cannot finish as it is: Failed, RolledBack (its revision
// was given up) or PausedOnFailure.
func (p Progress) Failed() bool {
	return p.Phase == Failed || p.Phase == RolledBack || p.Phase == PausedOnFailure
}
