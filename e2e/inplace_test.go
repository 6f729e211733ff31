package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// inPlaceDeployment is a Deployment opted in to in-place updates, with the given
// replicas, maxSurge/maxUnavailable and extra spec lines (indented two spaces).
func inPlaceDeployment(name string, replicas int, mode inplace.Mode, maxSurge, maxUnavailable, specExtra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  annotations:
    kroll.dev/update-strategy: %[3]s
spec:
  replicas: %[2]d
  selector:
    matchLabels:
      app: %[1]s
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: %[4]s
      maxUnavailable: %[5]s
%[6]s  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: nginx:1.14.2
`, name, replicas, mode, maxSurge, maxUnavailable, specExtra)
}

// podRecord is what an in-place update must keep of a pod, and what it changes.
type podRecord struct {
	name, node, image string
	restarts          int32
}

// podRecords reads the pods of app=name by UID.
func (s *scene) podRecords(t *testing.T, name string) map[string]podRecord {
	t.Helper()
	out := map[string]podRecord{}
	for _, p := range s.pods(t, "app="+name) {
		if p.DeletionTimestamp != nil {
			continue // on its way out
		}
		r := podRecord{name: p.Name, node: p.Spec.NodeName, image: p.Spec.Containers[0].Image}
		if len(p.Status.ContainerStatuses) > 0 {
			r.restarts = p.Status.ContainerStatuses[0].RestartCount
		}
		out[string(p.UID)] = r
	}
	return out
}

// expectUpdatedInPlace checks that after holds the pods of before, each on its node
// under its name, running image with restarts more restarts, and none still out of
// service or mid-update.
func (s *scene) expectUpdatedInPlace(t *testing.T, name string, before map[string]podRecord, image string, restarts int32) {
	t.Helper()
	for _, problem := range s.notUpdatedInPlace(t, name, before, image, restarts) {
		t.Error(problem)
	}
}

// stayUpdatedInPlace is expectUpdatedInPlace checked every 200ms for window.
func (s *scene) stayUpdatedInPlace(t *testing.T, window time.Duration, name string, before map[string]podRecord, image string, restarts int32) {
	t.Helper()
	holdsFor(t, window, 200*time.Millisecond, "the pods of "+name+" kept, running "+image, func(context.Context) (bool, string) {
		problems := s.notUpdatedInPlace(t, name, before, image, restarts)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
}

// notUpdatedInPlace says how the pods of name differ from expectUpdatedInPlace's want.
func (s *scene) notUpdatedInPlace(t *testing.T, name string, before map[string]podRecord, image string, restarts int32) []string {
	t.Helper()
	var problems []string
	after := s.podRecords(t, name)
	if len(after) != len(before) {
		problems = append(problems, fmt.Sprintf("%d pods now, %d before", len(after), len(before)))
	}
	for uid, b := range before {
		a, kept := after[uid]
		switch {
		case !kept:
			problems = append(problems, fmt.Sprintf("pod %s (uid %s) was replaced", b.name, uid))
		case a.name != b.name || a.node != b.node:
			problems = append(problems, fmt.Sprintf("pod %s moved: now %s on %s, was on %s", b.name, a.name, a.node, b.node))
		case a.image != image || a.restarts != b.restarts+restarts:
			problems = append(problems, fmt.Sprintf("pod %s: image %s, %d restarts; want %s, %d", b.name, a.image, a.restarts, image, b.restarts+restarts))
		}
	}
	for _, p := range s.pods(t, "app="+name) {
		if _, mid := inplace.StateOf(p); mid || (inplace.HasGate(p) && inplace.GateStatus(p) != corev1.ConditionTrue) {
			problems = append(problems, fmt.Sprintf("pod %s left mid-update: gate %q, state %q", p.Name, inplace.GateStatus(p), p.Annotations[inplace.StateAnnotation]))
		}
	}
	return problems
}

// inPlaceCondition is the InPlaceUpdate condition of a workload ("deployment/web") as
// "Status/Reason: message".
func (s *scene) inPlaceCondition(t *testing.T, workload string) string {
	t.Helper()
	c := fmt.Sprintf(`.status.conditions[?(@.type=="%s")]`, inplace.ConditionType)
	return s.kubectl(t, "get", workload, "-o", fmt.Sprintf("jsonpath={%[1]s.status}/{%[1]s.reason}: {%[1]s.message}", c))
}

// rolledOut waits for Deployment name to roll out, and returns its pods and an
// invariant watcher started on it.
func (s *scene) rolledOut(t *testing.T, name string) (map[string]podRecord, *clustertest.DeploymentWatcher) {
	t.Helper()
	s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=2m")
	return s.podRecords(t, name), clustertest.WatchDeployment(t, s.c.Client, s.ns, name)
}

// expectEvent checks that an event with reason mentions text.
func (s *scene) expectEvent(t *testing.T, reason, text string) {
	t.Helper()
	events := s.kubectl(t, "get", "events", "--field-selector", "reason="+reason, "-o", "custom-columns=M:.message", "--no-headers")
	if !strings.Contains(events, text) {
		t.Errorf("no %s event mentions %s: %q", reason, text, events)
	}
}

func (s *scene) waitInPlaceCondition(t *testing.T, workload, want string) {
	t.Helper()
	eventually(t, time.Minute, workload+" condition "+want, func(context.Context) (bool, string) {
		got := s.inPlaceCondition(t, workload)
		return strings.Contains(got, want), got
	})
}

var inPlaceDeploymentScenarios = []scenario{
	{name: "image change with history and undo all in place", run: func(t *testing.T, s *scene) string {
		s.apply(t, inPlaceDeployment("web", 10, inplace.IfPossible, "1", "2", ""))
		before, w := s.rolledOut(t, "web")

		s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.16.1")
		if out := s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m"); !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		s.expectUpdatedInPlace(t, "web", before, "nginx:1.16.1", 1)
		s.waitInPlaceCondition(t, "deployment/web", "True/"+inplace.ReasonComplete) // the rollout is over
		hist := s.kubectl(t, "rollout", "history", "deployment/web")
		if !strings.Contains(hist, "\n1 ") || !strings.Contains(hist, "\n2 ") {
			t.Errorf("rollout history does not show revisions 1 and 2:\n%s", hist)
		}
		for _, rs := range s.replicaSets(t) {
			if img := rs.Spec.Template.Spec.Containers[0].Image; (img == "nginx:1.16.1") != (*rs.Spec.Replicas == 10) {
				t.Errorf("ReplicaSet %s (%s) has %d replicas", rs.Name, img, *rs.Spec.Replicas)
			}
		}

		s.kubectl(t, "rollout", "undo", "deployment/web")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		s.expectUpdatedInPlace(t, "web", before, "nginx:1.14.2", 2)
		if hist := s.kubectl(t, "rollout", "history", "deployment/web"); !strings.Contains(hist, "\n2 ") || !strings.Contains(hist, "\n3 ") {
			t.Errorf("after undo, rollout history does not show revisions 2 and 3:\n%s", hist)
		}
		w.Verify(t, 40)
		return ""
	}},
	{name: "pods created before the opt-in are updated in place without the gate", run: func(t *testing.T, s *scene) string {
		s.kubectl(t, "create", "deployment", "late", "--image=nginx:1.14.2", "--replicas=4")
		s.kubectl(t, "rollout", "status", "deployment/late", "--timeout=2m")
		s.kubectl(t, "annotate", "deployment/late", "kroll.dev/update-strategy=InPlaceIfPossible")
		before := s.podRecords(t, "late")
		w := clustertest.WatchDeployment(t, s.c.Client, s.ns, "late")
		s.kubectl(t, "set", "image", "deployment/late", "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/late", "--timeout=2m")
		s.expectUpdatedInPlace(t, "late", before, "nginx:1.16.1", 1)
		w.Verify(t, 10)
		return ""
	}},
	{name: "an undo to a revision from before the opt-in keeps the opt-in", run: func(t *testing.T, s *scene) string {
		s.kubectl(t, "create", "deployment", "early", "--image=nginx:1.14.2", "--replicas=4")
		s.kubectl(t, "rollout", "status", "deployment/early", "--timeout=2m")
		s.kubectl(t, "set", "image", "deployment/early", "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/early", "--timeout=2m")
		s.kubectl(t, "annotate", "deployment/early", inplace.StrategyAnnotation+"="+string(inplace.IfPossible))
		before := s.podRecords(t, "early")
		w := clustertest.WatchDeployment(t, s.c.Client, s.ns, "early")
		// Revision 1's ReplicaSet was last the new one before the opt-in, so the
		// Deployment controller never copied the opt-in to it as to a new ReplicaSet;
		// the undo copies that ReplicaSet's annotations onto the Deployment.
		eventually(t, time.Minute, "the opt-in on every ReplicaSet", func(context.Context) (bool, string) {
			var have []string
			for _, rs := range s.replicaSets(t) {
				have = append(have, rs.Name+"="+rs.Annotations[inplace.StrategyAnnotation])
				if rs.Annotations[inplace.StrategyAnnotation] != string(inplace.IfPossible) {
					return false, strings.Join(have, " ")
				}
			}
			return true, ""
		})
		s.kubectl(t, "rollout", "undo", "deployment/early", "--to-revision=1")
		s.kubectl(t, "rollout", "status", "deployment/early", "--timeout=2m")
		if got := s.deployment(t, "early").Annotations[inplace.StrategyAnnotation]; got != string(inplace.IfPossible) {
			t.Errorf("after the undo %s=%q, want %s", inplace.StrategyAnnotation, got, inplace.IfPossible)
		}
		s.expectUpdatedInPlace(t, "early", before, "nginx:1.14.2", 1)
		w.Verify(t, 4)
		return ""
	}},
	{name: "env falls back to a rolling update; InPlaceOnly touches nothing", run: func(t *testing.T, s *scene) string {
		s.apply(t, inPlaceDeployment("api", 4, inplace.IfPossible, "1", "1", ""))
		before, w := s.rolledOut(t, "api")
		s.kubectl(t, "set", "env", "deployment/api", "LEVEL=debug")
		s.kubectl(t, "rollout", "status", "deployment/api", "--timeout=2m")
		s.waitInPlaceCondition(t, "deployment/api", "False/"+inplace.ReasonFallback+": the change to spec.containers[app].env cannot be made in place")
		for uid, p := range s.podRecords(t, "api") {
			if _, kept := before[uid]; kept {
				t.Errorf("pod %s was kept through an env change", p.name)
			}
		}
		s.expectEvent(t, inplace.ReasonFallback, "spec.containers[app].env")
		w.Verify(t, 10)

		unchanged := s.podRecords(t, "api")
		s.kubectl(t, "annotate", "--overwrite", "deployment/api", "kroll.dev/update-strategy=InPlaceOnly")
		s.kubectl(t, "set", "env", "deployment/api", "LEVEL=info")
		s.waitInPlaceCondition(t, "deployment/api", "False/"+inplace.ReasonBlocked+": the change to spec.containers[app].env cannot be made in place; InPlaceOnly touches no pod")
		s.stayUpdatedInPlace(t, 2*time.Second, "api", unchanged, unchanged[firstKey(unchanged)].image, 0) // InPlaceOnly touches no pod
		s.expectEvent(t, inplace.ReasonBlocked, "spec.containers[app].env")
		return ""
	}},
	{name: "bad image stops at maxUnavailable and undo recovers in place", run: func(t *testing.T, s *scene) string {
		s.apply(t, inPlaceDeployment("shop", 6, inplace.IfPossible, "1", "2", "  progressDeadlineSeconds: 10\n"))
		before, w := s.rolledOut(t, "shop")
		s.kubectl(t, "set", "image", "deployment/shop", "app=nginx:nonexistent")
		out, err := s.tryKubectl(t, "rollout", "status", "deployment/shop", "--timeout=1m")
		if err == nil || !strings.Contains(out, `exceeded its progress deadline`) {
			t.Errorf("rollout status should fail on the progress deadline: %v\n%s", err, out)
		}
		images := map[string]int{}
		for _, r := range s.podRecords(t, "shop") {
			images[r.image]++
		}
		if images["nginx:nonexistent"] != 2 || images["nginx:1.14.2"] != 4 {
			t.Errorf("want 2 pods on the bad image and 4 untouched, got %v", images)
		}
		s.kubectl(t, "rollout", "undo", "deployment/shop")
		s.kubectl(t, "rollout", "status", "deployment/shop", "--timeout=2m")
		after := s.podRecords(t, "shop")
		for uid, b := range before {
			if a, kept := after[uid]; !kept || a.image != "nginx:1.14.2" || a.node != b.node {
				t.Errorf("pod %s: kept=%v image=%s node=%s; want kept on %s at nginx:1.14.2", b.name, kept, a.image, a.node, b.node)
			}
		}
		s.expectUpdatedInPlace(t, "shop", after, "nginx:1.14.2", 0)
		w.Verify(t, 10)
		return ""
	}},
}

func firstKey(m map[string]podRecord) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}

// Deployments updated in place (kroll only: upstream has no in-place update).
func TestDeploymentInPlace(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersKroll))
	for i, sc := range inPlaceDeploymentScenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := newScene(t, c, fmt.Sprintf("inplace-%d", i), cluster.WorkloadControllersKroll)
			sc.run(t, s)
		})
	}
}

// The proposal's motivating case: every node is full. A RollingUpdate with maxSurge
// stays stuck on a surge pod that cannot be scheduled; the same change in place
// completes, and no pod is created.
func TestDeploymentInPlaceOnFullNodes(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithNodes(2), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.CPU = resource.MustParse("2")
	}))
	full := "      containers:\n      - name: app\n        image: nginx:1.14.2\n        resources:\n          requests:\n            cpu: \"1\"\n"
	withRequests := func(m string) string {
		return strings.Replace(m, "      containers:\n      - name: app\n        image: nginx:1.14.2\n", full, 1)
	}

	s := newScene(t, c, "full-rolling", cluster.WorkloadControllersKroll)
	s.apply(t, withRequests(strings.Replace(inPlaceDeployment("web", 4, inplace.IfPossible, "1", "0", ""), "    kroll.dev/update-strategy: InPlaceIfPossible\n", "    note: rolling\n", 1)))
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.16.1")
	pendingSurge := func(context.Context) (bool, string) {
		var states []string
		pending := false
		for _, p := range s.pods(t, "app=web") {
			states = append(states, p.Name+"="+string(p.Status.Phase))
			pending = pending || (p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" && p.Spec.Containers[0].Image == "nginx:1.16.1")
		}
		return pending, strings.Join(states, " ")
	}
	eventually(t, time.Minute, "a Pending surge pod", pendingSurge)
	// The surge pod cannot be scheduled: for the whole window the rollout stays where
	// it is, the surge pod Pending and unscheduled.
	holdsFor(t, 3*time.Second, 200*time.Millisecond, "the rolling update on full nodes stuck on its Pending surge pod", pendingSurge)
	if out, err := s.tryKubectl(t, "rollout", "status", "deployment/web", "--timeout=2s"); err == nil {
		t.Errorf("the rolling update on full nodes finished: %s", out)
	}
	s.kubectl(t, "delete", "deployment/web", "--wait=true")
	eventually(t, time.Minute, "the rolling Deployment's pods gone", func(context.Context) (bool, string) {
		n := len(s.pods(t, "app=web"))
		return n == 0, fmt.Sprint(n, " pods")
	})

	s = newScene(t, c, "full-inplace", cluster.WorkloadControllersKroll)
	s.apply(t, withRequests(inPlaceDeployment("web", 4, inplace.IfPossible, "1", "1", "")))
	before, w := s.rolledOut(t, "web")
	s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.16.1")
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	s.expectUpdatedInPlace(t, "web", before, "nginx:1.16.1", 1)
	w.Verify(t, 10)
}

// Given an in-place rollout of 30 pods, with a grace period (the pods go out of service
// first) and without (the take-over is each pod's one write), when kroll's controllers
// are stopped and started again at several points of it, then the rollout finishes in
// place: every pod kept, none created or deleted, none left out of service.
func TestDeploymentInPlaceControllerRestarts(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3))
	for _, grace := range []string{"1", "0"} {
		t.Run("grace period "+grace+"s", func(t *testing.T) {
			stop := startKrollControllers(t, c)
			defer func() { stop() }()
			s := newScene(t, c, "restarts-"+grace, cluster.WorkloadControllersNone)
			ledger := watchPods(t, c, s.ns)
			s.apply(t, strings.Replace(inPlaceDeployment("web", 30, inplace.IfPossible, "0", "3", ""),
				"    kroll.dev/update-strategy: InPlaceIfPossible\n", "    kroll.dev/update-strategy: InPlaceIfPossible\n    kroll.dev/in-place-grace-period: \""+grace+"\"\n", 1))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=3m")
			before := s.podRecords(t, "web")
			w := clustertest.WatchDeployment(t, s.c.Client, s.ns, "web")
			ledger.mu.Lock()
			created := 0
			for _, names := range ledger.created {
				created += len(names)
			}
			ledger.mu.Unlock()

			s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.16.1")
			s.restartMidUpdate(t, &stop, []time.Duration{700 * time.Millisecond, 1300 * time.Millisecond, 400 * time.Millisecond, 2 * time.Second, 900 * time.Millisecond}, "app=web")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=3m")
			s.expectUpdatedInPlace(t, "web", before, "nginx:1.16.1", 1)
			w.Verify(t, 50)
			for _, rs := range s.replicaSets(t) {
				for _, key := range []string{inplace.LeavingAnnotation, inplace.ArrivingAnnotation} {
					if v, ok := rs.Annotations[key]; ok {
						t.Errorf("ReplicaSet %s still has %s=%q", rs.Name, key, v)
					}
				}
			}
			ledger.mu.Lock()
			defer ledger.mu.Unlock()
			now, deleted := 0, 0
			for _, names := range ledger.created {
				now += len(names)
			}
			for _, n := range ledger.deleted {
				deleted += n
			}
			if now != created || deleted != 0 {
				t.Errorf("pods created during the update: %d, deleted: %d; want none", now-created, deleted)
			}
		})
	}
}

// restartMidUpdate stops kroll's controllers (*stop) after each pause and starts them
// again, counting the pods of selectors caught mid-update (or mid-resize); it fails t if no stop
// caught one (the restarts would then prove nothing).
func (s *scene) restartMidUpdate(t *testing.T, stop *func(), pauses []time.Duration, selectors ...string) {
	t.Helper()
	s.restartCounting(t, stop, func() func() { return startKrollControllers(t, s.c) }, pauses, "mid-update", func() int {
		handedOver := map[string]bool{}
		for _, rs := range s.replicaSets(t) {
			for _, key := range []string{inplace.LeavingAnnotation, inplace.ArrivingAnnotation} {
				for name := range inplace.Names(rs, key) {
					handedOver[name] = true
				}
			}
		}
		mid := 0
		for _, selector := range selectors {
			for _, p := range s.pods(t, selector) {
				if _, ok := inplace.StateOf(p); ok || handedOver[p.Name] || inplace.Restarting(p) || midResize(p) {
					mid++
				}
			}
		}
		return mid
	})
}

// restartCounting stops kroll's controllers (*stop) after each pause — and once
// caught sees a pod mid-way, waiting up to midWayWait for one — and starts them again
// with start, counting what caught says is caught mid-way (pods "mid-update") once
// they are stopped; it fails t if no stop caught one (the restarts would then prove
// nothing). Waiting for a pod mid-way rather than stopping on the clock alone keeps
// the restarts meaningful on a loaded machine, where controllers restarted every
// second may not get as far as starting an update between stops.
func (s *scene) restartCounting(t *testing.T, stop *func(), start func() func(), pauses []time.Duration, what string, caught func() int) {
	t.Helper()
	const midWayWait = 10 * time.Second
	total := 0
	for i, pause := range pauses {
		time.Sleep(pause)
		for deadline := time.Now().Add(midWayWait); caught() == 0 && time.Now().Before(deadline); {
			time.Sleep(25 * time.Millisecond)
		}
		(*stop)()
		n := caught()
		total += n
		t.Logf("restart %d: controllers stopped with %d pods %s", i+1, n, what)
		time.Sleep(300 * time.Millisecond)
		*stop = start()
	}
	if total == 0 {
		t.Errorf("no restart caught a pod %s: the test proves nothing", what)
	}
}

// optIn adds the in-place annotations (InPlaceIfPossible, a grace period of 1s) to a
// manifest whose metadata has just a name.
func optIn(manifest, name string) string {
	return strings.Replace(manifest, "  name: "+name+"\n", "  name: "+name+"\n  annotations:\n    kroll.dev/update-strategy: InPlaceIfPossible\n    kroll.dev/in-place-grace-period: \"1\"\n", 1)
}

// Given in-place updates of a StatefulSet and a DaemonSet under way, when kroll's
// controllers are stopped and started again at several points, then both finish in
// place: every pod kept and restarted once, none left out of service.
func TestStatefulSetAndDaemonSetInPlaceControllerRestarts(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(6))
	stop := startKrollControllers(t, c)
	defer func() { stop() }()

	s := newScene(t, c, "restarts", cluster.WorkloadControllersNone)
	s.apply(t, optIn(statefulSetManifest(6, ""), "web"))
	s.apply(t, optIn(daemonSetManifest("  updateStrategy:\n    rollingUpdate:\n      maxUnavailable: 2\n", ""), "logs"))
	s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=2m")
	web, logs := s.podRecords(t, "nginx"), s.podRecords(t, "logs")
	sts := clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")
	ds := clustertest.WatchDaemonSet(t, c.Client, s.ns, "logs")

	s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.16.1")
	s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
	s.restartMidUpdate(t, &stop, []time.Duration{800 * time.Millisecond, 1500 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}, "app=nginx", "app=logs")
	s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=3m")
	s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=3m")
	s.expectUpdatedInPlace(t, "nginx", web, "nginx:1.16.1", 1)
	s.expectUpdatedInPlace(t, "logs", logs, "fluentd:v2", 1)
	if created, terminated := sts.Order(); len(terminated) != 0 || len(created) != 6 {
		t.Errorf("StatefulSet pods created %v, terminated %v; an in-place update creates and deletes none", created, terminated)
	}
	sts.Verify(t, 10)
	ds.Verify(t, 10)
}
