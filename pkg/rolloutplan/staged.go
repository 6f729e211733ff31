package rolloutplan

import (
	"fmt"

	"github.com/kroll-dev/kroll/pkg/staging"
)

// stage is one stretch of a staged rollout as the plan replays it (see pkg/staging):
// the rollout runs until partition pods (a DaemonSet: nodes) are left on the old
// revisions, then waits as hold says before the next stage.
type stage struct {
	// label names the stage in the notes: "step 1/5: 10%", "partition 7"; empty for a
	// rollout that is not staged (one stage, partition 0).
	label string
	// partition is the pods or nodes kept on the old revisions at the end of the stage.
	partition int32
	// hold is what the rollout waits for after the stage: "paused until promoted (kroll
	// rollout promote)", "paused for 2m0s"; empty when it goes straight on.
	hold string
}

// stagesOf reads the changed workload's staging settings (already read by settingsOf)
// into stages over desired pods or nodes. Steps are planned from the first, as a new
// template starts them: with 20 replicas and "10%, pause, 50%, pause: 5s, 100%", step
// 1/5 to partition 18 then paused until promoted, step 3/5 to partition 10 then
// paused for 5s, step 5/5 to 0. Steps whose last share leaves pods behind finish
// with one more stage, as the controller finishes them. kroll.dev/partition is one
// stage that stays.
func stagesOf(s staging.Settings, desired int32) []stage {
	switch {
	case len(s.Steps) > 0:
		var out []stage
		n := len(s.Steps)
		for i, step := range s.Steps {
			if step.Pause {
				hold := "paused until promoted (kroll rollout promote)"
				if step.For > 0 {
					hold = "paused for " + step.For.String()
				}
				if len(out) == 0 {
					out = append(out, stage{label: fmt.Sprintf("step %d/%d: 0%%", i, n), partition: desired})
				}
				out[len(out)-1].hold = hold
				continue
			}
			out = append(out, stage{label: fmt.Sprintf("step %d/%d: %s", i+1, n, step), partition: desired - step.Updated(desired)})
		}
		if last := out[len(out)-1]; last.partition > 0 {
			out = append(out, stage{label: fmt.Sprintf("after step %d/%d: the rest", n, n)})
		}
		return out
	case s.Partition != nil:
		p := staging.ResolvePartition(*s.Partition, desired)
		return []stage{{label: fmt.Sprintf("partition %d", p), partition: p,
			hold: fmt.Sprintf("held at %s: lower or remove it to go on", staging.PartitionAnnotation)}}
	}
	return []stage{{}}
}

// stageNote says what one stage of the plan does: "step 1/5: 10%: batches 1–2 (2 of 20
// updated), then paused until promoted (kroll rollout promote)". first and last are
// the stage's batches (1-based; last < first when it has none).
func stageNote(st stage, first, last int, updated, desired int32) string {
	batches := fmt.Sprintf("batches %d–%d", first, last)
	switch {
	case last < first:
		batches = "no batch"
	case first == last:
		batches = fmt.Sprintf("batch %d", first)
	}
	note := fmt.Sprintf("%s: %s (%d of %d updated)", st.label, batches, updated, desired)
	if st.hold != "" {
		note += ", then " + st.hold
	}
	return note
}
