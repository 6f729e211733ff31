// Package rolloutview holds the views of kroll's rollout CLI as pure functions: a
// Snapshot of a workload and what it owns goes in, a value or text comes out. No client,
// no clock (the snapshot carries its moment), so every view has golden-file tests.
package rolloutview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// Snapshot is one workload and what it owns, as listed at Now.
type Snapshot struct {
	// Object is a *appsv1.Deployment, *appsv1.StatefulSet or *appsv1.DaemonSet.
	Object runtime.Object
	// ReplicaSets are a Deployment's; Revisions a StatefulSet's or DaemonSet's.
	ReplicaSets []*appsv1.ReplicaSet
	Revisions   []*appsv1.ControllerRevision
	// Pods are the workload's (owned by it or by its ReplicaSets).
	Pods []*corev1.Pod
	// Nodes are the cluster's, for a DaemonSet: a staged rollout counts the nodes its
	// template should run on, as its controller does. Unused for other kinds.
	Nodes []*corev1.Node
	Now   time.Time
}

// Phase is where a rollout stands.
type Phase string

const (
	// Progressing: pods are still to be updated or to become available.
	Progressing Phase = "Progressing"
	// Complete: every desired pod is updated and available (kubectl's "successfully
	// rolled out").
	Complete Phase = "Complete"
	// Failed: the rollout cannot finish without a change: a Deployment past its progress
	// deadline, or an InPlaceOnly change that cannot be made in place.
	Failed Phase = "Failed"
	// Paused: a paused Deployment, or a DaemonSet paused with kroll.dev/paused.
	Paused Phase = "Paused"
	// RolledBack: kroll's controller judged the rollout failed and rolled it back to the
	// last revision that completed (the RolloutFailed condition says why).
	RolledBack Phase = "RolledBack"
	// PausedOnFailure: kroll's controller judged the rollout failed and paused it where
	// it stood; `kroll rollout resume` or an undo continues.
	PausedOnFailure Phase = "PausedOnFailure"
)

// Progress is a rollout at one moment: what `kroll rollout status` shows and prints
// with -o json.
type Progress struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision is the latest revision: a Deployment's revision number, a StatefulSet's
	// update revision or a DaemonSet's current ControllerRevision name.
	Revision string `json:"revision"`
	// Cause is the latest revision's change-cause (kubernetes.io/change-cause on its
	// ReplicaSet or ControllerRevision): for a revision kroll's configuration rollout
	// made, what changed ("configmap/app-config changed"); empty when none is recorded.
	Cause string `json:"cause,omitempty"`
	Phase Phase  `json:"phase"`
	// Desired is the spec's replicas (a DaemonSet's: the nodes that should run it).
	// Total, Updated, Ready and Available are counted from the snapshot's pods, as
	// Revisions are: Total the active pods of every revision, Updated those of the
	// latest, Ready and Available the sums of the revisions'. A header and the bars
	// under it therefore always agree; a controller's status, written after it saw
	// the pods, may lag behind them for a sync.
	Desired   int32 `json:"desired"`
	Total     int32 `json:"total"`
	Updated   int32 `json:"updated"`
	Ready     int32 `json:"ready"`
	Available int32 `json:"available"`
	// Target is how many pods this rollout updates: Desired, less a StatefulSet's
	// partition.
	Target    int32  `json:"target"`
	Partition *int32 `json:"partition,omitempty"`
	// InPlace is the InPlaceUpdate condition's reason of an opted-in workload.
	InPlace string `json:"inPlace,omitempty"`
	// Revisions are newest first, by revision number.
	Revisions []RevisionPods `json:"revisions"`
	// Blocking is the pod the rollout waits on, when it waits on one.
	Blocking *Blocker `json:"blocking,omitempty"`
	// DisruptionBudget is the message of the DisruptionBudget condition (False) of a
	// rollout a PodDisruptionBudget holds: which budget, and its disruptionsAllowed.
	DisruptionBudget string `json:"disruptionBudget,omitempty"`
	// ETASeconds is the time to completion at the observed rate (absent when no rate
	// has been observed yet, or when complete).
	ETASeconds *float64 `json:"etaSeconds,omitempty"`
	// Failure is the RolloutFailed condition of the current rollout, when kroll's
	// controller judged it failed (phase RolledBack or PausedOnFailure).
	Failure *Failure `json:"failure,omitempty"`
	// Resizing is where the pods' in-place resizes stand (pods/resize written, the
	// kubelet not done): how many, and those the kubelet holds pending, with its
	// reason (Deferred, Infeasible) and message; absent when no pod is resizing.
	Resizing *Resizing `json:"resizing,omitempty"`
	// Settling is set while a watched rollout (kroll.dev/on-failure) whose pods are
	// all updated and available waits for kroll's controller to mark its revision
	// complete (see verdict.go); the phase is Progressing until then.
	Settling *Settling `json:"settling,omitempty"`
	// Staged is where a staged rollout (kroll.dev/partition, kroll.dev/rollout-steps)
	// stands; absent when nothing stages it.
	Staged *Staged `json:"staged,omitempty"`
	// Analysis is the workload's last analysis (kroll.dev/analysis-status): each
	// check's query as asked, its last measurements, what judged them, and the
	// decision with what it did; absent when none ran. See analysis.go.
	Analysis *Analysis `json:"analysis,omitempty"`
	// Warnings are lines to show beside the view: a failure policy whose annotations
	// do not parse (the FailurePolicy condition's message).
	Warnings []string `json:"warnings,omitempty"`
	// Message is kubectl's status line (for a failed rollout, the error it stops with);
	// Done whether kubectl's `rollout status` would stop here, and Err the error it
	// would stop with, or kroll's for a rollout its controller judged failed.
	Message string `json:"message"`
	Done    bool   `json:"-"`
	Err     error  `json:"-"`
	// onDelete: an OnDelete workload, which kubectl refuses (Err) but whose phase
	// still says whether pods await deletion.
	onDelete bool
}

