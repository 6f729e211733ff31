package e2e

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// startUpstreamControllers runs kube-controller-manager's workload controllers against
// c (in this process) until the returned stop is called; stop returns once they have
// stopped.
func startUpstreamControllers(t *testing.T, c *cluster.Cluster) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.RunUpstreamWorkloadControllers(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("upstream workload controllers: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// write is one change the ledger saw.
type write struct {
	kind, name, member string
	// verb is ADDED, MODIFIED or DELETED; parts, for MODIFIED, what changed (labels,
	// annotations, ownerReferences, deletion, spec, status, …).
	verb, parts string
	// manager is the managedFields manager of the newest entry (several on a tie).
	manager string
}

func (w write) String() string {
	return fmt.Sprintf("%s %s/%s %s by %s", w.verb, w.kind, w.name, w.parts, w.manager)
}

// ledger records every change to the workloads and their children in one namespace
// from the moment it is started: ADDED, DELETED, and MODIFIED where a controller's
// part changed. The kubelet's pod status, the scheduler's binding and the volume
// binder's claim status are no controller's writes and are left out.
type ledger struct {
	mu     sync.Mutex
	writes []write
	cancel context.CancelFunc
}

func startLedger(t *testing.T, client kubernetes.Interface, ns string) *ledger {
	l := &ledger{}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	t.Cleanup(cancel)
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"Deployment":            f.Apps().V1().Deployments().Informer(),
		"ReplicaSet":            f.Apps().V1().ReplicaSets().Informer(),
		"StatefulSet":           f.Apps().V1().StatefulSets().Informer(),
		"DaemonSet":             f.Apps().V1().DaemonSets().Informer(),
		"ControllerRevision":    f.Apps().V1().ControllerRevisions().Informer(),
		"ReplicationController": f.Core().V1().ReplicationControllers().Informer(),
		"Pod":                   f.Core().V1().Pods().Informer(),
		"PersistentVolumeClaim": f.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					l.record(kind, obj, "ADDED", "")
				}
			},
			UpdateFunc: func(old, obj any) {
				if parts := changedParts(kind, old, obj); parts != "" {
					l.record(kind, obj, "MODIFIED", parts)
				}
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				l.record(kind, obj, "DELETED", "")
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return l
}

func (l *ledger) record(kind string, obj any, verb, parts string) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	member := m.GetLabels()[workloadLabel]
	var newest time.Time
	var managers []string
	for _, e := range m.GetManagedFields() {
		if e.Time == nil {
			continue
		}
		name := e.Manager
		if e.Subresource != "" {
			name += "/" + e.Subresource
		}
		switch {
		case e.Time.After(newest):
			newest, managers = e.Time.Time, []string{name}
		case e.Time.Time.Equal(newest):
			managers = append(managers, name)
		}
	}
	sort.Strings(managers)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, write{kind: kind, name: m.GetName(), member: member, verb: verb, parts: parts, manager: strings.Join(managers, "|")})
}

// seen returns what was seen so far; the recording goes on.
func (l *ledger) seen() []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]write(nil), l.writes...)
}

// stop ends the recording and returns what was seen.
func (l *ledger) stop() []write {
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]write(nil), l.writes...)
}

// changedParts names what changed between two versions of an object that a controller
// writes: metadata a controller owns, and (but for pods and claims, whose spec and
// status are the scheduler's, the kubelet's and the volume binder's) spec and status.
func changedParts(kind string, old, obj any) string {
	om, nm := old.(metav1.Object), obj.(metav1.Object)
	var parts []string
	add := func(name string, a, b any) {
		if !equality.Semantic.DeepEqual(a, b) {
			parts = append(parts, name)
		}
	}
	add("labels", om.GetLabels(), nm.GetLabels())
	add("ownerReferences", om.GetOwnerReferences(), nm.GetOwnerReferences())
	add("finalizers", om.GetFinalizers(), nm.GetFinalizers())
	add("deletion", om.GetDeletionTimestamp() != nil, nm.GetDeletionTimestamp() != nil)
	if kind == "Pod" || kind == "PersistentVolumeClaim" {
		return strings.Join(parts, ",")
	}
	var keys []string
	for k := range mergeKeys(om.GetAnnotations(), nm.GetAnnotations()) {
		if om.GetAnnotations()[k] != nm.GetAnnotations()[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		parts = append(parts, "annotations["+strings.Join(keys, " ")+"]")
	}
	o, n := reflect.ValueOf(old).Elem(), reflect.ValueOf(obj).Elem()
	for _, field := range []string{"Spec", "Status", "Revision", "Data"} {
		if f := o.FieldByName(field); f.IsValid() {
			add(strings.ToLower(field), f.Interface(), n.FieldByName(field).Interface())
		}
	}
	return strings.Join(parts, ",")
}

// summarize counts writes by member, kind, verb and manager, for the closing note.
func summarize(writes []write) string {
	counts := map[string]int{}
	for _, w := range writes {
		counts[fmt.Sprintf("%-13s %-22s %-8s %-28s by %s", w.member, w.kind, w.verb, w.parts, w.manager)]++
	}
	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("  %3d × %s", n, k))
	}
	sort.Strings(lines)
	return fmt.Sprintf("%d writes\n%s", len(writes), strings.Join(lines, "\n"))
}

