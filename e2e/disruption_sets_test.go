package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// budgetStatefulSet is the StatefulSet web of replicas pods labelled app=nginx, with
// kroll.dev/disruption-budget: setting, updated in place under mode; maxUnavailable 0
// is the ordered update (one pod at a time, each waited for), otherwise a Parallel
// set updated maxUnavailable at a time.
func budgetStatefulSet(replicas, maxUnavailable int, setting string, mode inplace.Mode) string {
	policy, strategy := "OrderedReady", ""
	if maxUnavailable > 0 {
		policy, strategy = "Parallel", fmt.Sprintf("    rollingUpdate:\n      maxUnavailable: %d\n", maxUnavailable)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
%sspec:
  replicas: %d
  serviceName: web
  podManagementPolicy: %s
  updateStrategy:
    type: RollingUpdate
%s  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: nginx:1.14.2
`, budgetAnnotations(setting, mode), replicas, policy, strategy)
}

// budgetDaemonSet is the DaemonSet agent (app=nginx) updated maxUnavailable nodes at a
// time, with kroll.dev/disruption-budget: setting, updated in place under mode.
func budgetDaemonSet(maxUnavailable int, setting string, mode inplace.Mode) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
%sspec:
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: %d
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: nginx:1.14.2
`, budgetAnnotations(setting, mode), maxUnavailable)
}

