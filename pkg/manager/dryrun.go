package manager

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// DryRunResult is what a dry run found.
type DryRunResult struct {
	// Workloads are the workloads with writes, in kind then namespace/name order.
	Workloads []WorkloadWrites
	// Unattributed are writes no workload owns (an orphan's, a claim's).
	Unattributed []refusedWrite
	// Events counts the events the controllers would have recorded: not workload
	// writes, left out of the verdict.
	Events int
	// Unchanged counts the updates and patches that would have left their object as
	// it is: answered as done, left out of the list and the verdict.
	Unchanged int
	// Synced counts the workloads in the caches; Idle is false when the timeout came
	// before every controller had synced each of them and gone quiet.
	Synced int
	Idle   bool
	// Took is how long the controllers ran.
	Took time.Duration
}

// WorkloadWrites are the writes kroll would make for one workload.
type WorkloadWrites struct {
	Workload WorkloadRef
	// InFlight: the workload's rollout is not complete by its status, so its writes
	// are that rollout's next steps.
	InFlight bool
	Writes   []refusedWrite
}

// Unexpected counts the writes beyond in-flight rollouts' next steps: the verdict.
func (r DryRunResult) Unexpected() int {
	n := len(r.Unattributed)
	for _, w := range r.Workloads {
		if !w.InFlight {
			n += len(w.Writes)
		}
	}
	return n
}

// dryRunQuiet is how long every queue must have been empty, with nothing processed
// and no write tried, for the controllers to count as done: longer than the
// queues' unfinished-work report period (500ms), and than the refused writes' back-off
// for their first eight retries (5ms doubling: 1.3s for the eighth).
const dryRunQuiet = 2 * time.Second

// DryRun runs the controllers opts selects against cfg with every write refused and
// recorded (see writeRecorder), without leader election (taking the Lease is a write),
// until each controller has synced every workload of its kind in the caches once (one
// full resync: the informers hand each to its queue when they list) and the queues
// have been quiet for dryRunQuiet, or until timeout. It then reports the writes the
// controllers tried, by the workload they are for.
func DryRun(ctx context.Context, cfg *rest.Config, opts Options, timeout time.Duration) (DryRunResult, error) {
	if err := opts.Validate(); err != nil {
		return DryRunResult{}, err
	}
	opts.defaults()
	enabled, _ := EnabledControllers(opts.Controllers)
	rec := newWriteRecorder()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m, err := newControllers(ctx, cfg, opts, enabled, rec.wrap)
	if err != nil {
		return DryRunResult{}, err
	}
	defer m.stopEvents()
	view := newCacheView(m.factory)
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); m.run(ctx, &health{}) }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	idle := waitIdle(ctx, timer.C, m.factory, view, enabled, rec)
	cancel()
	<-done
	result := view.report(rec)
	result.Idle, result.Took = idle, time.Since(start)
	return result, parent.Err()
}

// queueOf names each controller's work queue (its metrics' name label).
var queueOf = map[string]string{Deployment: "deployment", ReplicaSet: "replicaset",
	ReplicationController: "replicationmanager", StatefulSet: "statefulset", DaemonSet: "daemonset"}

// waitIdle waits for the caches to sync and then for each enabled controller to have
// processed at least as many items as it has workloads, with its queue empty and
// quiet (nothing processed, no write tried) for dryRunQuiet. false when timeout or
// ctx came first.
func waitIdle(ctx context.Context, timeout <-chan time.Time, f informers.SharedInformerFactory, view *cacheView,
	enabled []string, rec *writeRecorder) bool {
	logger := klog.FromContext(ctx)
	base := queueStats()
	synced := make(chan bool, 1)
	go func() {
		ok := true
		for _, s := range f.WaitForCacheSync(ctx.Done()) {
			ok = ok && s
		}
		synced <- ok
	}()
	select {
	case ok := <-synced:
		if !ok {
			return false
		}
	case <-timeout:
		return false
	}
	want := view.counts()
	logger.Info("Dry run: caches synced", "workloads", want)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last map[string]queueStat
	quietSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timeout:
			return false
		case <-tick.C:
		}
		now := queueStats()
		_, _, lastWrite := rec.snapshot()
		busy := false
		for _, name := range enabled {
			q := queueOf[name]
			s := now[q]
			if s.processed-base[q].processed < float64(want[name]) || s.depth > 0 || s.unfinished > 0 || s != last[q] {
				busy = true
			}
		}
		if busy || lastWrite.After(quietSince) {
			quietSince, last = time.Now(), now
			continue
		}
		if time.Since(quietSince) >= dryRunQuiet {
			return true
		}
	}
}

