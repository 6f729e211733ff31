// Package disruption holds the pure decisions of kroll's disruption-budget setting:
// whether a workload's rollout takes pods down through the Eviction API (so that the
// API server's PodDisruptionBudget check, shared with `kubectl drain`, limits it), and
// what a rollout held by a budget reports. Controllers call it; it writes nothing.
//
// The protocol, for a Deployment:
//   - The Deployment controller scales old ReplicaSets down exactly as without a budget
//     (maxUnavailable); only how the pods go changes.
//   - The ReplicaSet controller, for a ReplicaSet of an old revision of a Deployment
//     that respects budgets, evicts (pods/eviction) instead of deleting. A refused
//     eviction (429 TooManyRequests: the budget has no disruption left) leaves the pod
//     running, puts the DisruptionBudget condition (False, BudgetExhausted) on the
//     ReplicaSet, and the ReplicaSet is synced again with back-off and whenever a
//     PodDisruptionBudget of its namespace changes.
//   - The Deployment controller copies that condition from its old ReplicaSets, with a
//     Warning event when it appears, and removes it once no old ReplicaSet is held.
//
// StatefulSets and DaemonSets follow the same, without a ReplicaSet in between: the
// pods their rolling update replaces (a StatefulSet's, ordered or with maxUnavailable;
// a DaemonSet's, with maxUnavailable or once a surge pod replaces them) are evicted; a
// refused eviction keeps the pod and the set's own DisruptionBudget condition says
// which budget holds it (NextWait, with a Warning event when the wait begins:
// Announce), retried with back-off and on any change of its namespace's budgets.
//
// In-place restarts (an image change, a resize with resizePolicy RestartContainer)
// cannot go through the Eviction API, which deletes the pod: see PlanTake for the
// budget status update that takes their disruption instead, by the same rules. The
// Deployment controller makes it for its in-place hand-overs (PlanInPlace, before a
// pod is given away, and the release once the pod is Ready again); a StatefulSet's or
// DaemonSet's in-place restarts are not held by budgets yet.
//
// Pods a rollout creates (maxSurge) are never limited: only taking pods down is.
package disruption

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Annotation is the workload setting: Respect or Ignore.
const Annotation = "kroll.dev/disruption-budget"

// Mode is whether a workload's rollouts draw on its PodDisruptionBudgets.
type Mode string

const (
	// Ignore deletes pods as upstream's controllers do: a budget limits only evictions.
	Ignore Mode = "Ignore"
	// Respect evicts every pod a rollout takes down, so a budget limits the rollout too.
	Respect Mode = "Respect"
)

// The condition a workload held by a budget carries, on the workload and on the
// ReplicaSet whose pod an eviction was refused.
const (
	ConditionType         = "DisruptionBudget"
	ReasonBudgetExhausted = "BudgetExhausted"
	// ReasonInvalidAnnotation: the workload's Annotation does not parse (the
	// condition's message says why); it rolls out under the cluster's default.
	ReasonInvalidAnnotation = "InvalidAnnotation"
)

// ParseMode reads a --default-disruption-budget value: exactly Respect or Ignore.
func ParseMode(v string) (Mode, error) {
	switch Mode(v) {
	case Respect, Ignore:
		return Mode(v), nil
	}
	return "", fmt.Errorf("%q is not valid: want Respect or Ignore", v)
}

// ModeOf is the mode a workload with annotations rolls out under: its Annotation, or
// def (the controller manager's --default-disruption-budget) without one. An invalid
// value gives def and a problem line naming the annotation and the accepted values
// (the workload behaves as without the setting, as with every kroll.dev/ setting).
func ModeOf(annotations map[string]string, def Mode) (Mode, string) {
	v, ok := annotations[Annotation]
	if !ok {
		return def, ""
	}
	if m, err := ParseMode(v); err == nil {
		return m, ""
	}
	return def, fmt.Sprintf("%s=%q is not valid: want Respect or Ignore", Annotation, v)
}

// Problem is ModeOf's problem line alone: "" when the setting is absent or valid.
func Problem(annotations map[string]string) string {
	_, p := ModeOf(annotations, Ignore)
	return p
}

