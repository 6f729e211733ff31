package controller

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	typedpolicyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
)

// BudgetStatusWriter is the one write an in-place restart makes to the
// PodDisruptionBudgets that select its pod (see disruption.PlanInPlace): their status,
// with the pod recorded in disruptedPods and disruptionsAllowed one lower, or its
// entry removed once the restart is over. A client's PodDisruptionBudgets(namespace)
// is one.
//
// UpdateStatus is an update, not a patch: it carries the resourceVersion the budget
// was read at, so a budget changed since (a drain's eviction took a disruption, the
// disruption controller recomputed it) refuses the write with a Conflict, and the
// decision is made again on a fresh read — the same check that keeps two evictions
// from spending one disruption on the API server.
type BudgetStatusWriter interface {
	UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, opts metav1.UpdateOptions) (*policyv1.PodDisruptionBudget, error)
}

var _ BudgetStatusWriter = typedpolicyv1.PodDisruptionBudgetInterface(nil)

// WriteBudgets writes each budget's status (as planned, on its resourceVersion) in
// order, stopping at the first that fails; wrote is those written, as the API server
// returned them (their new resourceVersion is what a second write in the same sync
// must carry).
func WriteBudgets(ctx context.Context, w func(namespace string) BudgetStatusWriter, pdbs []*policyv1.PodDisruptionBudget) (wrote []*policyv1.PodDisruptionBudget, err error) {
	for _, pdb := range pdbs {
		got, err := w(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
		if err != nil {
			return wrote, err
		}
		wrote = append(wrote, got)
	}
	return wrote, nil
}

// BudgetStatusOf is the BudgetStatusWriter of client's namespaces.
func BudgetStatusOf(client kubernetes.Interface) func(namespace string) BudgetStatusWriter {
	return func(namespace string) BudgetStatusWriter { return client.PolicyV1().PodDisruptionBudgets(namespace) }
}

// Budgets is the PodDisruptionBudgets of namespace as the cache has them (nil for a
// nil b, or a cache that cannot list them).
func (b *SetBudgets) Budgets(namespace string) []*policyv1.PodDisruptionBudget {
	if b == nil {
		return nil
	}
	pdbs, err := b.pdbs.PodDisruptionBudgets(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return pdbs
}
