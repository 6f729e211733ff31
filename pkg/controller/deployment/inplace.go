package deployment

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// inPlaceMode is d's in-place opt-in; a Recreate Deployment never updates in place.
func inPlaceMode(d *appsv1.Deployment) inplace.Mode {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return inplace.Off
	}
	mode, _ := inplace.ModeOf(d.Annotations)
	return mode
}

// inPlaceVerdict judges d's change against the templates of its old ReplicaSets that
// still have pods; ok is false when there is nothing to judge (not opted in, or no old
// pods).
func inPlaceVerdict(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (v inplace.Verdict, ok bool) {
	seen := map[string]bool{}
	var fields []string
	judged := false
	for _, rs := range oldRSs {
		if rs == nil || (*rs.Spec.Replicas == 0 && rs.Status.Replicas == 0) {
			continue
		}
		judged = true
		for _, f := range inplace.Diff(&rs.Spec.Template, &d.Spec.Template) {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	if !judged {
		return inplace.Verdict{}, false
	}
	sort.Strings(fields)
	return inplace.Judge(inPlaceMode(d), fields)
}

// setInPlaceCondition brings the InPlaceUpdate condition of status up to date: gone
// when d is not opted in, the verdict on the change while old pods remain, complete
// once a change made in place has reached every pod (status is the rollout's new
// status), and otherwise left as it is.
func setInPlaceCondition(status *appsv1.DeploymentStatus, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, now time.Time) {
	if inPlaceMode(d) == inplace.Off {
		removeCondition(status, inplace.ConditionType)
		return
	}
	cur := rollout.Condition(status, inplace.ConditionType)
	v, ok := inPlaceVerdict(d, oldRSs)
	if !ok {
		if cur == nil || !rollout.Complete(d, status) {
			return
		}
		done := inplace.Finish(&inplace.Condition{Reason: cur.Reason})
		if done == nil {
			return
		}
		v = *done
	}
	if cur != nil && cur.Status == v.Status && cur.Reason == v.Reason && cur.Message != v.Message {
		removeCondition(status, inplace.ConditionType) // same reason, other fields: say so
	}
	setCondition(status, newCondition(inplace.ConditionType, v.Status, v.Reason, v.Message, now))
}

// announceVerdict records the verdict on d's change as an event, once: when it is not
// what d's InPlaceUpdate condition says already.
func (c *Controller) announceVerdict(d *appsv1.Deployment, v inplace.Verdict) {
	var cur *inplace.Condition
	if cond := rollout.Condition(&d.Status, inplace.ConditionType); cond != nil {
		cur = &inplace.Condition{Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
	}
	if inplace.IsNews(v, cur) {
		c.recorder.Eventf(d, v.EventType, v.Reason, "%s", v.Message)
	}
}

// inPlacePass is what advanceInPlace did.
type inPlacePass struct {
	// handled: the rollout was taken care of (in place, or blocked); the rolling update
	// must not run this pass.
	handled bool
	// acted: something was written.
	acted bool
}

// advanceInPlace moves in-place updates on (see the package doc for the hand-over).
// When d's change can be made in place it is the rollout step (handled; the caller
// writes the status): pods are handed from old ReplicaSets to the new one, and with
// start more are picked within maxUnavailable. Otherwise hand-overs under way finish,
// pods mid-update are put back in service where they are, and fresh pods with the
// readiness gate are put in service once their containers are ready.
func (c *Controller) advanceInPlace(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, start bool) (inPlacePass, error) {
	v, judged := inPlaceVerdict(d, oldRSs)
	if judged {
		c.announceVerdict(d, v)
	}
	// Nothing left to judge (no old pods) still leaves arrived pods to put back.
	inPlace := inPlaceMode(d) != inplace.Off && newRS != nil && (!judged || v.Proceeds())
	if !inPlace {
		acted, err := c.finishHandOvers(ctx, d, append([]*appsv1.ReplicaSet{newRS}, oldRSs...))
		if err != nil || acted {
			return inPlacePass{acted: acted}, err
		}
		acted, err = c.settleWhereTheyAre(ctx, newRS, oldRSs)
		blocked := judged && v.Reason == inplace.ReasonBlocked
		return inPlacePass{handled: blocked, acted: acted}, err
	}
	w := inPlaceWork{c: c, d: d, newRS: newRS, now: c.now(), grace: inplace.GracePeriod(d.Annotations), writer: inplace.Writer{Client: c.client}}
	err := w.run(ctx, oldRSs, start)
	return inPlacePass{handled: true, acted: w.acted}, err
}

// settleWhereTheyAre puts back in service, in the ReplicaSet they belong to, pods that
// an in-place update left out of service (or that were made with the readiness gate),
// once their containers are ready. A pod of the new ReplicaSet loses its State only
// once that ReplicaSet's observed size counts it (see settleArrived); old ReplicaSets
// are going away, and their pods go the usual way once put back.
func (c *Controller) settleWhereTheyAre(ctx context.Context, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (bool, error) {
	writer := inplace.Writer{Client: c.client}
	acted := false
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, oldRSs...) {
		if rs == nil {
			continue
		}
		want := inplace.Target{Template: &rs.Spec.Template}.Want()
		pods := controller.ActivePods(c.podIndexer, string(rs.UID))
		counted := rs != newRS || counts(rs, len(pods))
		for _, p := range pods {
			if !needsSettling(p) {
				continue
			}
			_, mid := inplace.StateOf(p)
			if step, _ := inplace.NextStep(p, want, 0, c.now()); step != inplace.PutBack || (mid && !counted) {
				continue
			}
			if err := writer.PutBack(ctx, p); err != nil {
				return acted, err
			}
			acted = true
		}
	}
	return acted, nil
}

// counts: rs's size, as its controller has observed it, counts all its pods.
func counts(rs *appsv1.ReplicaSet, pods int) bool {
	return *rs.Spec.Replicas >= int32(pods) && observed(rs)
}

// needsSettling: p is mid-update, or has the gate and is not (yet) in service.
func needsSettling(p *corev1.Pod) bool {
	_, mid := inplace.StateOf(p)
	return mid || (inplace.HasGate(p) && inplace.GateStatus(p) != corev1.ConditionTrue)
}

// handOvers is where the pods of a Deployment's ReplicaSets are, and what each
// ReplicaSet's hand-over record says, as the cache shows them.
type handOvers struct {
	pods  map[types.UID][]*corev1.Pod
	owner map[string]*appsv1.ReplicaSet // pod name → the ReplicaSet that controls it
	// leavingOf: each ReplicaSet's LeavingAnnotation without the pods that have left it
	leavingOf map[types.UID]sets.Set[string]
}

func (c *Controller) handOvers(rsList []*appsv1.ReplicaSet) handOvers {
	h := handOvers{pods: map[types.UID][]*corev1.Pod{}, owner: map[string]*appsv1.ReplicaSet{}, leavingOf: map[types.UID]sets.Set[string]{}}
	for _, rs := range rsList {
		if rs == nil {
			continue
		}
		pods := controller.ActivePods(c.podIndexer, string(rs.UID))
		h.pods[rs.UID] = pods
		for _, p := range pods {
			h.owner[p.Name] = rs
		}
	}
	for _, rs := range rsList {
		if rs == nil {
			continue
		}
		leaving := sets.New[string]()
		for name := range inplace.Names(rs, inplace.LeavingAnnotation) {
			if h.owner[name] == rs {
				leaving.Insert(name)
			}
		}
		h.leavingOf[rs.UID] = leaving
	}
	return h
}

// leaving is rs's LeavingAnnotation without the pods that have left it (shared: not to
// be changed).
func (h handOvers) leaving(rs *appsv1.ReplicaSet) sets.Set[string] {
	return h.leavingOf[rs.UID]
}

// arriving is rs's ArrivingAnnotation without the pods that have arrived, or never
// will: those still on their way are pods of another ReplicaSet that names them leaving.
func (h handOvers) arriving(rs *appsv1.ReplicaSet) sets.Set[string] {
	out := sets.New[string]()
	for name := range inplace.Names(rs, inplace.ArrivingAnnotation) {
		if from := h.owner[name]; from != nil && from != rs && h.leaving(from).Has(name) {
			out.Insert(name)
		}
	}
	return out
}

// record writes rs's size and hand-over record if either changed; acted reports a write.
func (c *Controller) record(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, size int32, leaving, arriving sets.Set[string]) (*appsv1.ReplicaSet, bool, error) {
	return c.resizeReplicaSet(ctx, d, rs, size, func(next *appsv1.ReplicaSet) bool {
		a := inplace.SetNames(next, inplace.LeavingAnnotation, leaving)
		b := inplace.SetNames(next, inplace.ArrivingAnnotation, arriving)
		return a || b
	})
}

// finishHandOvers, when d's rollout no longer moves pods in place, drops from its
// ReplicaSets' hand-over records the pods that have left (or never will). Pods on
// their way still arrive; once they have, their ReplicaSets size them as any other.
func (c *Controller) finishHandOvers(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	var h *handOvers
	acted := false
	for _, rs := range rsList {
		if rs == nil || (rs.Annotations[inplace.LeavingAnnotation] == "" && rs.Annotations[inplace.ArrivingAnnotation] == "") {
			continue
		}
		if h == nil {
			all := c.handOvers(rsList)
			h = &all
		}
		_, wrote, err := c.record(ctx, d, rs, *rs.Spec.Replicas, h.leaving(rs), h.arriving(rs))
		if err != nil {
			return acted, err
		}
		acted = acted || wrote
	}
	return acted, nil
}

// inPlaceWork is one in-place pass over a Deployment.
type inPlaceWork struct {
	c      *Controller
	d      *appsv1.Deployment
	newRS  *appsv1.ReplicaSet
	now    time.Time
	grace  time.Duration
	writer inplace.Writer
	acted  bool
}

// run makes one in-place pass (see the package doc): arrived pods are put back in
// service once ready; pods taken out of service whose grace period is over, and, with
// start, old pods picked within maxUnavailable, are named leaving on their
// ReplicaSets, which shrink past them; and the new ReplicaSet is told to take over the
// pods whose ReplicaSets have observed that, and grows to count them.
func (w *inPlaceWork) run(ctx context.Context, oldRSs []*appsv1.ReplicaSet, start bool) error {
	d, c := w.d, w.c
	if err := w.settleArrived(ctx); err != nil {
		return err
	}
	h := c.handOvers(append([]*appsv1.ReplicaSet{w.newRS}, oldRSs...))
	// After an undo: pods still on their way out of the new ReplicaSet, those an old one
	// was told to take over (the others stay).
	newLeaving := sets.New[string]()
	for _, rs := range oldRSs {
		newLeaving = newLeaving.Union(h.leaving(w.newRS).Intersection(h.arriving(rs)))
	}
	busy := newLeaving.Len() > 0 // some pod is on its way, or out of service to be
	// A ReplicaSet's pods count as serving up to the available replicas it reports: its
	// controller reports a pod that has left, or one back in service, only when it next
	// syncs, and maxUnavailable bounds both what the pods do and what is reported.
	serving := 0
	tally := func(rs *appsv1.ReplicaSet, out sets.Set[string]) {
		n := 0
		for _, p := range h.pods[rs.UID] {
			if !out.Has(p.Name) && c.serving(d, p, w.now) { // a pod with a State is not serving
				n++
			}
		}
		serving += min(n, int(rs.Status.AvailableReplicas))
	}
	tally(w.newRS, newLeaving)

	var candidates []*corev1.Pod
	handOff := map[types.UID][]*corev1.Pod{} // per old ReplicaSet: pods to name leaving now
	arriving := sets.New[string]()
	oldReplicas := int32(0)
	for _, rs := range oldRSs {
		oldReplicas += *rs.Spec.Replicas
		leaving := h.leaving(rs)
		tally(rs, leaving)
		busy = busy || leaving.Len() > 0 || h.arriving(rs).Len() > 0
		// The new ReplicaSet takes over the pods rs has observed leaving; while rs has
		// not observed its latest record, only those it was told of before.
		if observed(rs) {
			arriving = arriving.Union(leaving)
		} else {
			arriving = arriving.Union(leaving.Intersection(inplace.Names(w.newRS, inplace.ArrivingAnnotation)))
		}
		for _, p := range h.pods[rs.UID] {
			if leaving.Has(p.Name) {
				continue
			}
			if state, mid := inplace.StateOf(p); mid { // out of service for its grace period
				busy = true
				ready, err := w.outLongEnough(ctx, p, state)
				if err != nil {
					return err
				}
				if ready {
					handOff[rs.UID] = append(handOff[rs.UID], p)
				}
				continue
			}
			candidates = append(candidates, p)
		}
	}
	if start {
		picked, err := w.pick(ctx, candidates, serving)
		if err != nil {
			return err
		}
		for _, p := range picked {
			ref := metav1.GetControllerOf(p)
			handOff[ref.UID] = append(handOff[ref.UID], p)
		}
	}
	for _, rs := range oldRSs {
		if err := w.giveAway(ctx, rs, h, handOff[rs.UID]); err != nil {
			return err
		}
		busy = busy || len(handOff[rs.UID]) > 0
	}
	if err := w.takeIn(ctx, h, newLeaving, arriving, oldReplicas, busy); err != nil {
		return err
	}
	if rollout.Complete(d, &d.Status) && !w.acted {
		return c.cleanupHistory(ctx, d, oldRSs)
	}
	return nil
}

// settleArrived puts back in service the new ReplicaSet's pods whose containers run
// the new images and are ready. A pod's State is removed only once the new
// ReplicaSet's size, observed by the ReplicaSet controller, counts every pod it has.
func (w *inPlaceWork) settleArrived(ctx context.Context) error {
	acted, err := w.c.settleWhereTheyAre(ctx, w.newRS, nil)
	w.acted = w.acted || acted
	return err
}

// outLongEnough tells whether p, taken out of service (it has a State), may be handed
// over: its grace period is over. A State written without the gate going False (by an
// older kroll) is finished first.
func (w *inPlaceWork) outLongEnough(ctx context.Context, p *corev1.Pod, state inplace.State) (bool, error) {
	if !inplace.HasGate(p) {
		return true, nil
	}
	if inplace.GateStatus(p) != corev1.ConditionFalse {
		w.acted = true
		return false, w.writer.TakeOut(ctx, p, state)
	}
	if left := state.OutOfServiceSince.Add(w.grace).Sub(w.now); left > 0 {
		w.c.queue.EnqueueAfter(w.d, left)
		return false, nil
	}
	return true, nil
}

// pick chooses old pods to update: unavailable ones first (they cost nothing), then
// available ones while fewer than maxUnavailable (at least 1) of d's replicas are
// without a serving pod. A pod with the readiness gate, given a grace period, is taken
// out of service first (handed over once that is over); the others are returned, to be
// handed over at once: their one write is the take-over's.
func (w *inPlaceWork) pick(ctx context.Context, candidates []*corev1.Pod, serving int) ([]*corev1.Pod, error) {
	d, c := w.d, w.c
	budget := int(max(1, rollout.DeploymentFenceposts(d).MaxUnavailable)) - (int(rollout.DesiredReplicas(d)) - serving)
	var first, rest []*corev1.Pod
	for _, p := range candidates {
		switch {
		case c.takenOut.Out(p, w.now):
			// taken out (or picked) by a write the cache does not show yet
		case c.serving(d, p, w.now):
			rest = append(rest, p)
		default:
			first = append(first, p)
		}
	}
	images := inplace.Images(&w.newRS.Spec.Template)
	revision := w.newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	var handOff []*corev1.Pod
	tookOut := false
	for i, p := range append(first, rest...) {
		costs := i >= len(first)
		if costs && budget <= 0 {
			break
		}
		if costs {
			budget--
		}
		if w.grace == 0 || !inplace.HasGate(p) {
			handOff = append(handOff, p)
			continue
		}
		if err := w.writer.TakeOut(ctx, p, inplace.OutOfService(p, revision, images, w.now)); err != nil {
			return nil, err
		}
		c.takenOut.Record(p, w.now)
		w.acted, tookOut = true, true
	}
	if tookOut {
		c.queue.EnqueueAfter(d, w.grace)
	}
	return handOff, nil
}

// giveAway names rs's pods leaving (those still on their way, and handOff) and shrinks
// rs to the pods that stay (and any still arriving, after an undo), in one write.
func (w *inPlaceWork) giveAway(ctx context.Context, rs *appsv1.ReplicaSet, h handOvers, handOff []*corev1.Pod) error {
	leaving, arriving := h.leaving(rs).Clone(), h.arriving(rs)
	for _, p := range handOff {
		leaving.Insert(p.Name)
	}
	size := min(*rs.Spec.Replicas, int32(len(h.pods[rs.UID])-leaving.Len()+arriving.Len()))
	_, wrote, err := w.c.record(ctx, w.d, rs, size, leaving, arriving)
	if err != nil {
		return err
	}
	w.acted = w.acted || wrote
	for _, p := range handOff {
		w.c.takenOut.Record(p, w.now) // a stale cache still shows p staying
	}
	return nil
}

// takeIn tells the new ReplicaSet which pods to take over (arriving) and sizes it for
// the pods it has and those. It never grows so that it creates a pod while old pods
// may still arrive (busy); once none may, it takes up whatever the old ReplicaSets no
// longer keep (a pod lost mid-rollout is replaced by a new one).
func (w *inPlaceWork) takeIn(ctx context.Context, h handOvers, leaving, arriving sets.Set[string], oldReplicas int32, busy bool) error {
	desired := rollout.DesiredReplicas(w.d)
	size := max(*w.newRS.Spec.Replicas, int32(len(h.pods[w.newRS.UID])-leaving.Len()+arriving.Len()))
	if !busy {
		size = max(size, desired-oldReplicas)
	}
	if size > desired {
		size = max(desired, *w.newRS.Spec.Replicas)
	}
	updated, wrote, err := w.c.record(ctx, w.d, w.newRS, size, leaving, arriving)
	if err == nil {
		w.newRS = updated
	}
	w.acted = w.acted || wrote
	return err
}

// serving tells whether p counts as available: available, and not out of service for
// an in-place update.
func (c *Controller) serving(d *appsv1.Deployment, p *corev1.Pod, now time.Time) bool {
	return !c.takenOut.Out(p, now) && rollout.IsPodAvailable(p, d.Spec.MinReadySeconds, now)
}

// observed: the ReplicaSet controller has acted on rs's current spec.
func observed(rs *appsv1.ReplicaSet) bool {
	return rs.Status.ObservedGeneration >= rs.Generation
}
