package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// In-place restarts of a StatefulSet's or DaemonSet's pods under
// kroll.dev/disruption-budget: Respect, taken as the Deployment controller takes them
// (see disruption.PlanInPlace): before the first write of a pod's in-place update (the
// take-out of service, or the image patch when there is no grace period), the pod's
// disruption is taken from the budget that selects it by a conflict-checked write of
// its status; a budget that refuses keeps the pod as it is this sync, counted as held
// in the sync's Takes (the DisruptionBudget condition, its event and the back-off
// follow from SettleBudgetWait). The entries of the set's pods whose update is over
// (on the update revision, running its images, Ready again: disruption.Over) are
// removed in the sync's first budget write, so the next pod need not wait the
// disruption controller's two minutes.

// InPlaceBudget is one sync's in-place restarts of a set's pods under its budgets.
// A nil *InPlaceBudget (a set that does not respect budgets) lets every pod restart
// and writes nothing.
type InPlaceBudget struct {
	write func(namespace string) BudgetStatusWriter
	takes *Takes
	// pdbs are the namespace's budgets as the cache showed them at the start of the
	// sync, each replaced by what the API server returned once written this sync
	// (whose resourceVersion the next write carries).
	pdbs []*policyv1.PodDisruptionBudget
	// updated are the set's pods on its update revision that run its images
	// (inplace.Restarted): those whose entries are released once disruption.Over.
	updated []*corev1.Pod
	now     time.Time
}

// InPlace is the InPlaceBudget of one sync of set, whose pods on the update revision
// are updated, with its take-downs counted in takes and budgets written through
// write; nil when set does not respect budgets or takes is nil.
func (b *SetBudgets) InPlace(set Object, updated []*corev1.Pod, write func(namespace string) BudgetStatusWriter, takes *Takes, now time.Time) *InPlaceBudget {
	if takes == nil || !b.Respects(set.GetAnnotations()) {
		return nil
	}
	return &InPlaceBudget{write: write, takes: takes, pdbs: b.Budgets(set.GetNamespace()),
		updated: inplace.Restarted(updated), now: now}
}

// Restart takes the disruptions of the pods of picked whose update to target restarts
// a container (inplace.Budgeted; the others cost nothing), with the sync's releases
// in the same write, and returns the pods that may now make the first write of their
// update, in picked's order. Pass only pods not yet taken out of service: one taken
// out paid when it was. A pod already recorded in disruptedPods (a retry after a
// failed pod write) takes nothing new. A failed budget write (a Conflict: the budget
// changed since it was read) lets none go; the sync is tried again on a fresh read.
func (t *InPlaceBudget) Restart(ctx context.Context, picked []*corev1.Pod, target *corev1.PodTemplateSpec) ([]*corev1.Pod, error) {
	if t == nil {
		return picked, nil
	}
	var plan *disruption.InPlace
	asked := 0
	out := inplace.Budgeted(picked, target, func(restarting []*corev1.Pod) []*corev1.Pod {
		p := disruption.PlanInPlace(t.pdbs, t.updated, restarting, rollout.IsPodReady, t.now)
		plan, asked = &p, len(restarting)
		return p.Go
	})
	if plan == nil {
		return out, nil
	}
	if err := t.apply(ctx, plan.Writes); err != nil {
		return nil, err
	}
	t.takes.addInPlace(asked, len(plan.Go), plan.Step.Limit)
	return out, nil
}

// Release writes the releases no Restart of the sync has written (none when every
// entry of an updated pod is gone already).
func (t *InPlaceBudget) Release(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.apply(ctx, disruption.PlanInPlace(t.pdbs, t.updated, nil, rollout.IsPodReady, t.now).Writes)
}

// apply writes writes and keeps what the API server returned in t.pdbs.
func (t *InPlaceBudget) apply(ctx context.Context, writes []*policyv1.PodDisruptionBudget) error {
	written, err := WriteBudgets(ctx, t.write, writes)
	for _, w := range written {
		for i, pdb := range t.pdbs {
			if pdb.Namespace == w.Namespace && pdb.Name == w.Name {
				t.pdbs[i] = w
			}
		}
	}
	return err
}

// addInPlace records one ask of the budgets for asked in-place restarts, of which
// went may go now; limit names the budget that refused first ("" when none did).
// With 2 asked, 1 gone, web-pdb refusing: 2 tried, 1 held, web-pdb first.
func (t *Takes) addInPlace(asked, went int, limit string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried += int32(asked)
	if held := int32(asked - went); held > 0 {
		t.held += held
		if !t.refusedOnce {
			t.firstRefuser, t.refusedOnce = limit, true
		}
	}
}
