package rolloutview

import (
	"encoding/json"
	"fmt"
	"slices"
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
		fmt.Fprintf(w, "%s/%s\t%s\t%d\t%d\t%d\t%s\n", p.Kind, p.Name, VerdictOf(p), p.Updated, p.Available, p.Desired, Detail(p))
	}
	w.Flush()
	return b.String()
}

// StatusItem is one workload of `kroll status -o json`: the object `kroll rollout
// status -o json` prints for it (kind, name, phase, counts, staged, failure,
// analysis, ...), with the table's STATUS and DETAIL.
type StatusItem struct {
	Progress
	// Status is the STATUS column: succeeded, updating, failed, paused, rolled-back
	// or paused-on-failure.
	Status Verdict `json:"status"`
	// Detail is the DETAIL column; empty for a finished rollout.
	Detail string `json:"detail"`
}

// StatusJSON is `kroll status -o json`: {"items": [...]}, one StatusItem per
// workload in the order given, indented for reading.
func StatusJSON(ps []Progress) string {
	out := struct {
		Items []StatusItem `json:"items"`
	}{Items: []StatusItem{}}
	for _, p := range ps {
		out.Items = append(out.Items, StatusItem{Progress: p, Status: VerdictOf(p), Detail: Detail(p)})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b) + "\n"
}

// Detail is `kroll status`'s DETAIL column: what holds up a rollout that is not done,
// after what its revision changed when that is recorded ("configmap/app-config
// changed; waiting on …"), and the pods resizing in place when some are.
func Detail(p Progress) string {
	d := detail(p)
	if p.Cause != "" && d != "" {
		d = p.Cause + "; " + d
	}
	if r := p.Resizing.String(); r != "" {
		d = strings.TrimPrefix(d+"; "+r, "; ")
	}
	return d
}

func detail(p Progress) string {
	switch {
	case p.Phase == Complete:
		return ""
	case p.Failure != nil && p.Failure.Recovered:
		return p.Failure.Message + "; healthy since on revision " + shortRevision(p.Revision) + ", complete"
	case p.Err == nil && p.Staged.Held() && p.Analysis.summary() != "":
		return p.Staged.Where() + "; " + p.Analysis.summary()
	case p.Err == nil && p.Staged.Held():
		return p.Staged.Where()
	case p.onDelete:
		return fmt.Sprintf("OnDelete: %d pods to delete", p.Desired-p.Updated)
	case p.Err != nil && p.Blocking != nil:
		return p.Err.Error() + "; waiting on " + p.Blocking.String()
	case p.Err != nil:
		return p.Err.Error()
	case p.DisruptionBudget != "" && p.Blocking != nil:
		// Held by a budget (heldByBudget): which one first, the pod after.
		return p.DisruptionBudget + "; waiting on " + p.Blocking.String()
	case p.DisruptionBudget != "":
		return p.DisruptionBudget
	case p.Blocking != nil && p.Staged != nil && p.Staged.Phase == staging.Progressing:
		return p.Staged.Message + "; waiting on " + p.Blocking.String()
	case p.Blocking != nil:
		return "waiting on " + p.Blocking.String()
	}
	return strings.TrimSuffix(p.Message, "...")
}

// FailOn are the verdicts that also fail `kroll status` (--fail-on): besides the
// rollouts that always fail it, rolled-back ones that recovered, updating ones (a
// watched rollout still waiting for its verdict among them), or paused ones.
type FailOn map[Verdict]bool

// FailOnChoices are the verdicts --fail-on accepts.
var FailOnChoices = []Verdict{Reverted, Updating, Halted}

// ParseFailOn reads --fail-on's values ("rolled-back", "updating", "paused").
func ParseFailOn(values []string) (FailOn, error) {
	f := FailOn{}
	for _, v := range values {
		if !slices.Contains(FailOnChoices, Verdict(v)) {
			return nil, fmt.Errorf("--fail-on=%s is not valid: want one or more of rolled-back, updating, paused", v)
		}
		f[Verdict(v)] = true
	}
	return f, nil
}

// Failures counts the rollouts among ps that fail `kroll status`: those that failed,
// those kroll's controllers paused on failure, those rolled back and not yet healthy on
// a complete revision, and those whose verdict is in also.
func Failures(ps []Progress, also FailOn) int {
	n := 0
	for _, p := range ps {
		if p.Fails(also) {
			n++
		}
	}
	return n
}

// Fails tells whether p fails `kroll status`: the rule its help states. A workload
// rolled back a day ago and healthy since on the revision it went back to (its
// Failure Recovered) is reported rolled-back but fails only with --fail-on=rolled-back:
// a gate run later must not fail on what kroll already healed. One rolled back that is
// still rolling back, or whose restored revision is not complete, fails.
func (p Progress) Fails(also FailOn) bool {
	switch {
	case also[VerdictOf(p)]:
		return true
	case p.Phase == RolledBack:
		return p.Failure == nil || !p.Failure.Recovered
	}
	return p.Phase == Failed || p.Phase == PausedOnFailure
}
