package rolloutplan

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Deployment plans the change of cur into next. rss are cur's ReplicaSets, pods the
// pods they own (finished and terminating pods are ignored).
//
// It replays kroll's Deployment controller pass by pass on a model of the ReplicaSets,
// with the controller's own arithmetic (pkg/rollout), each pass one batch:
//
//   - A change of replicas comes first, alone (the controller's scaling event): each
//     ReplicaSet with pods takes its share (rollout.ProportionalScale), so with one
//     ReplicaSet, that one — the old one, when the template changes too.
//   - RollingUpdate, bounds resolved against next's replicas: the new ReplicaSet grows
//     by min(replicas+maxSurge − total, replicas − new) (a batch of creates), then the
//     old ones shrink by what keeps replicas−maxUnavailable available, pods that are not
//     available first, oldest ReplicaSet first (a batch of deletes, the pods the
//     ReplicaSet controller would pick: rollout.PodsToDelete); and again, until the new
//     ReplicaSet holds every replica. With 10 replicas at 25%/25% (surge 3,
//     unavailable 2): create 3, delete 5, create 5, delete 5, create 2.
//   - A ReplicaSet whose template is next's (a rollback, or the template unchanged) is
//     the new one: its pods are new already.
//   - Recreate: every old pod is deleted, then the new ReplicaSet is scaled to replicas.
//   - In place (next annotated kroll.dev/update-strategy, not Recreate): when only
//     images, template metadata and the cpu and memory pods/resize accepts change
//     (inplace.DiffResize), old pods are updated in place (and resized), pods that are
//     not available first, then by name, as many available ones per batch as keep
//     replicas−maxUnavailable (maxUnavailable at least 1) serving. Otherwise
//     InPlaceIfPossible falls back to RollingUpdate, and InPlaceOnly touches no pod.
//   - Staged (kroll.dev/partition, kroll.dev/rollout-steps): each pass bounds the new
//     ReplicaSet and the old ones by staging.Decide's partition, as the controller
//     does; a batch after which a step pauses says so ("pause until promoted", "pause
//     5s"), and the replay goes on as if promoted or the time passed; a partition
//     stops it (the last batch says so).
//   - A paused Deployment is only scaled.
//
// next must be as the API server stores it (see the package doc). Errors: another
// object, a changed selector, an unknown in-place mode, a next without its defaults.
//
// Without the live configuration (DeploymentWithConfig), a Deployment opted into
// configuration rollout is planned as if its configuration stayed as its current
// revision recorded it.
func Deployment(cur *appsv1.Deployment, rss []*appsv1.ReplicaSet, pods []*corev1.Pod, next *appsv1.Deployment, now time.Time) (Plan, error) {
	return DeploymentWithConfig(cur, rss, pods, next, nil, now)
}

