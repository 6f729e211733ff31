package clustertest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// StatefulSetWatcher checks a StatefulSet's bounds at every change it observes, and
// records the order in which pods appeared and started terminating (or, removed in the
// request that deleted them, went):
//
//	pods not Ready, terminating or gone from an in-range ordinal once seen there
//	  ≤ maxUnavailable (1 unless the set says otherwise)
//	pods below the partition never run the update revision (RollingUpdate)
//
// Start it once the set's pods are all Ready.
type StatefulSetWatcher struct {
	name string
	sets appslisters.StatefulSetNamespaceLister
	pods corelisters.PodNamespaceLister
	observer

	// seen is the UID last observed under each pod name; terminating the names whose pod
	// was seen terminating or gone since; lost the names gone from an in-range ordinal
	// and not back yet.
	seen              map[string]types.UID
	terminating, lost map[string]bool
	// Created and Terminated are pod names in the order observed.
	Created, Terminated []string
}

// WatchStatefulSet starts watching namespace/name until the test ends.
func WatchStatefulSet(t testing.TB, client kubernetes.Interface, namespace, name string) *StatefulSetWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	sets, pods := factory.Apps().V1().StatefulSets(), factory.Core().V1().Pods()
	w := &StatefulSetWatcher{name: name, sets: sets.Lister().StatefulSets(namespace), pods: pods.Lister().Pods(namespace),
		observer: observer{what: "statefulset " + name}, seen: map[string]types.UID{}, terminating: map[string]bool{}, lost: map[string]bool{}}
	w.start(t, factory, w.check, sets.Informer(), pods.Informer())
	return w
}

func (w *StatefulSetWatcher) check() {
	if !w.synced.Load() {
		return
	}
	set, err := w.sets.Get(w.name)
	if err != nil {
		return
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return
	}
	pods, err := w.pods.List(selector)
	if err != nil {
		return
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	w.mu.Lock()
	defer w.mu.Unlock()
	var unready []string
	state := []string{}
	present := map[string]bool{}
	for _, p := range pods {
		present[p.Name] = true
		if uid, ok := w.seen[p.Name]; !ok || uid != p.UID {
			if ok && !w.terminating[p.Name] {
				w.Terminated = append(w.Terminated, p.Name) // replaced between two observations
			}
			w.seen[p.Name] = p.UID
			w.terminating[p.Name] = false
			delete(w.lost, p.Name)
			w.Created = append(w.Created, p.Name)
		}
		if p.DeletionTimestamp != nil && !w.terminating[p.Name] {
			w.terminating[p.Name] = true
			w.Terminated = append(w.Terminated, p.Name)
		}
		if p.DeletionTimestamp != nil || !rollout.IsPodReady(p) {
			unready = append(unready, p.Name)
		}
		state = append(state, fmt.Sprintf("%s:%s", p.Name, p.Labels[appsv1.StatefulSetRevisionLabel]))
	}
	start, replicas := 0, int(*set.Spec.Replicas)
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	var gone []string
	for name := range w.seen {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		o := ordinalOf(name)
		inRange := o >= start && o < start+replicas
		if !w.terminating[name] {
			w.terminating[name] = true
			w.Terminated = append(w.Terminated, name)
		}
		if _, went := w.lost[name]; !went {
			w.lost[name] = inRange // gone now: from an ordinal the set keeps, or one it scaled away
		}
		if w.lost[name] && inRange {
			unready = append(unready, name+"(gone)")
		}
	}
	sort.Strings(unready)
	fail := w.observation(func() string { return strings.Join(state, " ") })
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(*set.Spec.Replicas), false)
		if err == nil {
			maxUnavailable = max(n, 1)
		}
	}
	if set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement && len(unready) > maxUnavailable {
		fail("%d pods not ready (%s), more than %d", len(unready), strings.Join(unready, ","), maxUnavailable)
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition != nil &&
		set.Status.UpdateRevision != set.Status.CurrentRevision {
		for _, p := range pods {
			if ordinal, _ := strconv.Atoi(p.Labels[appsv1.PodIndexLabel]); ordinal < int(*ru.Partition) && p.Labels[appsv1.StatefulSetRevisionLabel] == set.Status.UpdateRevision {
				fail("pod %s, below partition %d, runs the update revision", p.Name, *ru.Partition)
			}
		}
	}
}

// ordinalOf is the ordinal a StatefulSet pod's name ends in, -1 if none.
func ordinalOf(name string) int {
	i := strings.LastIndexByte(name, '-')
	o, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil {
		return -1
	}
	return o
}

// Order returns the pods created and terminated so far, in the order observed.
func (w *StatefulSetWatcher) Order() (created, terminated []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.Created...), append([]string(nil), w.Terminated...)
}