// RevisionPods are the pods of one revision.
type RevisionPods struct {
	Revision string `json:"revision"`
	// Name is the ReplicaSet or ControllerRevision holding the revision.
	Name      string `json:"name"`
	Latest    bool   `json:"latest"`
	Pods      int32  `json:"pods"`
	Ready     int32  `json:"ready"`
	Available int32  `json:"available"`
	// number is Revision as a number, to order by: revision 10 is newer than 9.
	number int64
}

// Blocker is a pod the rollout waits on, and why.
type Blocker struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
	// Message is the kubelet's or scheduler's detail, when there is one.
	Message string `json:"message,omitempty"`
}

// String is `web-7d9c-abcde: ImagePullBackOff`.
func (b Blocker) String() string { return b.Pod + ": " + b.Reason }

// ProgressOf computes the rollout's progress in s. The error is only for an Object of
// another kind.
func ProgressOf(s Snapshot) (Progress, error) {
	switch o := s.Object.(type) {
	case *appsv1.Deployment:
		return deploymentProgress(o, s), nil
	case *appsv1.StatefulSet:
		return statefulSetProgress(o, s), nil
	case *appsv1.DaemonSet:
		return daemonSetProgress(o, s), nil
	}
	return Progress{}, fmt.Errorf("no rollout view for %T", s.Object)
}