// queueStat is one work queue's state from its metrics.
type queueStat struct{ depth, processed, unfinished float64 }

// queueStats reads every work queue's depth, items processed and unfinished work from
// the metrics registry (the queues report there, by name).
func queueStats() map[string]queueStat {
	out := map[string]queueStat{}
	families, err := metrics.Registry.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var name string
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					name = l.GetValue()
				}
			}
			s := out[name]
			switch f.GetName() {
			case "workqueue_depth":
				s.depth = m.GetGauge().GetValue()
			case "workqueue_work_duration_seconds":
				s.processed = float64(m.GetHistogram().GetSampleCount())
			case "workqueue_unfinished_work_seconds":
				s.unfinished = m.GetGauge().GetValue()
			default:
				continue
			}
			out[name] = s
		}
	}
	return out
}

// cacheView reads the informer caches for attribution and the in-flight verdict. Its
// listers are asked for before the factory starts, so their informers start with it.
type cacheView struct {
	deployments  func() ([]*appsv1.Deployment, error)
	statefulSets func() ([]*appsv1.StatefulSet, error)
	daemonSets   func() ([]*appsv1.DaemonSet, error)
	replicaSets  func() ([]*appsv1.ReplicaSet, error)
	object       func(kind, namespace, name string) (metav1.Object, runtime.Object, bool)
	rcCount      func() int
}

func newCacheView(f informers.SharedInformerFactory) *cacheView {
	d, s, ds := f.Apps().V1().Deployments().Lister(), f.Apps().V1().StatefulSets().Lister(), f.Apps().V1().DaemonSets().Lister()
	rs, rc := f.Apps().V1().ReplicaSets().Lister(), f.Core().V1().ReplicationControllers().Lister()
	pods, revs := f.Core().V1().Pods().Lister(), f.Apps().V1().ControllerRevisions().Lister()
	all := labels.Everything()
	found := func(o metav1.Object, r runtime.Object, err error) (metav1.Object, runtime.Object, bool) {
		return o, r, err == nil
	}
	return &cacheView{
		deployments:  func() ([]*appsv1.Deployment, error) { return d.List(all) },
		statefulSets: func() ([]*appsv1.StatefulSet, error) { return s.List(all) },
		daemonSets:   func() ([]*appsv1.DaemonSet, error) { return ds.List(all) },
		replicaSets:  func() ([]*appsv1.ReplicaSet, error) { return rs.List(all) },
		rcCount: func() int {
			l, _ := rc.List(all)
			return len(l)
		},
		object: func(kind, namespace, name string) (metav1.Object, runtime.Object, bool) {
			switch kind {
			case "Deployment":
				o, err := d.Deployments(namespace).Get(name)
				return found(o, o, err)
			case "StatefulSet":
				o, err := s.StatefulSets(namespace).Get(name)
				return found(o, o, err)
			case "DaemonSet":
				o, err := ds.DaemonSets(namespace).Get(name)
				return found(o, o, err)
			case "ReplicaSet":
				o, err := rs.ReplicaSets(namespace).Get(name)
				return found(o, o, err)
			case "ReplicationController":
				o, err := rc.ReplicationControllers(namespace).Get(name)
				return found(o, o, err)
			case "Pod":
				o, err := pods.Pods(namespace).Get(name)
				return found(o, o, err)
			case "ControllerRevision":
				o, err := revs.ControllerRevisions(namespace).Get(name)
				return found(o, o, err)
			}
			return nil, nil, false
		},
	}
}

// counts are the workloads of each controller's kind in the caches.
func (v *cacheView) counts() map[string]int {
	d, _ := v.deployments()
	s, _ := v.statefulSets()
	ds, _ := v.daemonSets()
	rs, _ := v.replicaSets()
	return map[string]int{Deployment: len(d), StatefulSet: len(s), DaemonSet: len(ds), ReplicaSet: len(rs),
		ReplicationController: v.rcCount()}
}

