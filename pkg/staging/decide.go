package staging

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Record is the recorded progress of a staged rollout (StepAnnotation and the two
// beside it).
type Record struct {
	// Done is how many steps are done; Total how many there are. Done == Total: the
	// steps are done and the rollout finishes.
	Done, Total int
	// Revision is the revision the steps run for.
	Revision string
	// Since is when Done last changed.
	Since time.Time
}

// String is the record as StepAnnotation holds it: "1/5".
func (r Record) String() string { return fmt.Sprintf("%d/%d", r.Done, r.Total) }

// RecordOf reads the record from a workload's annotations; ok is false without one, or
// with one that does not parse. A record without a time is read with a zero Since.
func RecordOf(annotations map[string]string) (r Record, ok bool) {
	v, found := annotations[StepAnnotation]
	if !found {
		return Record{}, false
	}
	done, total, found := strings.Cut(v, "/")
	var err1, err2 error
	r.Done, err1 = strconv.Atoi(strings.TrimSpace(done))
	r.Total, err2 = strconv.Atoi(strings.TrimSpace(total))
	if !found || err1 != nil || err2 != nil || r.Done < 0 || r.Total < 1 || r.Done > r.Total {
		return Record{}, false
	}
	r.Revision = annotations[StepRevisionAnnotation]
	if t, err := time.Parse(time.RFC3339, annotations[StepSinceAnnotation]); err == nil {
		r.Since = t
	}
	return r, true
}

// Set writes r into annotations (which must not be nil).
func (r Record) Set(annotations map[string]string) {
	annotations[StepAnnotation] = r.String()
	annotations[StepRevisionAnnotation] = r.Revision
	annotations[StepSinceAnnotation] = r.Since.UTC().Format(time.RFC3339)
}

// Clear removes the record from annotations and reports whether there was one.
func Clear(annotations map[string]string) bool {
	found := false
	for _, k := range []string{StepAnnotation, StepRevisionAnnotation, StepSinceAnnotation} {
		if _, ok := annotations[k]; ok {
			delete(annotations, k)
			found = true
		}
	}
	return found
}

// Promote moves a workload's recorded steps one on, or with full to the end, as
// `kroll rollout promote` does; it returns the record to write. It refuses a workload
// without valid steps, without a record yet (its controller has not started the
// staged rollout), and one whose steps are done.
func Promote(annotations map[string]string, full bool, now time.Time) (Record, error) {
	s := SettingsOf(annotations)
	if p := s.Problem(); p != "" {
		return Record{}, fmt.Errorf("%s", p)
	}
	if len(s.Steps) == 0 {
		return Record{}, fmt.Errorf("it has no %s: there is no step to promote to", StepsAnnotation)
	}
	r, ok := RecordOf(annotations)
	if !ok {
		return Record{}, fmt.Errorf("no staged rollout has started yet (no %s)", StepAnnotation)
	}
	r.Total = len(s.Steps)
	if r.Done >= r.Total {
		return Record{}, fmt.Errorf("all %d steps are done already", r.Total)
	}
	r.Done++
	if full {
		r.Done = r.Total
	}
	r.Since = now
	return r, nil
}

// Progress is what a controller sees of the revision it rolls out.
type Progress struct {
	// Revision is the revision rolled out (as StepRevisionAnnotation names it).
	Revision string
	// Rollback: the revision ran before (see the package doc): it is never staged.
	Rollback bool
	// Desired is the desired replicas (a DaemonSet: the nodes that should run a pod).
	Desired int32
	// Updated are the pods of the revision (a DaemonSet: the nodes running one),
	// UpdatedAvailable those of them available, Failed those of them failed
	// (failure.PodFailure); Old are the pods of older revisions still running.
	Updated, UpdatedAvailable, Failed, Old int32
	// Paused: the rollout is paused (spec.paused, or kroll's pause on failure); no
	// step is done while it is.
	Paused bool
}

// Phase is where a staged rollout is; it is also the reason of the Staged condition.
type Phase string

const (
	// Unstaged: nothing holds the rollout (no settings, invalid ones, a rollback, a
	// partition of 0).
	Unstaged Phase = ""
	// Progressing: rolling out toward the partition or the current step's share.
	Progressing Phase = "Progressing"
	// PartitionReached: held at kroll.dev/partition.
	PartitionReached Phase = "PartitionReached"
	// StepPaused: at a bare pause, until `kroll rollout promote`.
	StepPaused Phase = "StepPaused"
	// StepWaiting: at a timed pause, until Decision.Until.
	StepWaiting Phase = "StepWaiting"
	// StepsDone: every step is done; the rollout finishes (partition 0).
	StepsDone Phase = "StepsDone"
)

// ConditionType is the status condition that reports a staged rollout (status True,
// reason the Phase, message Decision.Message); absent while Unstaged.
const ConditionType = "Staged"

// EventReason is the reason of the Normal event a controller records each time the
// Staged condition's message changes step.
const EventReason = "RolloutStep"

// Decision is what a staged rollout does now.
type Decision struct {
	Phase Phase
	// Partition is how many pods (nodes) stay on the old revisions now: the rollout
	// moves until Desired−Partition pods are updated, and stops there. 0 when
	// Unstaged or StepsDone.
	Partition int32
	// Record is the record the workload should carry (nil: none); Write tells that it
	// differs from the recorded one (or removes it), and must be written, alone, before
	// anything else of this decision is done.
	Record *Record
	Write  bool
	// Until is when a timed pause ends (StepWaiting): look again then. Zero once that
	// time has passed (the pause then waits on a failed pod or a pause of the rollout).
	Until time.Time
	// Message says where the rollout is, with the numbers: "step 1/5: 10% (2 of 20
	// updated), paused until promoted". Empty when Unstaged.
	Message string
}

// Decide decides a staged rollout from its settings, the recorded step (nil without
// one) and what the controller sees now. Steps are done in order, as many as hold now
// (each needs the one before): a share step is done when Desired−Partition pods of the
// revision are updated and available, no more than Partition old pods are left, none
// of its pods failed and the rollout is not paused; a timed pause when its time has
// passed (none failed, not paused); a bare pause only by `kroll rollout promote`.
// A new revision with no old pod (the workload's first) is not held.
//
// With 20 replicas and "10%, pause, 50%, pause: 5s, 100%": partition 18 until 2 pods
// are updated and available, then 1/5 (paused until promoted); promoted to 2/5,
// partition 10; at 10 updated 3/5, five seconds later 4/5, partition 0, and at 20
// updated 5/5.
func Decide(s Settings, recorded *Record, p Progress, now time.Time) Decision {
	switch {
	case !s.Staged() || p.Rollback:
		return Decision{Write: recorded != nil}
	case len(s.Steps) == 0:
		return decidePartition(ResolvePartition(*s.Partition, p.Desired), recorded, p)
	}
	n := len(s.Steps)
	r := Record{Total: n, Revision: p.Revision, Since: now}
	write := true
	switch {
	case recorded != nil && recorded.Revision == p.Revision:
		r, write = *recorded, false
		if r.Total != n || r.Since.IsZero() {
			r.Total, r.Done, write = n, min(r.Done, n), true
		}
		if r.Since.IsZero() {
			r.Since = now
		}
	case p.Old == 0:
		// A new revision with no old pod to hold (the workload's first): the steps
		// are done at once, as a partition holds nothing then.
		r.Done = n
	}
	d := Decision{Record: &r}
	for {
		if r.Done >= n {
			d.Phase = StepsDone
			d.Message = fmt.Sprintf("step %s: all steps done (%d of %d updated)", r, p.Updated, p.Desired)
			break
		}
		step, label, held := s.Steps[r.Done], "0%", p.Desired
		for _, before := range s.Steps[:r.Done] {
			if !before.Pause {
				label, held = before.String(), p.Desired-before.Updated(p.Desired)
			}
		}
		free := p.Failed == 0 && !p.Paused
		switch {
		case !step.Pause:
			held = p.Desired - step.Updated(p.Desired)
			if free && reached(p, held) {
				r.Done, r.Since, write = r.Done+1, now, true
				continue
			}
			d.Phase, d.Partition = Progressing, held
			d.Message = fmt.Sprintf("step %s: rolling out to %s (%d of %d updated)", r, step, p.Updated, p.Desired)
		case step.For > 0:
			until := r.Since.Add(step.For)
			if free && !now.Before(until) {
				r.Done, r.Since, write = r.Done+1, now, true
				continue
			}
			d.Phase, d.Partition = StepWaiting, held
			if until.After(now) {
				// Past it, the pause waits for a pod to heal or a resume, which bring
				// the workload back by themselves: no timer to set.
				d.Until = until
			}
			d.Message = fmt.Sprintf("step %s: %s (%d of %d updated), paused for %s until %s",
				r, label, p.Updated, p.Desired, step.For, until.UTC().Format(time.RFC3339))
		default:
			d.Phase, d.Partition = StepPaused, held
			d.Message = fmt.Sprintf("step %s: %s (%d of %d updated), paused until promoted", r, label, p.Updated, p.Desired)
		}
		break
	}
	d.Write = write
	return d
}

// decidePartition decides kroll.dev/partition alone: the rollout moves until
// Desired−partition pods are updated, and stays there. With no old pod left there is
// nothing to keep: a workload's first revision, or a partition set after its rollout
// finished.
func decidePartition(partition int32, recorded *Record, p Progress) Decision {
	d := Decision{Write: recorded != nil}
	if partition == 0 || p.Old == 0 {
		return d
	}
	d.Partition = partition
	d.Phase = Progressing
	if reached(p, partition) {
		d.Phase = PartitionReached
		d.Message = fmt.Sprintf("partition %d reached: %d of %d updated, %d kept on the old revisions", partition, p.Updated, p.Desired, p.Old)
	} else {
		d.Message = fmt.Sprintf("partition %d: rolling out to %d of %d (%d updated)", partition, p.Desired-partition, p.Desired, p.Updated)
	}
	return d
}

// reached tells a rollout at a partition: Desired−partition pods updated and available,
// and no more than partition old ones left.
func reached(p Progress, partition int32) bool {
	target := p.Desired - partition
	return p.Updated >= target && p.UpdatedAvailable >= target && p.Old <= partition
}
