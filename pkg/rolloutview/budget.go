package rolloutview

import (
	"strings"

	"github.com/kroll-dev/kroll/pkg/disruption"
)

// heldByBudget notes, on a rollout not done, the PodDisruptionBudget that holds it
// (the DisruptionBudget condition, False: see pkg/disruption) and says so in the status
// line (WithBudget). Otherwise the line stays kubectl's, word for word.
func (p *Progress) heldByBudget(conds []condition) {
	if p.Done {
		return
	}
	for _, c := range conds {
		if c.Type == disruption.ConditionType && c.Status == "False" && c.Reason == disruption.ReasonBudgetExhausted {
			p.DisruptionBudget = c.Message
			p.Message = WithBudget(p.Message, c.Message)
			return
		}
	}
}

// WithBudget is kubectl's status line msg with what a budget holding the rollout says
// (held, the condition's message) before its closing dots:
//
//	Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination...
//	Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination; waiting for PodDisruptionBudget web-pdb: …...
func WithBudget(msg, held string) string {
	if held == "" {
		return msg
	}
	base, dots := strings.CutSuffix(msg, "...")
	if !dots {
		return msg + " (" + held + ")"
	}
	return base + "; " + held + "..."
}