func deploymentProgress(d *appsv1.Deployment, s Snapshot) Progress {
	p := Progress{
		Kind: "deployment", Namespace: d.Namespace, Name: d.Name,
		Revision: d.Annotations[history.RevisionAnnotation],
		Desired:  rollout.DesiredReplicas(d),
	}
	p.Target = p.Desired
	var latest []*corev1.Pod
	newRS, _ := history.NewReplicaSet(d, s.ReplicaSets) // the controller's pick
	if newRS != nil {
		p.Cause = newRS.Annotations[history.ChangeCauseAnnotation]
	}
	for _, rs := range s.ReplicaSets {
		pods := ownedBy(s.Pods, rs.UID)
		isLatest := rs == newRS
		if isLatest {
			latest = pods
		}
		if !isLatest && len(pods) == 0 && rollout.SpecReplicas([]*appsv1.ReplicaSet{rs}) == 0 {
			continue
		}
		p.Revisions = append(p.Revisions, revisionPods(history.Revision(rs), rs.Name, isLatest, pods, d.Spec.MinReadySeconds, s.Now))
	}
	conds := conditionsOf(d.Status.Conditions, func(c appsv1.DeploymentCondition) condition {
		return condition{string(c.Type), string(c.Status), c.Reason, c.Message}
	})
	p.InPlace = inPlaceReason(conds)
	p.Message, p.Done, p.Err = kubectlStatus(d, "Deployment")
	p.heldByBudget(conds)
	progressing := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	// Failed as kubectl fails: a deadline counts once the status describes the spec (a
	// fixed template is not failed yet), and a blocked in-place change only while the
	// rollout is not done (an undo leaves the condition standing).
	switch {
	case progressing != nil && progressing.Reason == rollout.ReasonProgressDeadlineExceeded && d.Status.ObservedGeneration >= d.Generation,
		p.InPlace == inplace.ReasonBlocked && !p.Done:
		p.Phase = Failed
	case d.Spec.Paused:
		p.Phase = Paused
	}
	p.stage(s, conds, d.Status.ObservedGeneration)
	failureOf(d.ObjectMeta, d.Status.ObservedGeneration, conds, d.Spec.Paused).apply(&p, replicaSetHolder(newRS).marked)
	p.Analysis = analysisOf(d.Annotations, &p)
	p.finish(latest, s)
	p.awaitVerdict(d, replicaSetHolder(newRS), latest, s.Now)
	return p
}

func statefulSetProgress(set *appsv1.StatefulSet, s Snapshot) Progress {
	p := Progress{
		Kind: "statefulset", Namespace: set.Namespace, Name: set.Name, Revision: set.Status.UpdateRevision,
		Desired: rollout.Replicas(set.Spec.Replicas),
	}
	p.Target = p.Desired
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		p.Partition = ru.Partition
		p.Target = max(p.Desired-*ru.Partition, 0)
	}
	latest := p.revisionsByHash(s, set.Status.UpdateRevision, set.Spec.MinReadySeconds)
	conds := conditionsOf(set.Status.Conditions, func(c appsv1.StatefulSetCondition) condition {
		return condition{string(c.Type), string(c.Status), c.Reason, c.Message}
	})
	p.InPlace = inPlaceReason(conds)
	p.Message, p.Done, p.Err = kubectlStatus(set, "StatefulSet")
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		p.onDelete = true
		p.Done = set.Status.UpdatedReplicas >= p.Desired && set.Status.CurrentRevision == set.Status.UpdateRevision
	}
	if p.InPlace == inplace.ReasonBlocked && !p.Done {
		p.Phase = Failed
	}
	p.stage(s, conds, set.Status.ObservedGeneration)
	update := revisionNamed(s.Revisions, set.Status.UpdateRevision)
	if update != nil {
		p.Cause = update.Annotations[history.ChangeCauseAnnotation]
	}
	holder := revisionHolder(update)
	failureOf(set.ObjectMeta, set.Status.ObservedGeneration, conds, statefulSetPaused(set)).apply(&p, holder.marked)
	p.Analysis = analysisOf(set.Annotations, &p)
	p.finish(latest, s)
	p.awaitVerdict(set, holder, latest, s.Now)
	return p
}

