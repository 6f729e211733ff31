package staging

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// The annotations a workload's staging is set with.
const (
	PartitionAnnotation = "kroll.dev/partition"
	StepsAnnotation     = "kroll.dev/rollout-steps"
)

// The records kroll keeps of a staged rollout. They are not settings: kroll and its
// CLI write them.
const (
	// StepAnnotation is the steps done of the steps: "1/5".
	StepAnnotation = "kroll.dev/rollout-step"
	// StepRevisionAnnotation is the revision the recorded steps run for: a Deployment's
	// new ReplicaSet's pod-template-hash, a StatefulSet's or DaemonSet's update
	// revision (the ControllerRevision's name).
	StepRevisionAnnotation = "kroll.dev/rollout-step-revision"
	// StepSinceAnnotation is when the recorded step count last changed (RFC 3339).
	StepSinceAnnotation = "kroll.dev/rollout-step-since"
	// AbortAnnotation asks the controller to roll back the named revision (a
	// Deployment's revision number, "5"; a StatefulSet's update revision or a
	// DaemonSet's newest ControllerRevision, by name) as its failure policy's rollback
	// does; the rollback's write removes it, and a request naming another revision is
	// removed with a Warning event AbortIgnored.
	AbortAnnotation = "kroll.dev/abort"
)

// Records are the annotation keys kroll writes for staged rollouts, never copied to a
// revision.
var Records = []string{StepAnnotation, StepRevisionAnnotation, StepSinceAnnotation, AbortAnnotation}

// Step is one step of kroll.dev/rollout-steps: a share of pods updated, a pause, or
// an analysis.
type Step struct {
	// Share is the pods updated once this step is reached: a count (3) or a percentage
	// of the desired replicas or eligible nodes ("10%", rounded up). Unset (the zero
	// IntOrString with Pause true) for a pause.
	Share intstr.IntOrString
	// Pause marks a pause step; For is how long it waits, zero for a pause that waits
	// for `kroll rollout promote`.
	Pause bool
	For   time.Duration
	// Analyze marks an analysis step ("analyze"; Pause is true too): the rollout holds
	// at the share before it until the workload's kroll.dev/analysis (pkg/analysis)
	// succeeds, which advances it; failed, the workload's failure policy acts;
	// inconclusive or with Prometheus unreachable, it stays paused with a condition
	// saying why. Decide holds it as a bare pause; the controllers run the analysis
	// there when they have a Prometheus (controller.AnalyzeStep). Without one it
	// stays a bare pause: until promoted, so that no rollout advances on an
	// analysis not made.
	Analyze bool
}

// String is the step as written in the annotation: "10%", "3", "pause", "pause: 2m0s".
func (s Step) String() string {
	switch {
	case s.Analyze:
		return "analyze"
	case !s.Pause:
		return s.Share.String()
	case s.For > 0:
		return "pause: " + s.For.String()
	default:
		return "pause"
	}
}

// Updated is how many of total pods a share step updates: a percentage rounded up (10%
// of 5 is 1: a canary step updates at least one pod), a count capped at total.
func (s Step) Updated(total int32) int32 {
	return min(total, max(0, scaled(s.Share, total)))
}

// Settings are a workload's staging settings, read from its annotations.
type Settings struct {
	// Partition is kroll.dev/partition: pods or nodes kept on the old revisions; nil
	// when unset, or when Steps govern.
	Partition *intstr.IntOrString
	// Steps are kroll.dev/rollout-steps; empty when unset.
	Steps []Step
	// Problems are the annotations that did not parse, one line each naming the
	// annotation, its value and the accepted form; with any, Partition and Steps are
	// unset (the workload rolls out as without them).
	Problems []string
}

// Staged tells settings that hold a rollout: a partition, or steps.
func (s Settings) Staged() bool { return s.Partition != nil || len(s.Steps) > 0 }

// Problem is the one line that reports invalid settings, for a Warning event and a
// condition; empty when they are valid.
func (s Settings) Problem() string {
	if len(s.Problems) == 0 {
		return ""
	}
	return strings.Join(s.Problems, "; ") + "; the rollout is not staged"
}

// The accepted forms, as the problems name them.
const (
	partitionForm = "a whole number of pods of at least 0 (10) or a percentage of at most 100% (50%)"
	stepsForm     = `a comma-separated list of shares of pods updated (10%, 3), pauses ("pause" until promoted, "pause: 2m") and analyses ("analyze", the checks of kroll.dev/analysis), like "10%, pause, 50%, pause: 5m, 100%" or "10%, analyze, 50%, analyze, 100%"`
)