// checkLedger asserts the takeover's writes: none at all for a steady member; for an
// in-flight one, no churn — every ReplicaSet, ControllerRevision, pod and claim created
// after the switch is still there at the end (final lists what is).
//
// known, when set, names a difference still open: it is logged, not failed, and must
// be all of the write.
func checkLedger(t *testing.T, p *population, writes []write, final map[string]bool, known func(write) bool) {
	t.Helper()
	inFlight := map[string]bool{}
	for _, m := range p.members {
		inFlight[m.name] = m.inFlight
	}
	for _, w := range writes {
		switch {
		case known != nil && known(w):
			t.Logf("known difference, %s: %s", w.member, w)
		case !inFlight[w.member]:
			t.Errorf("steady %s: %s", w.member, w)
		case w.verb == "ADDED" && w.kind != "Deployment" && !final[w.kind+"/"+w.name]:
			t.Errorf("in-flight %s: %s, gone again by the end (churn)", w.member, w)
		}
	}
}

// finalState is every member's end state as upstream's and kroll's controllers both
// name and count it: per workload its status, and per revision (ReplicaSet or
// ControllerRevision) its name, number, revision-history and pods. Pod names (random
// for ReplicaSets) and timestamps are left out. It also returns the names of the
// objects there are, as kind/name.
func finalState(ctx context.Context, client kubernetes.Interface, ns string) (map[string]string, map[string]bool, error) {
	out := map[string][]string{}
	exists := map[string]bool{}
	add := func(member, line string) { out[member] = append(out[member], line) }
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	podsBy := map[string]int{} // member/label=value → live pods
	for _, p := range pods.Items {
		exists["Pod/"+p.Name] = true
		if p.DeletionTimestamp != nil {
			continue
		}
		m := p.Labels[workloadLabel]
		podsBy[m]++
		for _, key := range []string{appsv1.DefaultDeploymentUniqueLabelKey, appsv1.ControllerRevisionHashLabelKey} {
			if v, ok := p.Labels[key]; ok {
				podsBy[m+"/"+v]++
			}
		}
	}
	conditions := func(cs any) string {
		var parts []string
		v := reflect.ValueOf(cs)
		for i := range v.Len() {
			c := v.Index(i)
			parts = append(parts, fmt.Sprintf("%v=%v/%v %q", c.FieldByName("Type"), c.FieldByName("Status"), c.FieldByName("Reason"), c.FieldByName("Message")))
		}
		return strings.Join(parts, "; ")
	}
	ds, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, d := range ds.Items {
		s := d.Status
		add(d.Name, fmt.Sprintf("Deployment generation %d revision %q paused %v; status observed %d replicas %d updated %d ready %d available %d unavailable %d collisions %v; %s",
			d.Generation, d.Annotations["deployment.kubernetes.io/revision"], d.Spec.Paused, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas, ptrString(s.CollisionCount), conditions(s.Conditions)))
	}
	rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, rs := range rss.Items {
		exists["ReplicaSet/"+rs.Name] = true
		m := rs.Labels[workloadLabel]
		owner := ""
		if ref := metav1.GetControllerOf(&rs); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		s := rs.Status
		add(m, fmt.Sprintf("ReplicaSet %s owner %q revision %q history %q desired %q max %q; spec %d; status observed %d replicas %d labelled %d ready %d available %d; pods %d; %s",
			rs.Name, owner, rs.Annotations["deployment.kubernetes.io/revision"], rs.Annotations["deployment.kubernetes.io/revision-history"],
			rs.Annotations["deployment.kubernetes.io/desired-replicas"], rs.Annotations["deployment.kubernetes.io/max-replicas"],
			*rs.Spec.Replicas, s.ObservedGeneration, s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas,
			podsBy[m+"/"+rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]], conditions(s.Conditions)))
	}
	rcs, err := client.CoreV1().ReplicationControllers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, rc := range rcs.Items {
		s := rc.Status
		add(rc.Name, fmt.Sprintf("ReplicationController spec %d; status observed %d replicas %d labelled %d ready %d available %d; pods %d; %s",
			*rc.Spec.Replicas, s.ObservedGeneration, s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, podsBy[rc.Name], conditions(s.Conditions)))
	}
	sss, err := client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, set := range sss.Items {
		s := set.Status
		add(set.Name, fmt.Sprintf("StatefulSet generation %d; status observed %d replicas %d ready %d current %d updated %d available %d current %q update %q collisions %v; %s",
			set.Generation, s.ObservedGeneration, s.Replicas, s.ReadyReplicas, s.CurrentReplicas, s.UpdatedReplicas, s.AvailableReplicas, s.CurrentRevision, s.UpdateRevision, ptrString(s.CollisionCount), conditions(s.Conditions)))
	}
	dss, err := client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, set := range dss.Items {
		s := set.Status
		add(set.Name, fmt.Sprintf("DaemonSet generation %d; status observed %d desired %d current %d updated %d ready %d available %d unavailable %d misscheduled %d collisions %v; %s",
			set.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable, s.NumberUnavailable, s.NumberMisscheduled, ptrString(s.CollisionCount), conditions(s.Conditions)))
	}
	revs, err := client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, r := range revs.Items {
		exists["ControllerRevision/"+r.Name] = true
		m := r.Labels[workloadLabel]
		hash := r.Labels[appsv1.ControllerRevisionHashLabelKey]
		if strings.HasPrefix(r.Name, m+"-") && r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" {
			hash = r.Name // a StatefulSet's pods carry the revision's name
		}
		add(m, fmt.Sprintf("ControllerRevision %s revision %d; pods %d", r.Name, r.Revision, podsBy[m+"/"+hash]))
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, pvc := range claims.Items {
		exists["PersistentVolumeClaim/"+pvc.Name] = true
		add(pvc.Labels[workloadLabel], "PersistentVolumeClaim "+pvc.Name)
	}
	state := map[string]string{}
	for m, lines := range out {
		sort.Strings(lines)
		state[m] = strings.Join(lines, "\n")
	}
	return state, exists, nil
}