func daemonSetProgress(ds *appsv1.DaemonSet, s Snapshot) Progress {
	p := Progress{
		Kind: "daemonset", Namespace: ds.Namespace, Name: ds.Name,
		Desired: ds.Status.DesiredNumberScheduled,
	}
	p.Target = p.Desired
	// A DaemonSet's current revision is its newest ControllerRevision: the controller
	// makes one for every template it runs.
	var newest *appsv1.ControllerRevision
	for _, r := range s.Revisions {
		if newest == nil || r.Revision > newest.Revision {
			newest = r
		}
	}
	var latestHash string
	if newest != nil {
		p.Revision = newest.Name
		p.Cause = newest.Annotations[history.ChangeCauseAnnotation]
		latestHash = newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	}
	latest := p.revisionsByHash(s, latestHash, ds.Spec.MinReadySeconds)
	conds := conditionsOf(ds.Status.Conditions, func(c appsv1.DaemonSetCondition) condition {
		return condition{string(c.Type), string(c.Status), c.Reason, c.Message}
	})
	p.InPlace = inPlaceReason(conds)
	p.Message, p.Done, p.Err = kubectlStatus(ds, "DaemonSet")
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		p.onDelete = true
		p.Done = ds.Status.UpdatedNumberScheduled >= p.Desired
	}
	switch {
	case p.InPlace == inplace.ReasonBlocked && !p.Done:
		p.Phase = Failed
	case daemonSetPaused(ds):
		p.Phase = Paused
	}
	p.stage(s, conds, ds.Status.ObservedGeneration)
	failureOf(ds.ObjectMeta, ds.Status.ObservedGeneration, conds, daemonSetPaused(ds)).apply(&p, revisionHolder(newest).marked)
	p.Analysis = analysisOf(ds.Annotations, &p)
	p.finish(latest, s)
	p.awaitVerdict(ds, revisionHolder(newest), latest, s.Now)
	return p
}

// revisionsByHash groups a StatefulSet's or DaemonSet's pods by their revision label
// and returns those of the latest (whose ControllerRevision is named latestName, or
// labelled latestName for a DaemonSet).
func (p *Progress) revisionsByHash(s Snapshot, latest string, minReadySeconds int32) []*corev1.Pod {
	var latestPods []*corev1.Pod
	for _, r := range s.Revisions {
		pods := podsOfRevision(s.Pods, r)
		hash := r.Labels[appsv1.ControllerRevisionHashLabelKey]
		isLatest := r.Name == latest || (hash != "" && hash == latest)
		if isLatest {
			latestPods = pods
		}
		if isLatest || len(pods) > 0 {
			p.Revisions = append(p.Revisions, revisionPods(r.Revision, r.Name, isLatest, pods, minReadySeconds, s.Now))
		}
	}
	return latestPods
}

// podsOfRevision are the pods of revision r: their controller-revision-hash label is
// r's name (a StatefulSet's pods) or r's hash label (a DaemonSet's).
func podsOfRevision(pods []*corev1.Pod, r *appsv1.ControllerRevision) []*corev1.Pod {
	hash := r.Labels[appsv1.ControllerRevisionHashLabelKey]
	var out []*corev1.Pod
	for _, pod := range pods {
		if h := pod.Labels[appsv1.ControllerRevisionHashLabelKey]; h == r.Name || (hash != "" && h == hash) {
			out = append(out, pod)
		}
	}
	return out
}

// finish sets what every kind computes alike: the revisions' order, the counts from
// them, the phase unless already decided, and the pod the rollout waits on.
func (p *Progress) finish(latest []*corev1.Pod, s Snapshot) {
	// Newest first, by number: listed objects come in no stable order (an informer's
	// store is a map), and a view redrawn from one snapshot to the next must not
	// swap its rows. The name breaks a tie (ReplicaSets without a revision are all 0).
	sort.Slice(p.Revisions, func(i, j int) bool {
		a, b := p.Revisions[i], p.Revisions[j]
		if a.number != b.number {
			return a.number > b.number
		}
		return a.Name < b.Name
	})
	p.Total, p.Updated, p.Ready, p.Available = 0, 0, 0, 0
	for _, r := range p.Revisions {
		p.Total += r.Pods
		p.Ready += r.Ready
		p.Available += r.Available
		if r.Latest {
			p.Updated += r.Pods
		}
	}
	if p.Phase == "" {
		p.Phase = Progressing
		if p.Done && (p.Err == nil || p.onDelete) {
			p.Phase = Complete
		}
	}
	if p.Phase != Complete {
		p.Blocking = blocker(latest, s.Pods)
	}
	p.Resizing = resizingOf(s.Pods)
	if p.Revisions == nil {
		p.Revisions = []RevisionPods{}
	}
}