// DeploymentWithConfig is Deployment with live, the ConfigMaps and Secrets next's
// template references now: when next opts into configuration rollout, the plan rolls
// between the revisions its controller would (configFor), and a configuration change
// alone is a change that rolls.
func DeploymentWithConfig(cur *appsv1.Deployment, rss []*appsv1.ReplicaSet, pods []*corev1.Pod, next *appsv1.Deployment, live *Configuration, now time.Time) (Plan, error) {
	if cur == nil || next == nil {
		return Plan{}, fmt.Errorf("deployment: both the current and the changed Deployment are needed")
	}
	if err := checkSame("Deployment", cur.ObjectMeta, next.ObjectMeta, cur.Kind, next.Kind, cur.Spec.Selector, next.Spec.Selector); err != nil {
		return Plan{}, err
	}
	obj := objectName("Deployment", cur.ObjectMeta)
	if next.Spec.Strategy.Type == "" {
		return Plan{}, notStored(obj, "spec.strategy.type")
	}
	mode, err := inplace.ModeOf(next.Annotations)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", obj, err)
	}

	var config configOutcome
	if live != nil {
		config = configFor(cur, next, rss, *live)
	}
	simCur, simNext := cur, next
	if config.next != nil {
		simCur, simNext = config.cur, config.next
	}
	s := newDeploymentSim(simCur, rss, pods, simNext, now)
	plan := Plan{Kind: "Deployment", Object: obj}
	plan.setFailurePolicy(next.Annotations, true, next.Spec.ProgressDeadlineSeconds)
	plan.Changes = append(plan.Changes, replicasChange(cur.Spec.Replicas, next.Spec.Replicas)...)
	if a, b := cur.Spec.Strategy.Type, next.Spec.Strategy.Type; a != b && a != "" {
		plan.Changes = append(plan.Changes, fmt.Sprintf("strategy: %s → %s", a, b))
	}
	plan.Changes = append(plan.Changes, modeChange(cur.Annotations, next.Annotations)...)
	plan.Changes = append(plan.Changes, templateChanges(&cur.Spec.Template, &next.Spec.Template)...)
	plan.Changes = append(plan.Changes, config.changes...)
	plan.From, plan.To = deploymentRevisions(simCur, simNext, s)

	f := rollout.DeploymentFenceposts(next)
	plan.Strategy = string(next.Spec.Strategy.Type)
	if next.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		plan.Strategy = fmt.Sprintf("RollingUpdate (maxSurge %d, maxUnavailable %d)", f.MaxSurge, f.MaxUnavailable)
	}
	initial := s.availability()
	plan.Notes = append(plan.Notes, config.notes...)
	if config.hold {
		// The controller makes no ReplicaSet until the object exists: nothing moves.
		plan.To = plan.From
		plan.bounds(initial)
		return plan, nil
	}

	s.scale()
	switch {
	case next.Spec.Paused:
		plan.Notes = append(plan.Notes, "paused: only scaling happens until the Deployment is resumed")
	case next.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		if mode != inplace.Off {
			plan.Notes = append(plan.Notes, fmt.Sprintf("Recreate never updates in place: %s is ignored", inplace.StrategyAnnotation))
		}
		s.recreate()
	default:
		fields, judged, resize := s.inPlaceFields()
		if mode != inplace.Off && judged {
			plan.InPlace = verdictText(mode, fields, "RollingUpdate", resize)
		}
		v, _ := inplace.Judge(mode, fields)
		switch {
		case mode != inplace.Off && (!judged || v.Proceeds()):
			plan.Strategy = fmt.Sprintf("%s (maxUnavailable %d)", mode, max(1, f.MaxUnavailable))
			s.inPlace()
		case judged && v.Reason == inplace.ReasonBlocked:
			s.blocked = true
			plan.Strategy = fmt.Sprintf("%s (maxUnavailable %d)", mode, max(1, f.MaxUnavailable))
		default:
			s.rolling()
		}
	}
	plan.Batches = s.batches
	plan.bounds(initial)
	plan.Notes = append(plan.Notes, s.notes(simCur, simNext, plan)...)
	return plan, nil
}

// deploymentRevisions are the revision numbers before and after: cur's, and the one
// the new ReplicaSet gets (one above every old one, unless it already has a higher one).
func deploymentRevisions(cur, next *appsv1.Deployment, s *deploymentSim) (from, to string) {
	var old []*appsv1.ReplicaSet
	for _, rs := range s.old() {
		old = append(old, rs.rs)
	}
	from = cur.Annotations[history.RevisionAnnotation]
	if from == "" {
		if n := history.MaxRevision(append(old, s.new.rs)); n > 0 {
			from = strconv.FormatInt(n, 10)
		}
	}
	n := history.MaxRevision(old) + 1
	switch was, err := strconv.ParseInt(from, 10, 64); {
	case s.newExists:
		n = max(n, history.Revision(s.new.rs))
	case err == nil && !history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template):
		n = max(n, was+1) // a new template, and no ReplicaSet listed with it
	}
	return from, strconv.FormatInt(n, 10)
}

// simPod is a pod in the model: an existing one or one the plan creates.
type simPod struct {
	pod       *corev1.Pod
	available bool
}

// simRS is a ReplicaSet in the model, sized by its pods.
type simRS struct {
	rs   *appsv1.ReplicaSet
	pods []*simPod
}

// object is the ReplicaSet as the controller's arithmetic reads it: spec.replicas and
// status counting its pods, its controller caught up (each batch has completed).
func (r *simRS) object() *appsv1.ReplicaSet {
	o := r.observed()
	r.rs.Spec.Replicas = o.Spec.Replicas
	r.rs.Status.Replicas, r.rs.Status.AvailableReplicas = o.Status.Replicas, o.Status.AvailableReplicas
	r.rs.Status.ObservedGeneration = r.rs.Generation
	return r.rs
}