func ptrString(n *int32) string {
	if n == nil {
		return "<nil>"
	}
	return fmt.Sprint(*n)
}

// compareStates reports every member whose end state differs from the control's.
func compareStates(t *testing.T, what string, got, control map[string]string) {
	t.Helper()
	for m, want := range control {
		if sameButProgressRace(got[m], want) {
			t.Logf("%s: %s ends as in the all-upstream run but for the ReplicaSet its Progressing message names:\n got:\n%s\n upstream:\n%s", what, m, got[m], want)
			continue
		}
		if got[m] != want {
			t.Errorf("%s: %s ends differently from an all-upstream run:\n got:\n%s\n upstream:\n%s", what, m, got[m], want)
		}
	}
	for m := range got {
		if _, ok := control[m]; !ok {
			t.Errorf("%s: %s exists but not in the all-upstream run:\n%s", what, m, got[m])
		}
	}
}

// successfullyProgressed is the message of a Deployment's Progressing condition at
// reason NewReplicaSetAvailable, and the ReplicaSet it names.
var successfullyProgressed = regexp.MustCompile(`ReplicaSet \\"[^"\\]+\\" has successfully progressed\.`)

// sameButProgressRace tells whether two final states differ only in the ReplicaSet a
// Deployment's Progressing condition names as having progressed. Upstream's controller
// rewrites a condition only when its status or reason changes: a Recreate rollout none
// of whose syncs happened to see progress midway (one the machine's load spaced out)
// goes from NewReplicaSetAvailable to NewReplicaSetAvailable, keeps the message naming
// the previous ReplicaSet, and keeps the condition's place in the list, where a sync
// that saw progress renames it and moves it last. Which one an all-upstream run shows
// is a race of upstream's; the ReplicaSets themselves are still compared in full.
func sameButProgressRace(a, b string) bool {
	if a == b || !successfullyProgressed.MatchString(a) || !successfullyProgressed.MatchString(b) {
		return false
	}
	normal := func(s string) string {
		lines := strings.Split(successfullyProgressed.ReplaceAllString(s, `ReplicaSet \"…\" has successfully progressed.`), "\n")
		for i, line := range lines {
			if m := deploymentConditions.FindStringSubmatch(line); m != nil {
				conditions := strings.Split(m[2], "; ")
				slices.Sort(conditions)
				lines[i] = m[1] + strings.Join(conditions, "; ")
			}
		}
		return strings.Join(lines, "\n")
	}
	return normal(a) == normal(b)
}

// deploymentConditions splits a Deployment's line of finalState before its conditions.
var deploymentConditions = regexp.MustCompile(`^(Deployment .* collisions [^;]*; )(.*)$`)

func mergeKeys(a, b map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