// DoneCount is how far a rollout is, for its ETA: pods both updated and available.
func (p Progress) DoneCount() int32 { return min(p.Updated, p.Available) }

// WithETA sets p's ETA from the pace seen in obs (oldest first); a rate is needed, so
// nothing is set before two observations with progress between them.
func (p Progress) WithETA(obs []Observation) Progress {
	p.ETASeconds = nil
	if p.Settling != nil {
		// Counts are done; what is left is the verdict's wait.
		p.ETASeconds = p.Settling.SecondsLeft
		return p
	}
	if p.Phase != Progressing || len(obs) < 2 {
		return p
	}
	// The pace of the last paceWindow only: a record from an earlier stretch of the
	// same revision (a scale a day later) says nothing about now.
	last := obs[len(obs)-1]
	first := obs[0]
	for _, o := range obs {
		if last.At.Sub(o.At) <= paceWindow {
			first = o
			break
		}
	}
	elapsed := last.At.Sub(first.At).Seconds()
	done := float64(last.Done - first.Done)
	if elapsed <= 0 || done <= 0 {
		return p
	}
	left := float64(p.Target - last.Done)
	if left < 0 {
		left = 0
	}
	eta := left / (done / elapsed)
	eta = float64(int64(eta*10+0.5)) / 10
	p.ETASeconds = &eta
	return p
}

// paceWindow is how far back an ETA's pace is measured.
const paceWindow = 2 * time.Minute

// Observation is how many pods were updated and available at At.
type Observation struct {
	At   time.Time
	Done int32
}

// RecordedRevision is the revision p's workload's timeline is recorded under: what the
// controller passes (the revision number, update revision, or DaemonSet hash).
func (p Progress) RecordedRevision() string {
	if p.Kind == "daemonset" {
		if i := strings.LastIndexByte(p.Revision, '-'); i >= 0 {
			return p.Revision[i+1:]
		}
	}
	return p.Revision
}

// ObservationsOf turns a recorded timeline of the same revision into observations, so
// an ETA is known from the first snapshot: done is min(new, available) there too.
func ObservationsOf(t timeline.Timeline) []Observation {
	obs := make([]Observation, len(t.Samples))
	for i, s := range t.Samples {
		obs[i] = Observation{At: t.Start.Add(s.At), Done: min(s.New, s.Available)}
	}
	return obs
}

// kubectlStatus is kubectl's own status line for obj (its rollout status viewer), so
// kroll's plain output and exit decisions are kubectl's.
func kubectlStatus(obj runtime.Object, kind string) (string, bool, error) {
	viewer, err := polymorphichelpers.StatusViewerFor(appsv1.SchemeGroupVersion.WithKind(kind).GroupKind())
	if err != nil {
		return "", false, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", false, err
	}
	msg, done, err := viewer.Status(&unstructured.Unstructured{Object: content}, 0)
	if err != nil && msg == "" {
		msg = err.Error()
	}
	return strings.TrimSuffix(msg, "\n"), done, err
}

func revisionPods(revision int64, name string, latest bool, pods []*corev1.Pod, minReadySeconds int32, now time.Time) RevisionPods {
	r := RevisionPods{Revision: strconv.FormatInt(revision, 10), number: revision, Name: name, Latest: latest}
	for _, p := range pods {
		if !rollout.IsPodActive(p) {
			continue
		}
		r.Pods++
		if rollout.IsPodReady(p) {
			r.Ready++
		}
		if rollout.IsPodAvailable(p, minReadySeconds, now) {
			r.Available++
		}
	}
	return r
}

func ownedBy(pods []*corev1.Pod, uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// inPlaceReason is the reason of the InPlaceUpdate condition among conds, or "".
func inPlaceReason(conds []condition) string {
	for _, c := range conds {
		if c.Type == inplace.ConditionType {
			return c.Reason
		}
	}
	return ""
}