// SettingsOf reads the staging settings from a workload's annotations. Any invalid
// value turns staging off and is listed in Problems.
func SettingsOf(annotations map[string]string) Settings {
	var s Settings
	if v, ok := annotations[PartitionAnnotation]; ok {
		if p, ok := parseShare(v); ok {
			s.Partition = &p
		} else {
			s.Problems = append(s.Problems, fmt.Sprintf("%s=%q is not valid: want %s", PartitionAnnotation, v, partitionForm))
		}
	}
	if v, ok := annotations[StepsAnnotation]; ok {
		if steps, err := ParseSteps(v); err == nil {
			s.Steps = steps
		} else {
			s.Problems = append(s.Problems, fmt.Sprintf("%s=%q is not valid (%v): want %s", StepsAnnotation, v, err, stepsForm))
		}
	}
	if len(s.Problems) > 0 {
		return Settings{Problems: s.Problems}
	}
	if len(s.Steps) > 0 {
		s.Partition = nil
	}
	return s
}

// ParseSteps reads kroll.dev/rollout-steps. Shares must not decrease: a rollout never
// takes updated pods back.
func ParseSteps(v string) ([]Step, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("no steps")
	}
	var steps []Step
	// The last share, in percent and in pods, for the order check: a count and a
	// percentage are not compared, their order depends on the replicas.
	last, lastCount := -1, -1
	for i, raw := range strings.Split(v, ",") {
		item := strings.TrimSpace(raw)
		if item == "analyze" {
			steps = append(steps, Step{Pause: true, Analyze: true})
			continue
		}
		if rest, ok := strings.CutPrefix(item, "pause"); ok {
			rest = strings.TrimSpace(rest)
			if rest == "" {
				steps = append(steps, Step{Pause: true})
				continue
			}
			d, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return nil, fmt.Errorf("step %d %q: a pause is \"pause\" or \"pause: 2m\"", i+1, item)
			}
			dur, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil || dur <= 0 {
				return nil, fmt.Errorf("step %d %q: the pause needs a positive duration like 30s or 2m", i+1, item)
			}
			steps = append(steps, Step{Pause: true, For: dur})
			continue
		}
		share, ok := parseShare(item)
		if !ok {
			return nil, fmt.Errorf("step %d %q is neither a share of pods (10%%, 3) nor a pause nor \"analyze\"", i+1, item)
		}
		if share.Type == intstr.String {
			n, _ := strconv.Atoi(strings.TrimSuffix(share.StrVal, "%"))
			if n < last {
				return nil, fmt.Errorf("step %d %q is below the step before it: shares must not decrease", i+1, item)
			}
			last = n
		} else {
			if int(share.IntVal) < lastCount {
				return nil, fmt.Errorf("step %d %q is below the step before it: shares must not decrease", i+1, item)
			}
			lastCount = int(share.IntVal)
		}
		steps = append(steps, Step{Share: share})
	}
	return steps, nil
}

// parseShare reads "10" or "10%": a count of at least 0, a percentage from 0% to 100%.
func parseShare(v string) (intstr.IntOrString, bool) {
	v = strings.TrimSpace(v)
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(pct)
		return intstr.FromString(v), err == nil && n >= 0 && n <= 100
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return intstr.FromInt32(int32(n)), err == nil && n >= 0
}

// scaled is v of total: a count as is, a percentage rounded up.
func scaled(v intstr.IntOrString, total int32) int32 {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(total), true)
	if err != nil {
		return 0
	}
	return int32(n)
}

// ResolvePartition is how many of total pods (or nodes) partition keeps on the old
// revisions: a count capped at total, a percentage rounded up (50% of 5 keeps 3, as a
// CloneSet's partition does). A partition resolves again whenever total changes: a
// count stays a count, 50% of 40 is 20.
func ResolvePartition(partition intstr.IntOrString, total int32) int32 {
	return min(total, max(0, scaled(partition, total)))
}

// StatefulSetSettingsOf reads a StatefulSet's staging settings: a StatefulSet has
// spec.updateStrategy.rollingUpdate.partition, so kroll.dev/partition alone is a
// problem naming that field (with steps, the steps govern, as on every kind).
func StatefulSetSettingsOf(annotations map[string]string) Settings {
	s := SettingsOf(annotations)
	if v, ok := annotations[PartitionAnnotation]; ok && len(s.Steps) == 0 && len(s.Problems) == 0 {
		return Settings{Problems: []string{fmt.Sprintf("%s=%q is for Deployments and DaemonSets: a StatefulSet keeps pods on its current revision with spec.updateStrategy.rollingUpdate.partition; set that field and remove the annotation",
			PartitionAnnotation, v)}}
	}
	return s
}