// Evicts tells whether a ReplicaSet's scale-down evicts its pods: only under Respect,
// and only for a ReplicaSet a Deployment controls that is not the Deployment's current
// revision (oldRevision). Scaling the current revision down is the user's own change
// of replicas, which a budget does not hold back (the disruption controller counts the
// pods it expects from the Deployment's replicas, so a budget above the new count
// would hold the scale-down forever); a bare ReplicaSet has no rollout.
func Evicts(mode Mode, ownedByDeployment, oldRevision bool) bool {
	return mode == Respect && ownedByDeployment && oldRevision
}

// Budget is what a refused eviction is reported with: the PodDisruptionBudget's name
// and its status as last seen.
type Budget struct {
	// Name is the PodDisruptionBudget's; "" when the API server's answer named none.
	Name string
	// Known: the budget was in the informer's cache, and the numbers below are its
	// status; false leaves them zero and out of the message.
	Known bool
	// DisruptionsAllowed, DesiredHealthy, CurrentHealthy and ExpectedPods are its status.
	DisruptionsAllowed, DesiredHealthy, CurrentHealthy, ExpectedPods int32
}

// Refused tells an error of an eviction that the budget refused it (429
// TooManyRequests) and which budget: the name from the API server's
// DisruptionBudget cause ("The disruption budget web-pdb needs 8 healthy pods and has
// 8 currently"), "" if it gave none. Any other error is not a refusal.
func Refused(err error) (pdb string, refused bool) {
	if !apierrors.IsTooManyRequests(err) {
		return "", false
	}
	var status apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	}
	if status == nil || status.Status().Details == nil {
		return "", true
	}
	const prefix = "The disruption budget "
	for _, c := range status.Status().Details.Causes {
		if rest, ok := strings.CutPrefix(c.Message, prefix); ok {
			if name, _, _ := strings.Cut(rest, " "); name != "" {
				return name, true
			}
		}
	}
	return "", true
}

// Reach is the most healthy pods a rollout can have while it takes pods down, and
// why, for a message: a rolling update of 10 replicas with maxSurge 1 may have 11
// ("10 replicas + maxSurge 1"); Recreate removes every old pod before it creates a
// new one, so it must get down to 0.
type Reach struct {
	Healthy int32
	// Why says where Healthy comes from; Fix what the user can change to let the
	// rollout meet the budget.
	Why, Fix string
}

// RollingReach is the reach of a rolling update of replicas that may surge by surge.
func RollingReach(replicas, surge int32) Reach {
	return Reach{Healthy: replicas + surge, Why: fmt.Sprintf("%d replicas + maxSurge %d", replicas, surge),
		Fix: "raise maxSurge, lower the budget, or delete it"}
}

// RecreateReach is the reach of a Recreate rollout: none of its old pods may stay.
var RecreateReach = Reach{Healthy: 0, Why: "Recreate removes every old pod before creating new ones",
	Fix: "use a RollingUpdate strategy, lower the budget to minAvailable 0, or delete it"}

// Unmeetable tells a budget the rollout can never meet by itself: the budget allows a
// disruption only while more than desiredHealthy pods are healthy, and the rollout has
// at most r.Healthy. minAvailable 10 of 10 with maxSurge 0: 10 ≥ 10+0, never; with
// maxSurge 1 the surge pod, once healthy, makes room for one eviction at a time.
// Under Recreate any budget that keeps a pod is unmeetable.
func Unmeetable(b Budget, r Reach) bool {
	return b.Known && b.DesiredHealthy > 0 && b.DesiredHealthy >= r.Healthy
}

// waitingPrefix begins every Message; HeldBy reads the name after it.
const waitingPrefix = "waiting for PodDisruptionBudget "

// Message is the condition's message for a rollout held by b, with pods still to go
// (≥ 1) and reach r:
//
//	waiting for PodDisruptionBudget web-pdb: 1 pod to take down, disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are)
//
// and, for a budget the rollout cannot meet by itself, what to change.
func Message(b Budget, pods int32, r Reach) string {
	name := b.Name
	if name == "" {
		name = "(unnamed)"
	}
	noun := "pods"
	if pods == 1 {
		noun = "pod"
	}
	msg := fmt.Sprintf(waitingPrefix+"%s: %d %s to take down", name, pods, noun)
	if !b.Known {
		return msg + ", eviction refused"
	}
	msg += fmt.Sprintf(", disruptionsAllowed %d (%d of %d pods must stay healthy, %d are)",
		b.DisruptionsAllowed, b.DesiredHealthy, b.ExpectedPods, b.CurrentHealthy)
	if Unmeetable(b, r) {
		msg += fmt.Sprintf("; the rollout cannot meet this budget by itself: it needs %d healthy pods and the rollout has at most %d (%s); %s",
			b.DesiredHealthy, r.Healthy, r.Why, r.Fix)
	}
	return msg
}