// setDrainDuringRollout rolls workload (kind/name, pods app=nginx, replicas of them,
// already applied) out to nginx:1.16.1 while a drain runs, under web-pdb (minAvailable
// min): `kubectl drain` of the node with most of its pods, or, for a DaemonSet (whose
// pods drain skips), the eviction of its old pod on one node, retried as drain retries.
// The watcher checks every observed state; hold says whether the budget must hold.
// It returns the fewest pods available in any observed state.
func setDrainDuringRollout(t *testing.T, s *scene, kind, name string, replicas, min int, hold bool) int32 {
	s.apply(t, budgetManifest(min))
	s.kubectl(t, "rollout", "status", kind+"/"+name, "--timeout=2m")
	s.budgetSettled(t, int32(replicas-min))
	node, onNode := s.busiestNode(t)
	t.Logf("draining %s, which runs %d of the %d pods", node, onNode, replicas)

	w := clustertest.WatchBudget(t, s.c.Client, s.ns, labels.SelectorFromSet(labels.Set{"app": "nginx"}), 0, int32(min))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var drainOut string
	var drainErr error
	var evicted int
	wg.Add(1)
	go func() {
		defer wg.Done()
		if kind != "daemonset" {
			drainOut, drainErr = s.tryKubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m")
			return
		}
		// As drain does for each pod: evict the node's old pod, retrying while the
		// budget refuses, until it goes (its successor, made by the rollout or by the
		// DaemonSet at once, is left alone).
		for ctx.Err() == nil && evicted == 0 {
			for _, p := range s.pods(t, "app=nginx") {
				if p.Spec.NodeName != node || p.DeletionTimestamp != nil || p.Spec.Containers[0].Image != "nginx:1.14.2" {
					continue
				}
				err := s.c.Client.PolicyV1().Evictions(s.ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: s.ns}})
				if err == nil {
					evicted++
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	s.kubectl(t, "set", "image", kind+"/"+name, "nginx=nginx:1.16.1")
	s.kubectl(t, "rollout", "status", kind+"/"+name, "--timeout=4m")
	stop()
	wg.Wait()
	if kind != "daemonset" {
		defer s.kubectl(t, "uncordon", node)
		if drainErr != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", node, drainErr, drainOut)
		}
	} else {
		t.Logf("evicted %d pods on %s during the rollout", evicted, node)
	}
	want := replicas
	eventually(t, 2*time.Minute, fmt.Sprintf("%d pods of nginx:1.16.1 ready", want), func(context.Context) (bool, string) {
		var ok int
		var where []string
		for _, p := range s.pods(t, "app=nginx") {
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == "nginx:1.16.1" && isPodReady(p) && (kind == "daemonset" || p.Spec.NodeName != node) {
				ok++
			}
			where = append(where, p.Name+"@"+p.Spec.NodeName+":"+p.Spec.Containers[0].Image)
		}
		return ok == want, strings.Join(where, " ")
	})
	if hold {
		w.Verify(t, 10)
	} else {
		w.Report(t)
	}
	lowest := w.LowestAvailable()
	s.kubectl(t, "delete", "pdb", "web-pdb")
	s.kubectl(t, "delete", kind, name)
	return lowest
}

// With kroll.dev/disruption-budget: Respect, StatefulSet and DaemonSet rollouts draw on
// the budget a drain draws on: the pods a rolling update replaces are evicted, and
// those it restarts in place (InPlace…) take the budget's disruptions first, so the
// pods available never go below the budget's minAvailable at any observed state, and
// both the rollout and the drain finish. With Ignore the fewest is measured and logged.
// In place, measured: 5 available at the fewest under minAvailable 5 (30 and 33 states,
// none below); with the restarts' takes left out, 4 (StatefulSet) and 3 (DaemonSet).
// One cluster of 6 nodes serves every scene (each removes its workload and budget).
func TestDisruptionBudgetSetsDrainDuringRollout(t *testing.T) {
	c := clustertest.Start(t, clustertest.WithNodes(6), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.PodStartupDelay = 2 * time.Second // each new pod takes a while: the rollout and the drain overlap
	}))
	type scenario struct {
		name, kind, workload string
		manifest             func(setting string) string
		replicas, min        int
		// settings are the kroll.dev/disruption-budget settings run; nil: both.
		settings []string
	}
	respect := []string{"Respect"}
	lowest := map[string]int32{}
	for _, sc := range []scenario{
		{"StatefulSetOrdered", "statefulset", "web", func(s string) string { return budgetStatefulSet(10, 0, s, inplace.Off) }, 10, 8, nil},
		{"StatefulSetMaxUnavailable", "statefulset", "web", func(s string) string { return budgetStatefulSet(10, 3, s, inplace.Off) }, 10, 8, nil},
		{"DaemonSet", "daemonset", "agent", func(s string) string { return budgetDaemonSet(2, s, inplace.Off) }, 6, 4, nil},
		// In place, the budget binds the rollout itself: a DaemonSet's maxUnavailable 2
		// would take 6 pods to 4, under minAvailable 5, without the restarts' takes. An
		// ordered set restarts one pod at a time, so it has six pods (ten took 47 s)
		// and minAvailable 5: each restart spends the one disruption a drain may also take.
		{"InPlaceStatefulSetOrdered", "statefulset", "web", func(s string) string { return budgetStatefulSet(6, 0, s, inplace.IfPossible) }, 6, 5, respect},
		{"InPlaceDaemonSet", "daemonset", "agent", func(s string) string { return budgetDaemonSet(2, s, inplace.IfPossible) }, 6, 5, respect},
	} {
		settings := sc.settings
		if settings == nil {
			settings = []string{"Respect", "Ignore"}
		}
		for _, setting := range settings {
			name := sc.name + "/" + setting
			t.Run(name, func(t *testing.T) {
				s := newScene(t, c, "budget-"+strings.ToLower(sc.name+"-"+setting), cluster.WorkloadControllersKroll)
				s.apply(t, sc.manifest(setting))
				lowest[name] = setDrainDuringRollout(t, s, sc.kind, sc.workload, sc.replicas, sc.min, setting == "Respect")
				t.Logf("%s, kroll.dev/disruption-budget: %s: fewest pods available during rollout and drain: %d (budget minAvailable %d)",
					sc.name, setting, lowest[name], sc.min)
			})
		}
	}
	t.Logf("fewest pods available: %v", lowest)
}
