package rolloutview

import (
	"fmt"
	"time"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

// TimelineTitle is the title of the chart of t, the recorded rollout of ref
// ("deployment/web"), whose rollout now is p: the revision, with its change-cause when
// one is recorded and t is p's latest revision (a configuration rollout names what
// changed), and the rollback the record holds.
//
//	deployment/web → revision 2
//	deployment/web → revision 3 (configmap/app-config changed)
//	deployment/web → revision 6 (configmap/app-config changed), rolled back from 5
//
// For an older record (a revision made since has not stamped one yet) the cause is
// another revision's, and left out.
func TimelineTitle(ref string, t timeline.Timeline, p Progress) string {
	title := fmt.Sprintf("%s → revision %s", ref, t.Revision)
	if p.Cause != "" && t.Revision != "" && t.Revision == p.RecordedRevision() {
		title += " (" + p.Cause + ")"
	}
	if t.Rollback != nil {
		// The record holds the failed rollout too: the chart marks the rollback.
		title += ", rolled back from " + t.Rollback.Failed
	}
	return title
}

// WaitLines say, one a line, when a PodDisruptionBudget held the rollout t records
// (times since its start, to a tenth of a second, as `kroll rollout timeline` prints
// its span):
//
//	waited 2.5s on PodDisruptionBudget web-pdb, from 3.5s to 6s
//	waiting on PodDisruptionBudget web-pdb since 24.3s
func WaitLines(t timeline.Timeline) []string {
	var out []string
	for _, w := range t.Waits {
		from, to := w.From.Round(100*time.Millisecond), w.To.Round(100*time.Millisecond)
		if w.Open {
			out = append(out, fmt.Sprintf("waiting on PodDisruptionBudget %s since %s", w.PDB, from))
			continue
		}
		out = append(out, fmt.Sprintf("waited %s on PodDisruptionBudget %s, from %s to %s", to-from, w.PDB, from, to))
	}
	return out
}