func (v *cacheView) ownersOf(kind, namespace, name string) ([]metav1.OwnerReference, bool) {
	o, _, ok := v.object(kind, namespace, name)
	if !ok {
		return nil, false
	}
	return o.GetOwnerReferences(), true
}

// report groups rec's writes by workload and judges each workload's rollout.
func (v *cacheView) report(rec *writeRecorder) DryRunResult {
	writes, events, _ := rec.snapshot()
	r := DryRunResult{Events: events, Unchanged: rec.unchangedWrites()}
	for _, c := range v.counts() {
		r.Synced += c
	}
	byWorkload := map[WorkloadRef]*WorkloadWrites{}
	for _, w := range writes {
		ref, ok := attribute(w.Kind, w.Namespace, w.Name, w.Owners, v.ownersOf)
		if !ok {
			r.Unattributed = append(r.Unattributed, w)
			continue
		}
		ww := byWorkload[ref]
		if ww == nil {
			ww = &WorkloadWrites{Workload: ref}
			if _, obj, found := v.object(ref.Kind, ref.Namespace, ref.Name); found {
				ww.InFlight = rolloutInFlight(obj)
			}
			byWorkload[ref] = ww
		}
		ww.Writes = append(ww.Writes, w)
	}
	for _, ww := range byWorkload {
		r.Workloads = append(r.Workloads, *ww)
	}
	sort.Slice(r.Workloads, func(i, j int) bool {
		a, b := r.Workloads[i].Workload, r.Workloads[j].Workload
		return a.Kind+"/"+a.Namespace+"/"+a.Name < b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	return r
}

// Print writes the result for a person: per workload, its writes (verb, object, why),
// then how many events were left out, then the one summary line (also returned).
func (r DryRunResult) Print(w io.Writer) (summary string) {
	line := func(x refusedWrite, tag string) {
		obj := x.Kind + " " + x.Namespace + "/" + x.Name
		if x.Subresource != "" {
			obj += " (" + x.Subresource + ")"
		}
		fmt.Fprintf(w, "  %s %s: %s%s\n", x.Verb, obj, x.Why, tag)
	}
	for _, ww := range r.Workloads {
		state := ""
		if ww.InFlight {
			state = " (rollout in flight)"
		}
		fmt.Fprintf(w, "%s%s\n", ww.Workload, state)
		for _, x := range ww.Writes {
			tag := ""
			if ww.InFlight {
				tag = " [in flight]"
			}
			line(x, tag)
		}
	}
	if len(r.Unattributed) > 0 {
		fmt.Fprintln(w, "owned by no workload")
		for _, x := range r.Unattributed {
			line(x, "")
		}
	}
	if r.Events > 0 {
		fmt.Fprintf(w, "(%d event writes left out: events are not workload writes)\n", r.Events)
	}
	if r.Unchanged > 0 {
		fmt.Fprintf(w, "(%d writes left out that would change nothing)\n", r.Unchanged)
	}
	inFlight := 0
	for _, ww := range r.Workloads {
		if ww.InFlight {
			inFlight += len(ww.Writes)
		}
	}
	scope := fmt.Sprintf("%d workloads synced in %.0fs", r.Synced, r.Took.Seconds())
	if !r.Idle {
		scope += ", stopped by --dry-run-timeout before the controllers were idle"
	}
	if n := r.Unexpected(); n > 0 {
		var names []string
		for _, ww := range r.Workloads {
			if !ww.InFlight {
				names = append(names, ww.Workload.String())
			}
		}
		if len(r.Unattributed) > 0 {
			names = append(names, "objects of no workload")
		}
		names = slices.Compact(names)
		return fmt.Sprintf("dry run: kroll would make %d writes beyond in-flight rollouts' next steps (%s; %s): review them before switching",
			n, strings.Join(names, ", "), scope)
	}
	return fmt.Sprintf("dry run: no writes beyond in-flight rollouts' next steps (%d in flight; %s)", inFlight, scope)
}