// deploymentSim replays the Deployment controller on a model of its ReplicaSets.
type deploymentSim struct {
	d *appsv1.Deployment // next, with cur's status
	// rss are the ReplicaSets oldest first; new is among them once newExists.
	rss       []*simRS
	new       *simRS
	newExists bool
	now       time.Time
	created   int // pods created so far, to name them
	batches   []Batch
	// pending is the batch being made.
	pending []PodOp
	// initialOld and initialNew are how many old and new pods there were; blocked:
	// InPlaceOnly refused the change.
	initialOld, initialNew int
	blocked                bool
	// staged is the staged rollout's state; firstNote what holds it before any batch.
	staged    stagedSim
	firstNote string
}

func newDeploymentSim(cur *appsv1.Deployment, rss []*appsv1.ReplicaSet, pods []*corev1.Pod, next *appsv1.Deployment, now time.Time) *deploymentSim {
	d := next.DeepCopy()
	d.Status = *cur.Status.DeepCopy()
	s := &deploymentSim{d: d, now: now}
	s.staged = newStagedSim(d)
	var objs []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil {
			objs = append(objs, rs.DeepCopy())
		}
	}
	newRS, _ := history.NewReplicaSet(next, objs)
	for _, rs := range rollout.ByCreation(objs) {
		r := &simRS{rs: rs}
		s.rss = append(s.rss, r)
		if rs == newRS {
			s.new, s.newExists = r, true
		}
	}
	for _, p := range pods {
		if p == nil || !rollout.IsPodActive(p) {
			continue
		}
		if r := s.owner(p); r != nil {
			r.pods = append(r.pods, &simPod{pod: p, available: rollout.IsPodAvailable(p, cur.Spec.MinReadySeconds, now)})
		}
	}
	s.initialOld = s.oldPods()
	if s.new != nil {
		s.initialNew = len(s.new.pods)
	}
	if s.new == nil {
		hash := history.TemplateHash(&next.Spec.Template, d.Status.CollisionCount)
		template := *next.Spec.Template.DeepCopy()
		template.Labels = map[string]string{}
		for k, v := range next.Spec.Template.Labels {
			template.Labels[k] = v
		}
		template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		// Created now, and so after every listed ReplicaSet even when this machine's
		// clock is behind the API server's: a new ReplicaSet is never brought back.
		created := metav1.NewTime(now)
		for _, r := range s.rss {
			if !r.rs.CreationTimestamp.Before(&created) {
				created = metav1.NewTime(r.rs.CreationTimestamp.Add(time.Second))
			}
		}
		s.new = &simRS{rs: &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: next.Name + "-" + hash, Namespace: next.Namespace,
				UID: "(planned)", CreationTimestamp: created, Labels: template.Labels},
			Spec: appsv1.ReplicaSetSpec{Template: template},
		}}
	}
	return s
}

// owner is the ReplicaSet of p: by controller reference, else by pod-template-hash.
func (s *deploymentSim) owner(p *corev1.Pod) *simRS {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.UID != "" {
		for _, r := range s.rss {
			if r.rs.UID == ref.UID {
				return r
			}
		}
	}
	if h := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; h != "" {
		for _, r := range s.rss {
			if r.rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == h {
				return r
			}
		}
	}
	return nil
}

// old are the ReplicaSets other than the new one, oldest first.
func (s *deploymentSim) old() []*simRS {
	var out []*simRS
	for _, r := range s.rss {
		if r != s.new {
			out = append(out, r)
		}
	}
	return out
}

func (s *deploymentSim) oldPods() int {
	n := 0
	for _, r := range s.old() {
		n += len(r.pods)
	}
	return n
}

// availability is every pod's name and whether it is available.
func (s *deploymentSim) availability() map[string]bool {
	out := map[string]bool{}
	for _, r := range s.rss {
		for _, p := range r.pods {
			out[p.pod.Name] = p.available
		}
	}
	return out
}

