package rolloutplan

import (
	"math"

	"github.com/kroll-dev/kroll/pkg/failure"
)

// defaultProgressDeadlineSeconds is apps/v1's default of a Deployment's
// progressDeadlineSeconds: a rollout without progress for 10 minutes has failed.
const defaultProgressDeadlineSeconds = 600

// setFailurePolicy sets the plan's failure policy from the changed object's
// annotations: the policy the rollout the change starts is judged under. A
// Deployment's progress deadline is its own field (deadline, nil for the API's default
// of 600 s, math.MaxInt32 for none), not the annotation StatefulSets and DaemonSets
// take, so that is what the plan names for it.
func (p *Plan) setFailurePolicy(annotations map[string]string, deployment bool, deadline *int32) {
	policy := failure.PolicyOf(annotations)
	if deployment {
		d := int32(defaultProgressDeadlineSeconds)
		if deadline != nil {
			d = *deadline
		}
		policy.ProgressDeadline = &d
		if d == math.MaxInt32 {
			policy.ProgressDeadline = nil
		}
	}
	p.FailurePolicy, p.FailurePolicyProblem = policy.String(), policy.Problem()
}
