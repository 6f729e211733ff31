package inplace

import (
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// ReplicaSetPods is a ReplicaSet and the active pods it controls, as the cache shows
// them.
type ReplicaSetPods struct {
	RS   *appsv1.ReplicaSet
	Pods []*corev1.Pod
}

// HandOverView is what one pass over a Deployment's in-place rollout sees: the input of
// PlanHandOver. Everything comes from the informers' caches (and the controller's
// memory of writes they do not show yet), never from an earlier pass.
type HandOverView struct {
	// Desired is the Deployment's replicas; MaxUnavailable its resolved maxUnavailable.
	// At least one pod may be out of service, whatever MaxUnavailable says: an in-place
	// update needs no room for a surge pod, but it needs one pod to move.
	Desired, MaxUnavailable int32
	// MinReadySeconds and Now decide which pods are available.
	MinReadySeconds int32
	Now             time.Time
	// Grace is the Deployment's in-place grace period (GracePeriodAnnotation); 0: none.
	Grace time.Duration
	// InPlace: the Deployment's latest change is made in place (it is opted in, its
	// new ReplicaSet exists, and the verdict proceeds or no old pod is left to judge).
	// Otherwise hand-overs under way only finish and pods are put back where they are.
	InPlace bool
	// Start: more old pods may be picked this pass. False when the Deployment is paused
	// or only scaled: pods on their way still arrive, none starts.
	Start bool
	// Partition is how many pods stay on the old ReplicaSets (a staged rollout's
	// partition): no old pod is picked that would leave fewer. 0: none is kept.
	Partition int32
	// New is the ReplicaSet pods are handed to; nil when there is none (InPlace is then
	// false). Old are the others, oldest first.
	New *ReplicaSetPods
	Old []ReplicaSetPods
	// TakenOut holds the pods taken out of service (or named leaving, resized, or
	// deleted to be recreated) by a write the cache does not show yet (see
	// TakenOut.Out): they are not serving and are not picked, resized or recreated
	// again.
	TakenOut sets.Set[types.UID]
	// Unfit says why pod's node cannot make its resize to to's container resources
	// (inplace.Unfit on the caches: controller.ResizeFit), with resized, pods this plan
	// already resizes, holding their new resources on their nodes; "" when it can or no
	// resize is due. nil: every node fits every resize (a model without nodes).
	Unfit func(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized []*corev1.Pod) string
	// OnlyInPlace is InPlaceOnly: a pod whose node cannot make its resize is left as it
	// is (an old pod is not picked) and named in Blocked. Otherwise (InPlaceIfPossible)
	// such a pod is handed over like any other and then recreated (Recreate).
	OnlyInPlace bool
	// Disrupt is what the PodDisruptionBudgets let restart: of the picked pods whose
	// update restarts a container, those that may restart now (their disruptions taken,
	// see Budgeted). nil: budgets do not limit the rollout.
	Disrupt func(restarting []*corev1.Pod) []*corev1.Pod
}

// HandOverPlan is one pass of a Deployment's in-place rollout: the writes to make, in
// the order of the fields. The first that fails ends the pass (the next one plans
// afresh); an empty plan writes nothing.
type HandOverPlan struct {
	// PutBack are pods to put back in service (readiness gate True, State removed), in
	// one write each: pods that arrived and run their new images, ready. Empty when none
	// is due.
	PutBack []*corev1.Pod
	// TakeOut are old pods to take out of service (gate False, State recorded) before
	// they are handed over: with a grace period, a pod with the gate goes out of service
	// first and is handed over once the period is over. Empty without a grace period.
	TakeOut []PodOut
	// Records are the ReplicaSets whose size or hand-over record changes, each with
	// what it becomes: the giving ones first, then the new one (whose record names only
	// pods its giver has observed leaving). Empty when none changes.
	Records []Record
	// Resize are arrived pods of the new ReplicaSet to resize to its template, one
	// pods/resize write each (PlanResize(pod, template).Patch): pods whose spec lacks the
	// template's cpu and memory and whose node can make it (Unfit, counting the pods
	// listed before them). Empty when none is due.
	Resize []*corev1.Pod
	// Recreate are pods of the new ReplicaSet whose node cannot make their resize
	// (InPlaceIfPossible): each is deleted, its ReplicaSet creates one from its template,
	// and the scheduler places it where it fits. They are out of service already (a pod
	// not yet resized does not serve, see PlanHandOver), so this costs no more of
	// maxUnavailable. Empty when none is due.
	Recreate []PodUnfit
	// Blocked says why each pod whose node cannot make its resize is left as it is
	// (OnlyInPlace; InfeasibleMessage form, sorted by pod): JudgeInfeasible turns them
	// into the rollout's verdict. Not a write. Empty when none is blocked.
	Blocked []string
	// RequeueAfter is when a grace period now running ends, for the pass that hands its
	// pod over; 0 when none runs.
	RequeueAfter time.Duration
	// Recording: once the plan's writes are made, a pick is still half recorded — an
	// old ReplicaSet names a pod leaving that the new one does not name arriving yet
	// (its record waits for the giver to observe its own). Meanwhile the giver's size
	// no longer counts the pods and the taker's does not count them yet: a status
	// summed from the two says fewer pods are unavailable than are. Not a write.
	Recording bool
}

// PodOut is one pod to take out of service, and the State to record on it.
type PodOut struct {
	Pod   *corev1.Pod
	State State
}

// PodUnfit is a pod whose node cannot make its resize, and why (Unfit's message).
type PodUnfit struct {
	Pod *corev1.Pod
	Why string
}

// Record is what a ReplicaSet's size and hand-over record become (see LeavingAnnotation
// and ArrivingAnnotation).
type Record struct {
	RS                *appsv1.ReplicaSet
	Replicas          int32
	Leaving, Arriving sets.Set[string]
	// GivenAway are the pods this record names leaving for the first time: until the
	// cache shows the write, the controller remembers them as out of service.
	GivenAway []*corev1.Pod
}

// Empty tells a plan that writes nothing.
func (p HandOverPlan) Empty() bool {
	return len(p.PutBack) == 0 && len(p.TakeOut) == 0 && len(p.Records) == 0 && len(p.Resize) == 0 && len(p.Recreate) == 0
}

// PlanHandOver decides one pass of a Deployment's in-place rollout (the protocol is in
// the package doc). With v.InPlace:
//
//  1. Arrived pods of the new ReplicaSet that run their new images, ready, are put back
//     in service — once the new ReplicaSet's observed size counts them all.
//  2. Old pods out of service for their grace period (a State) are handed over once it
//     is over.
//  3. With v.Start, more old pods are picked — never so many that fewer than
//     v.Partition old pods stay —: those not available first (they cost
//     nothing), then available ones, each by name, while fewer than
//     max(1, MaxUnavailable) of Desired are without a serving pod. A serving pod counts
//     up to the available replicas its ReplicaSet reports: a pod that has left, or is
//     back in service, is reported only at its ReplicaSet's next sync, and the bound
//     holds for what is reported too. With 10 replicas, maxUnavailable 2 and 2 pods
//     not available: those 2, then 2 at a time. No pod is picked while the last pick
//     is being recorded (recording), nor fewer than half of max(1, MaxUnavailable)
//     while pods picked before are on their way or the new ReplicaSet has not
//     reported the pods it took over (minRound).
//  4. Each old ReplicaSet names the pods it gives away leaving and shrinks past them,
//     in one write.
//  5. The new ReplicaSet names arriving the pods its givers have observed leaving and
//     grows to count them. It never grows so that it would create a pod while old
//     pods may still arrive; once none may, it takes up what the old ones no longer
//     keep (a pod lost mid-rollout is replaced by a new one).
//  6. Arrived pods of the new ReplicaSet whose spec lacks its container cpu and memory
//     are resized (pods/resize) when their node can make it, counting the pods resized
//     before them in this pass; a resize the node cannot make is never written. Such a
//     pod is recreated (InPlaceIfPossible) or left as it is, named in Blocked
//     (InPlaceOnly). A written resize the kubelet defers is waited for while the node
//     can make it by Unfit's count, and recreated or blocked once it cannot.
//
// A pod whose resize is due or not yet made (Resizing) does not serve, even when the
// resize restarts nothing and the kubelet keeps it Ready: an application may read its
// limits once, at start, and misbehave after, and counting the pod out keeps that to
// maxUnavailable pods at a time (with 10 replicas and maxUnavailable 2: two pods
// resizing at once, the next two picked once those report the new resources). Under
// InPlaceOnly, an old pod whose node cannot make the resize is not picked (it stays on
// its old ReplicaSet, untouched, named in Blocked); under either mode, a picked pod
// whose node can make its resize alone but not beside the pods picked or resized
// before it on that node waits for a later pass, when those hold their new resources
// in the cache. A grace period takes a picked pod out of service first only when its
// update restarts a container (new images, or a resize with resizePolicy
// RestartContainer), as NextStep does.
//
// Without v.InPlace, hand-overs under way finish: names of pods that have moved (or
// never will) leave the records; once no record changes, pods are put back where they
// are.
func PlanHandOver(v HandOverView) HandOverPlan {
	h := newPassView(v)
	if !v.InPlace || v.New == nil {
		return h.finish()
	}
	var p HandOverPlan
	p.PutBack = h.settle(*v.New, false)

	// After an undo: pods still on their way out of the new ReplicaSet, those an old one
	// was told to take over (the others stay).
	newLeaving := sets.New[string]()
	for _, rs := range v.Old {
		newLeaving = newLeaving.Union(h.leaving(v.New.RS).Intersection(h.arriving(rs.RS)))
	}
	busy := newLeaving.Len() > 0 // some pod is on its way, or out of service to be
	serving := h.tally(*v.New, newLeaving)
	target := &v.New.RS.Spec.Template
	resized := h.resizeArrived(&p, newLeaving)

	var candidates []*corev1.Pod
	handOff := map[types.UID][]*corev1.Pod{} // per old ReplicaSet: pods to name leaving now
	arriving := sets.New[string]()
	var oldReplicas int32
	for _, rs := range v.Old {
		oldReplicas += rollout.Replicas(rs.RS.Spec.Replicas)
		leaving := h.leaving(rs.RS)
		serving += h.tally(rs, leaving)
		busy = busy || leaving.Len() > 0 || h.arriving(rs.RS).Len() > 0
		// The new ReplicaSet takes over the pods rs has observed leaving; while rs has not
		// observed its latest record, only those it was told of before.
		if Observed(rs.RS) {
			arriving = arriving.Union(leaving)
		} else {
			arriving = arriving.Union(leaving.Intersection(Names(v.New.RS, ArrivingAnnotation)))
		}
		for _, pod := range rs.Pods {
			if leaving.Has(pod.Name) {
				continue
			}
			state, mid := StateOf(pod)
			if !mid {
				if v.OnlyInPlace {
					if why := h.unfit(pod, target, resized); why != "" {
						p.Blocked = append(p.Blocked, why)
						continue
					}
				}
				candidates = append(candidates, pod)
				continue
			}
			busy = true // out of service for its grace period
			switch {
			case !HasGate(pod):
				handOff[rs.RS.UID] = append(handOff[rs.RS.UID], pod)
			case GateStatus(pod) != corev1.ConditionFalse:
				// A State recorded without the gate going False (by an older kroll):
				// finish taking it out first.
				p.TakeOut = append(p.TakeOut, PodOut{Pod: pod, State: state})
			default:
				if left := state.OutOfServiceSince.Add(v.Grace).Sub(v.Now); left > 0 {
					p.requeue(left)
				} else {
					handOff[rs.RS.UID] = append(handOff[rs.RS.UID], pod)
				}
			}
		}
	}
	recording := h.recording()
	if v.Start && !recording {
		// With 20 old pods, none leaving, and partition 18: at most 2 are picked.
		picked, eligible := h.pick(candidates, serving)
		if keep := int(v.Partition); keep > 0 {
			eligible = max(0, min(eligible, len(candidates)-keep))
			picked = picked[:min(len(picked), eligible)]
		}
		if len(picked) < min(h.minRound(), eligible) && (h.underWay() || h.unreported()) {
			picked = nil
		}
		picked = h.fitting(picked, target, resized)
		picked = Budgeted(picked, target, v.Disrupt)
		for _, pod := range picked {
			if v.Grace > 0 && HasGate(pod) && restarts(pod, target) {
				state := OutOfService(pod, v.New.RS.Labels[appsv1.DefaultDeploymentUniqueLabelKey], Images(&v.New.RS.Spec.Template), v.Now)
				p.TakeOut = append(p.TakeOut, PodOut{Pod: pod, State: state})
				p.requeue(v.Grace)
				continue
			}
			owner := h.owner[pod.Name]
			handOff[owner.UID] = append(handOff[owner.UID], pod)
		}
	}
	// Old pods to pick, in this pass or after it, or picked and not yet named arriving:
	// the records of pods that have all arrived are then left for the pick's writes to
	// replace, rather than cleared first. The last round's are cleared once the new
	// ReplicaSet reports its pods: it puts that report off while pods it names arriving
	// come back (restart, or are resized), and a record cleared before would have it
	// report each of them as it does.
	more := v.Start && len(candidates) > int(v.Partition) || recording || h.unreported()
	for _, rs := range v.Old {
		given := handOff[rs.RS.UID]
		leaving := h.leaving(rs.RS).Clone()
		for _, pod := range given {
			leaving.Insert(pod.Name)
		}
		arriving := h.arriving(rs.RS)
		size := min(rollout.Replicas(rs.RS.Spec.Replicas), int32(len(rs.Pods)-leaving.Len()+arriving.Len()))
		p.recordUnderWay(Record{RS: rs.RS, Replicas: size, Leaving: leaving, Arriving: arriving, GivenAway: given}, more)
		busy = busy || len(given) > 0
	}

	newRS := v.New.RS
	size := max(rollout.Replicas(newRS.Spec.Replicas), int32(len(v.New.Pods)-newLeaving.Len()+arriving.Len()))
	if !busy {
		size = max(size, v.Desired-oldReplicas)
	}
	if size > v.Desired {
		size = max(v.Desired, rollout.Replicas(newRS.Spec.Replicas))
	}
	p.recordUnderWay(Record{RS: newRS, Replicas: size, Leaving: newLeaving, Arriving: arriving}, more)
	p.Recording = h.halfRecorded(p.Records)
	sort.Strings(p.Blocked)
	return p
}

// halfRecorded tells whether, once records are written, an old ReplicaSet names a pod
// leaving (one still its own) that the new one does not name arriving: a pick between
// its two writes (see HandOverPlan.Recording).
func (h passView) halfRecorded(records []Record) bool {
	written := map[types.UID]Record{}
	for _, r := range records {
		written[r.RS.UID] = r
	}
	named := Names(h.New.RS, ArrivingAnnotation)
	if r, ok := written[h.New.RS.UID]; ok {
		named = r.Arriving
	}
	for _, rs := range h.Old {
		leaving := h.leaving(rs.RS)
		if r, ok := written[rs.RS.UID]; ok {
			leaving = r.Leaving
		}
		if !named.IsSuperset(leaving) {
			return true
		}
	}
	return false
}

// recording tells whether the last pods picked are still being recorded: an old
// ReplicaSet names a pod leaving that the new one does not name arriving yet, or has
// not observed the record that names it. Pods picked meanwhile would cost each giver a
// record write of their own and put off the new ReplicaSet's, so the next pick waits
// for the pass that follows the new ReplicaSet's record (its write wakes the
// Deployment). An old ReplicaSet naming no pod leaving is not waited for.
func (h passView) recording() bool {
	if h.halfRecorded(nil) {
		return true
	}
	for _, rs := range h.Old {
		if h.leaving(rs.RS).Len() > 0 && !Observed(rs.RS) {
			return true
		}
	}
	return false
}

// resizeArrived plans the resizes of the new ReplicaSet's pods (step 6) into p: those
// not on their way out (after an undo), nor already dealt with by a write the cache
// does not show, whose spec lacks the template's resources or whose written resize the
// kubelet defers or refuses. It returns the pods p resizes, and those deferred that
// fit, as they will hold their new resources.
func (h passView) resizeArrived(p *HandOverPlan, leaving sets.Set[string]) []*corev1.Pod {
	target := &h.New.RS.Spec.Template
	pods := append([]*corev1.Pod(nil), h.New.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var resized []*corev1.Pod
	for _, pod := range pods {
		if leaving.Has(pod.Name) || h.TakenOut.Has(pod.UID) {
			continue
		}
		pending := !PlanResize(pod, target).Empty()
		if state, _ := ResizeStateOf(pod); !pending && state != ResizeDeferred && state != ResizeInfeasible {
			continue
		}
		why := h.unfit(pod, target, resized)
		switch {
		case why == "":
			if pending {
				p.Resize = append(p.Resize, pod)
			}
			resized = append(resized, holding(pod, target))
		case h.OnlyInPlace:
			p.Blocked = append(p.Blocked, why)
		default:
			p.Recreate = append(p.Recreate, PodUnfit{Pod: pod, Why: why})
		}
	}
	return resized
}

// fitting keeps of picked the pods whose node can make their resize to target beside
// the pods resized (and picked) before them, and those whose node cannot make it even
// alone (recreated once handed over, under InPlaceIfPossible; under InPlaceOnly they
// were never candidates). A pod that fits alone but not beside them waits for a later
// pass.
func (h passView) fitting(picked []*corev1.Pod, target *corev1.PodTemplateSpec, resized []*corev1.Pod) []*corev1.Pod {
	if h.Unfit == nil {
		return picked
	}
	var out []*corev1.Pod
	for _, pod := range picked {
		if PlanResize(pod, target).Empty() {
			out = append(out, pod)
			continue
		}
		if h.unfit(pod, target, resized) == "" {
			out = append(out, pod)
			resized = append(resized, holding(pod, target))
		} else if h.unfit(pod, target, nil) != "" {
			out = append(out, pod)
		}
	}
	return out
}

// unfit is v.Unfit, "" without one.
func (h passView) unfit(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized []*corev1.Pod) string {
	if h.Unfit == nil {
		return ""
	}
	return h.Unfit(pod, to, resized)
}

// restarts tells whether updating pod to target restarts a container: new images, or a
// resize with resizePolicy RestartContainer.
func restarts(pod *corev1.Pod, target *corev1.PodTemplateSpec) bool {
	return !specHas(pod, Images(target)) || PlanResize(pod, target).Restarting()
}

// holding is pod as it is once resized to to: to's container resources in its spec,
// and their requests allocated by the kubelet (what Unfit counts a pod's node holding).
func holding(pod *corev1.Pod, to *corev1.PodTemplateSpec) *corev1.Pod {
	out := pod.DeepCopy()
	setResources(out.Spec.InitContainers, to.Spec.InitContainers)
	setResources(out.Spec.Containers, to.Spec.Containers)
	allocate := func(statuses []corev1.ContainerStatus, cs []corev1.Container) []corev1.ContainerStatus {
		for _, c := range cs {
			if i := slices.IndexFunc(statuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name }); i >= 0 {
				statuses[i].AllocatedResources = c.Resources.Requests.DeepCopy()
			} else {
				statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, AllocatedResources: c.Resources.Requests.DeepCopy()})
			}
		}
		return statuses
	}
	out.Status.InitContainerStatuses = allocate(out.Status.InitContainerStatuses, out.Spec.InitContainers)
	out.Status.ContainerStatuses = allocate(out.Status.ContainerStatuses, out.Spec.Containers)
	return out
}