// FixedReach is the reach of a rollout that never adds pods: a StatefulSet's (it
// replaces a pod in its own ordinal) or a DaemonSet's without maxSurge (one pod a
// node): 10 replicas reach 10, so minAvailable 10 is unmeetable.
func FixedReach(pods int32, kind string) Reach {
	return Reach{Healthy: pods, Why: fmt.Sprintf("%d pods; a %s replaces a pod only after removing it", pods, kind),
		Fix: "lower the budget, or delete it"}
}

// Outcome is what a sync's attempts to take pods down met.
type Outcome int

const (
	// NoneTried: the sync took no pod down through a budget (it had none to take, or
	// waited for something else): the condition stays as it is.
	NoneTried Outcome = iota
	// Taken: every pod it tried went (or no budget limits them): the wait, if any, is over.
	Taken
	// Held: a budget refused at least one pod, which stays.
	Held
)

// Wait is the DisruptionBudget condition of a StatefulSet or DaemonSet: Reason and
// Message of a False condition, Since when the rollout began to wait; the zero Wait is
// no condition (the workload is not held, like ReplicaFailure it is shown only while
// it says something).
type Wait struct {
	Reason, Message string
	Since           time.Time
}

// HeldBy is the PodDisruptionBudget a wait names: the name in its Message (see
// Message: "waiting for PodDisruptionBudget web-pdb: …" gives web-pdb) while it is
// BudgetExhausted; "" for no wait, an invalid setting (the rollout is not held), or a
// message of another form. The timeline records it with each stamp.
func (w Wait) HeldBy() string {
	if w.Reason != ReasonBudgetExhausted {
		return ""
	}
	rest, ok := strings.CutPrefix(w.Message, waitingPrefix)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ":")
	return name
}

// NextWait is the condition after a sync whose take-downs met outcome (held:
// message, the Message of that hold), given the condition before (cur, zero without
// one) and done (the rollout has no pod left to take down: its template is rolled
// out, or the workload no longer respects budgets). problem, an invalid setting
// (Problem), wins: it is reported in the same condition (InvalidAnnotation).
// A condition whose message changes keeps Since: the rollout still waits.
//
//	cur none, outcome Held          → BudgetExhausted, since now
//	cur BudgetExhausted, NoneTried  → kept (a sync that tried nothing learnt nothing)
//	cur BudgetExhausted, Taken      → none
//	cur BudgetExhausted, done       → none
func NextWait(cur Wait, outcome Outcome, message, problem string, done bool, now time.Time) Wait {
	next := cur
	switch {
	case problem != "":
		next = Wait{Reason: ReasonInvalidAnnotation, Message: problem}
	case outcome == Held:
		next = Wait{Reason: ReasonBudgetExhausted, Message: message}
	case outcome == Taken || done || cur.Reason != ReasonBudgetExhausted:
		return Wait{}
	}
	if cur.Reason == next.Reason && !cur.Since.IsZero() {
		next.Since = cur.Since
	} else {
		next.Since = now
	}
	return next
}

// Announce is the Warning event (reason, message) to record when a workload's
// condition goes from was to now: one when a wait begins (or its reason changes),
// none at each retry of the same wait, none when it ends.
func Announce(was, now Wait) (reason, message string, ok bool) {
	if now.Reason == "" || was.Reason == now.Reason {
		return "", "", false
	}
	if now.Reason == ReasonInvalidAnnotation {
		return now.Reason, now.Message, true
	}
	return ReasonBudgetExhausted, "Rollout " + now.Message, true
}

// InPlaceReach is the reach of an in-place rollout of replicas: it restarts pods where
// they are and adds none, so 10 replicas reach 10 and minAvailable 10 is unmeetable.
func InPlaceReach(replicas int32) Reach {
	return Reach{Healthy: replicas, Why: fmt.Sprintf("%d replicas; an in-place update adds no pod", replicas),
		Fix: "lower the budget, or delete it"}
}
