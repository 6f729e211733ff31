package failure

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// The annotations a workload's failure policy is set with.
const (
	OnFailureAnnotation        = "kroll.dev/on-failure"
	ThresholdAnnotation        = "kroll.dev/failure-threshold"
	RestartsAnnotation         = "kroll.dev/failure-restarts"
	ReadyTimeoutAnnotation     = "kroll.dev/ready-timeout"
	ProgressDeadlineAnnotation = "kroll.dev/progress-deadline-seconds"
)

// The records kroll keeps of what it did. They are not settings: kroll writes them.
const (
	// RolledBackFromAnnotation is on a workload kroll rolled back: the revision it went
	// back from ("5").
	RolledBackFromAnnotation = "kroll.dev/rolled-back-from"
	// PausedOnFailureAnnotation is on a workload kroll paused: the revision that failed.
	// A workload resumed by its user is not paused again for that revision.
	PausedOnFailureAnnotation = "kroll.dev/paused-on-failure"
	// CompleteAnnotation is on a Deployment's ReplicaSet, or a StatefulSet's or
	// DaemonSet's ControllerRevision, whose revision completed once ("true"): a
	// rollback may go back to it, and a rollout to it is not judged (see complete.go).
	CompleteAnnotation = "kroll.dev/complete"
	// PausedAnnotation ("true") stops kroll's DaemonSet controller replacing pods, as
	// spec.paused stops a Deployment; kroll sets it on failure, `kroll rollout resume`
	// clears it.
	PausedAnnotation = "kroll.dev/paused"
	// PartitionBeforePauseAnnotation is on a StatefulSet kroll paused by raising its
	// partition: the partition it had before ("0"), which `kroll rollout resume` puts back.
	PartitionBeforePauseAnnotation = "kroll.dev/partition-before-pause"
)

// Action is what to do when a rollout fails.
type Action string

const (
	// None does nothing: upstream's behaviour (a Deployment reports
	// ProgressDeadlineExceeded and waits).
	None Action = "None"
	// Rollback goes back to the last revision that completed.
	Rollback Action = "Rollback"
	// Pause stops the rollout where it is.
	Pause Action = "Pause"
)

// Defaults of the policy's numbers.
const (
	DefaultRestarts  = 3
	defaultThreshold = 1
)

// Policy is a workload's failure policy, read from its annotations.
type Policy struct {
	// Action is what to do on failure; None when the workload did not opt in, or when
	// any annotation of the policy is invalid (Problems says which).
	Action Action
	// Threshold is how many failed new pods fail the rollout: an integer, or a
	// percentage of the desired replicas (see FailedPodsAllowed).
	Threshold intstr.IntOrString
	// Restarts is the restart count at which a container is failed; at least 1.
	Restarts int32
	// ReadyTimeout is how long a pod whose containers all run may stay not Ready; zero
	// means never.
	ReadyTimeout time.Duration
	// ProgressDeadline is the progress deadline of a StatefulSet or DaemonSet, in
	// seconds; nil without one (a Deployment has its own field).
	ProgressDeadline *int32
	// Problems are the annotations that did not parse, one line each naming the
	// annotation, its value and the accepted values; empty when all did.
	Problems []string
}

// Watched tells a policy that acts on failure.
func (p Policy) Watched() bool { return p.Action == Rollback || p.Action == Pause }

// PolicyOf reads the failure policy from a workload's annotations. Any invalid value
// turns the policy off (Action None) and is listed in Problems; the progress deadline
// is kept apart (a StatefulSet's Progressing condition is reported without on-failure).
func PolicyOf(annotations map[string]string) Policy {
	p := Policy{Action: None, Threshold: intstr.FromInt32(defaultThreshold), Restarts: DefaultRestarts}
	var problems []string
	bad := func(key, value, want string) {
		problems = append(problems, fmt.Sprintf("%s=%q is not valid: want %s", key, value, want))
	}
	if v, ok := annotations[OnFailureAnnotation]; ok {
		switch Action(v) {
		case None, Rollback, Pause:
			p.Action = Action(v)
		default:
			bad(OnFailureAnnotation, v, "Rollback, Pause or None")
		}
	}
	if v, ok := annotations[ThresholdAnnotation]; ok {
		if t, ok := parseThreshold(v); ok {
			p.Threshold = t
		} else {
			bad(ThresholdAnnotation, v, "a whole number of pods of at least 1 (2) or a percentage of the replicas (25%)")
		}
	}
	if v, ok := annotations[RestartsAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			bad(RestartsAnnotation, v, "a whole number of restarts of at least 1")
		} else {
			p.Restarts = int32(n)
		}
	}
	if v, ok := annotations[ReadyTimeoutAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad(ReadyTimeoutAnnotation, v, "a positive duration like 60s or 5m")
		} else {
			p.ReadyTimeout = d
		}
	}
	if v, ok := annotations[ProgressDeadlineAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || n == math.MaxInt32 {
			bad(ProgressDeadlineAnnotation, v, "a whole number of seconds of at least 1")
		} else {
			s := int32(n)
			p.ProgressDeadline = &s
		}
	}
	if len(problems) > 0 {
		p.Action, p.Problems = None, problems
	}
	return p
}

// parseThreshold reads "3" or "25%"; a number must be at least 1, a percentage above 0
// and at most 100.
func parseThreshold(v string) (intstr.IntOrString, bool) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(pct)
		return intstr.FromString(v), err == nil && n > 0 && n <= 100
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return intstr.FromInt32(int32(n)), err == nil && n >= 1
}

// FailedPodsAllowed is the number of failed new pods at which a rollout to desired
// replicas fails: the threshold, a percentage rounded up, never below 1. 25% of 20 is
// 5: the 5th failed pod fails the rollout, the 4th does not.
func (p Policy) FailedPodsAllowed(desired int32) int32 {
	n, err := intstr.GetScaledValueFromIntOrPercent(&p.Threshold, int(desired), true)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// Problem is the one line that reports an invalid policy, for a Warning event and the
// FailurePolicy condition.
func (p Policy) Problem() string {
	if len(p.Problems) == 0 {
		return ""
	}
	return strings.Join(p.Problems, "; ") + "; the rollout is not watched for failure (as with " + OnFailureAnnotation + "=None)"
}

// String is the policy as `kroll rollout plan` shows it.
func (p Policy) String() string {
	if len(p.Problems) > 0 {
		return "invalid: " + p.Problem()
	}
	if !p.Watched() {
		return "none (a failing rollout waits, as upstream's does)"
	}
	s := fmt.Sprintf("%s when %s new pods fail (a container waiting in an error, %d restarts", p.Action, p.Threshold.String(), p.Restarts)
	if p.ReadyTimeout > 0 {
		s += fmt.Sprintf(", or not Ready %s after starting", p.ReadyTimeout)
	}
	s += ")"
	if p.ProgressDeadline != nil {
		s += fmt.Sprintf(" or after %ds without progress", *p.ProgressDeadline)
	}
	return s
}