// resize sets r's size to n: new pods (of r's template), or the pods its ReplicaSet
// controller would delete first.
func (s *deploymentSim) resize(r *simRS, n int) {
	switch have := len(r.pods); {
	case n > have:
		for i := have; i < n; i++ {
			s.created++
			p := plannedPod(fmt.Sprintf("%s (new %d)", r.rs.Name, s.created), s.now)
			r.pods = append(r.pods, &simPod{pod: p, available: true}) // once the batch completes
			s.pending = append(s.pending, PodOp{Op: Create, Pod: p.Name, Revision: r.rs.Name})
		}
	case n < have:
		var candidates, related []*corev1.Pod
		for _, p := range r.pods {
			candidates = append(candidates, p.pod)
		}
		for _, other := range s.rss {
			for _, p := range other.pods {
				related = append(related, p.pod)
			}
		}
		gone := map[*corev1.Pod]bool{}
		for _, p := range rollout.PodsToDelete(candidates, related, have-n, s.now) {
			gone[p] = true
			s.pending = append(s.pending, PodOp{Op: Delete, Pod: p.Name, Revision: r.rs.Name})
		}
		var keep []*simPod
		for _, p := range r.pods {
			if !gone[p.pod] {
				keep = append(keep, p)
			}
		}
		r.pods = keep
	}
}

// plannedPod is a pod the plan creates, as the deletion ranking sees it: running, ready
// since now, alone on its node.
func plannedPod(name string, now time.Time) *corev1.Pod {
	t := metav1.NewTime(now)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("planned/" + name), CreationTimestamp: t},
		Spec:       corev1.PodSpec{NodeName: "planned/" + name},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t}}},
	}
}

// flush closes the batch being made; it reports whether it had any operation.
func (s *deploymentSim) flush() bool {
	if len(s.pending) == 0 {
		return false
	}
	s.batches = append(s.batches, Batch{Ops: s.pending})
	s.pending = nil
	if !s.newExists && len(s.new.pods) > 0 {
		s.adoptNew()
	}
	return true
}

// adoptNew makes the planned new ReplicaSet one of the Deployment's.
func (s *deploymentSim) adoptNew() {
	if !s.newExists {
		s.rss = append(s.rss, s.new)
		s.newExists = true
	}
}

// objects are the ReplicaSets as the arithmetic reads them: the new one (nil while it
// does not exist) and the old ones, oldest first.
func (s *deploymentSim) objects() (newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	for _, r := range s.old() {
		old = append(old, r.object())
	}
	if s.newExists {
		newRS = s.new.object()
	}
	return newRS, old
}

func (s *deploymentSim) byName(name string) *simRS {
	for _, r := range append(append([]*simRS{}, s.rss...), s.new) {
		if r.rs.Name == name {
			return r
		}
	}
	return nil
}

// passLimit bounds the replay: every pass makes progress, so this is never reached by
// a rollout that finishes.
func (s *deploymentSim) passLimit() int {
	n := int(rollout.DesiredReplicas(s.d))
	for _, r := range s.rss {
		n += len(r.pods)
	}
	return 2*n + 10
}

// notes say why a plan has no batches, or where it stops short.
func (s *deploymentSim) notes(cur, next *appsv1.Deployment, plan Plan) []string {
	var notes []string
	sameTemplate := history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template)
	desired := int(rollout.DesiredReplicas(s.d))
	switch {
	case len(plan.Batches) == 0 && sameTemplate && s.oldPods() == 0:
		notes = append(notes, "no pod changes: the template is the same")
	case len(plan.Batches) == 0 && desired == 0 && s.oldPods() == 0 && len(s.new.pods) == 0:
		notes = append(notes, "no pod changes: no pods, and 0 replicas")
	case sameTemplate && s.initialOld > 0 && !s.d.Spec.Paused:
		notes = append(notes, "the template is the same: the batches finish the rollout in flight")
	}
	if !sameTemplate && s.initialNew > 0 {
		notes = append(notes, fmt.Sprintf("a rollback: ReplicaSet %s (revision %d) has the new template already; its %d pods stay",
			s.new.rs.Name, history.Revision(s.new.rs), s.initialNew))
	}
	if s.firstNote != "" {
		notes = append(notes, s.firstNote)
	}
	if old := s.oldPods(); old > 0 && !s.d.Spec.Paused && !s.blocked {
		notes = append(notes, fmt.Sprintf("the rollout stops with %d old pods left and %d of %d replicas new", old, len(s.new.pods), desired))
	}
	return notes
}
