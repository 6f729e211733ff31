package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// SetBudgets is what a StatefulSet or DaemonSet controller needs to take the pods its
// rollouts replace down through the Eviction API (see pkg/disruption): the
// PodDisruptionBudgets, whose status the condition reports and whose changes bring
// held sets back, the cluster's default setting, and the back-off of held sets. A nil
// *SetBudgets (a controller never given budgets) deletes as upstream.
type SetBudgets struct {
	pdbs policylisters.PodDisruptionBudgetLister
	// def is --default-disruption-budget: the mode of a set without the setting.
	def   disruption.Mode
	queue Queue

	mu sync.Mutex
	// held counts, per set key, the syncs in a row a budget refused a take-down in:
	// the back-off of the next try.
	held map[string]int
}

// NewSetBudgets watches pdbInformer for queue's controller: a budget's change brings
// back every set of its namespace that a budget holds. It returns the informer's
// HasSynced for the controller to wait on.
func NewSetBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode, queue Queue) (*SetBudgets, cache.InformerSynced, error) {
	b := &SetBudgets{pdbs: pdbInformer.Lister(), def: def, queue: queue, held: map[string]int{}}
	_, err := pdbInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    b.changed,
		UpdateFunc: func(_, cur any) { b.changed(cur) },
		DeleteFunc: b.changed,
	})
	return b, pdbInformer.Informer().HasSynced, err
}

// WatchBudgets is NewSetBudgets for a controller's RespectBudgets: the informer's
// HasSynced joins synced, the syncs the controller waits for.
func WatchBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode, queue Queue, synced *[]cache.InformerSynced) (*SetBudgets, error) {
	b, hasSynced, err := NewSetBudgets(pdbInformer, def, queue)
	if err != nil {
		return nil, err
	}
	*synced = append(*synced, hasSynced)
	return b, nil
}

func (b *SetBudgets) changed(obj any) {
	pdb, ok := Deleted[*policyv1.PodDisruptionBudget](obj)
	if !ok {
		return
	}
	b.mu.Lock()
	var keys []string
	for key := range b.held {
		if ns, _, err := cache.SplitMetaNamespaceKey(key); err == nil && ns == pdb.Namespace {
			keys = append(keys, key)
		}
	}
	b.mu.Unlock()
	for _, key := range keys {
		b.queue.Add(key)
	}
}

// Respects tells whether a set with annotations takes its rollout's pods down through
// its budgets; false for a nil b.
func (b *SetBudgets) Respects(annotations map[string]string) bool {
	if b == nil {
		return false
	}
	mode, _ := disruption.ModeOf(annotations, b.def)
	return mode == disruption.Respect
}

// Budget is the PodDisruptionBudget named, as the cache has it.
func (b *SetBudgets) Budget(namespace, name string) disruption.Budget {
	out := disruption.Budget{Name: name}
	if b == nil || name == "" {
		return out
	}
	if pdb, err := b.pdbs.PodDisruptionBudgets(namespace).Get(name); err == nil {
		s := pdb.Status
		out.Known, out.DisruptionsAllowed, out.DesiredHealthy, out.CurrentHealthy, out.ExpectedPods = true,
			s.DisruptionsAllowed, s.DesiredHealthy, s.CurrentHealthy, s.ExpectedPods
	}
	return out
}

// Backoff records whether a budget held key in this sync and returns how long to wait
// before trying again: 1s, 2s, 4s, … up to 30s while held; 0 once not.
func (b *SetBudgets) Backoff(key string, held bool) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !held {
		delete(b.held, key)
		return 0
	}
	n := b.held[key]
	b.held[key] = n + 1
	return min(time.Second<<min(n, 5), 30*time.Second)
}

// Forget drops key's back-off (the set is gone).
func (b *SetBudgets) Forget(key string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.held, key)
	b.mu.Unlock()
}

// Takes counts one sync's take-downs through budgets; safe for concurrent use. The
// zero value tried nothing.
type Takes struct {
	mu           sync.Mutex
	tried, held  int32
	firstRefuser string
	refusedOnce  bool
}

// Add records the result of one take-down (an eviction's error, nil when the pod
// went) and tells whether a budget refused it: the pod stays.
func (t *Takes) Add(err error) (refused bool) {
	pdb, refused := disruption.Refused(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried++
	if refused {
		t.held++
		if !t.refusedOnce {
			t.firstRefuser, t.refusedOnce = pdb, true
		}
	}
	return refused
}

// Outcome is what the sync's take-downs met (see disruption.Outcome).
func (t *Takes) Outcome() disruption.Outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.held > 0:
		return disruption.Held
	case t.tried > 0:
		return disruption.Taken
	}
	return disruption.NoneTried
}

// Held is the budget that refused first and the pods kept.
func (t *Takes) Held() (pdb string, pods int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstRefuser, t.held
}

// BudgetWaitOf is the DisruptionBudget condition among conds (the zero Wait without one).
func BudgetWaitOf[C any](k failure.Conditions[C], conds []C) disruption.Wait {
	for _, c := range conds {
		if v := k.View(c); v.Type == disruption.ConditionType && v.Status == corev1.ConditionFalse {
			return disruption.Wait{Reason: v.Reason, Message: v.Message, Since: v.LastTransitionTime.Time}
		}
	}
	return disruption.Wait{}
}

// WithBudgetWait is conds with the DisruptionBudget condition replaced by w (the zero
// Wait: removed); the others keep their order.
func WithBudgetWait[C any](k failure.Conditions[C], conds []C, w disruption.Wait) []C {
	var out []C
	for _, c := range conds {
		if k.View(c).Type != disruption.ConditionType {
			out = append(out, c)
		}
	}
	if w.Reason != "" {
		out = append(out, k.Make(failure.Condition{Type: disruption.ConditionType, Status: corev1.ConditionFalse,
			Reason: w.Reason, Message: w.Message, LastTransitionTime: metav1.NewTime(w.Since)}))
	}
	return out
}

// Object is a workload both the event recorder and the cache know.
type Object interface {
	runtime.Object
	metav1.Object
}

// SettleBudgetWait is the conditions was of set after a sync whose take-downs are
// takes (see disruption.NextWait; reach is how many healthy pods the rollout can
// have, for the message; done: it has nothing left to take down), with one Warning
// event on set when a wait begins, and set brought back after a back-off while a
// budget refuses it (and on any change of its namespace's budgets while it waits).
func SettleBudgetWait[C any](b *SetBudgets, k failure.Conditions[C], rec record.EventRecorder, set Object,
	was []C, takes *Takes, reach disruption.Reach, done bool, now time.Time) []C {
	cur := BudgetWaitOf(k, was)
	outcome, message := takes.Outcome(), ""
	if outcome == disruption.Held {
		name, pods := takes.Held()
		message = disruption.Message(b.Budget(set.GetNamespace(), name), pods, reach)
	}
	next := disruption.NextWait(cur, outcome, message, disruption.Problem(set.GetAnnotations()), done, now)
	if reason, msg, ok := disruption.Announce(cur, next); ok {
		rec.Eventf(set, corev1.EventTypeWarning, reason, "%s", msg)
	}
	key := set.GetNamespace() + "/" + set.GetName()
	switch {
	case outcome == disruption.Held:
		if wait := b.Backoff(key, true); wait > 0 {
			b.queue.AddAfter(key, wait)
		}
	case next.Reason != disruption.ReasonBudgetExhausted:
		b.Backoff(key, false)
	}
	return WithBudgetWait(k, was, next)
}