// record adds r to the plan if it changes its ReplicaSet's size or record.
func (p *HandOverPlan) record(r Record) {
	if rollout.Replicas(r.RS.Spec.Replicas) == r.Replicas &&
		r.RS.Annotations[LeavingAnnotation] == EncodeNames(r.Leaving) && r.RS.Annotations[ArrivingAnnotation] == EncodeNames(r.Arriving) {
		return
	}
	p.Records = append(p.Records, r)
}

// recordUnderWay is record for a rollout moving on: a record that would only lose
// names of pods that have arrived (or never will) is left as it is while it still
// names a pod on its way, and cleared once it names none — unless more pods are to be
// picked, whose record writes replace it. Written at each arrival, a thousand-pod
// rollout's records cost a write per pass while the ReplicaSet takes pods over, and
// cleared between rounds, two writes a round on the client that also writes the
// resizes. A name left behind is harmless: the planner and the ReplicaSet controller
// read a name as leaving only while the ReplicaSet that controls the pod names it, and
// as arriving only while another one names it leaving; a ReplicaSet names no pod
// leaving (or arriving) without a write of its record, which drops the names left
// behind. The last round's records are cleared.
func (p *HandOverPlan) recordUnderWay(r Record, more bool) {
	onlyLoses := rollout.Replicas(r.RS.Spec.Replicas) == r.Replicas &&
		Names(r.RS, LeavingAnnotation).IsSuperset(r.Leaving) && Names(r.RS, ArrivingAnnotation).IsSuperset(r.Arriving)
	if onlyLoses && (r.Leaving.Len()+r.Arriving.Len() > 0 || more) {
		return
	}
	p.record(r)
}

func (p *HandOverPlan) requeue(after time.Duration) {
	if p.RequeueAfter == 0 || after < p.RequeueAfter {
		p.RequeueAfter = after
	}
}
