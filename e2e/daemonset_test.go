package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

const logDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: logs
spec:
  selector:
    matchLabels:
      app: logs
  template:
    metadata:
      labels:
        app: logs
    spec:
      containers:
      - name: agent
        image: fluentd:v1
`

// daemonSetManifest is logs with extra spec fields (indented two spaces) and template
// spec fields (indented six).
func daemonSetManifest(specExtra, podSpecExtra string) string {
	m := strings.Replace(logDaemonSet, "spec:\n  selector:", "spec:\n"+specExtra+"  selector:", 1)
	return strings.Replace(m, "      containers:", podSpecExtra+"      containers:", 1)
}

func (s *scene) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds, err := s.c.Client.AppsV1().DaemonSets(s.ns).Get(context.Background(), "logs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// dsPods describes logs's live pods: node=image, sorted by node.
func (s *scene) dsPods(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, p := range s.pods(t, "app=logs") {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := p.Spec.NodeName
		if node == "" {
			node = "unscheduled"
		}
		parts = append(parts, node+"="+p.Spec.Containers[0].Image)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func dsStatus(ds *appsv1.DaemonSet) string {
	st := ds.Status
	return fmt.Sprintf("desired=%d current=%d ready=%d available=%d unavailable=%d updated=%d misscheduled=%d observed=%v",
		st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberReady, st.NumberAvailable, st.NumberUnavailable,
		st.UpdatedNumberScheduled, st.NumberMisscheduled, st.ObservedGeneration == ds.Generation)
}

// waitDS waits until logs's pods read want (see dsPods) and its status says all of
// them are updated and available.
func (s *scene) waitDS(t *testing.T, want string) {
	t.Helper()
	eventually(t, 2*time.Minute, "daemonset pods "+want, func(context.Context) (bool, string) {
		got := s.dsPods(t)
		ds := s.daemonSet(t)
		st := ds.Status
		settled := st.ObservedGeneration == ds.Generation && int(st.DesiredNumberScheduled) == strings.Count(want, "=") && st.NumberAvailable == st.DesiredNumberScheduled &&
			st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.CurrentNumberScheduled == st.DesiredNumberScheduled
		return got == want && settled, got + " " + dsStatus(ds)
	})
}

// onNodes is "node=image" for the given node indexes.
func onNodes(image string, nodes ...int) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("kroll-node-%d=%s", n, image))
	}
	return strings.Join(parts, " ")
}

// dsSummary is what kroll's and upstream's controllers must agree on: the revisions,
// the pods per node and the status.
func (s *scene) dsSummary(t *testing.T) string {
	t.Helper()
	list, err := s.c.Client.AppsV1().ControllerRevisions(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, r := range list.Items {
		revs = append(revs, fmt.Sprintf("%s=r%d", r.Name, r.Revision))
	}
	sort.Strings(revs)
	return fmt.Sprintf("revisions %s\npods %s\nstatus %s", strings.Join(revs, " "), s.dsPods(t), dsStatus(s.daemonSet(t)))
}

var daemonSetScenarios = []scenario{
	{name: "a pod on each node and a nodeSelector change moves them", run: func(t *testing.T, s *scene) string {
		s.apply(t, logDaemonSet)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		for _, p := range s.pods(t, "app=logs") {
			if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || len(p.Spec.Tolerations) < 6 || p.Labels["pod-template-generation"] != "1" {
				t.Errorf("pod %s: affinity %+v, %d tolerations, labels %v; want pinned by node affinity, the daemon tolerations and the template generation",
					p.Name, p.Spec.Affinity, len(p.Spec.Tolerations), p.Labels)
			}
		}
		first := s.dsSummary(t)
		s.kubectl(t, "label", "node", "kroll-node-0", "kroll-node-1", "disk=ssd")
		defer s.kubectl(t, "label", "node", "kroll-node-0", "kroll-node-1", "disk-")
		s.kubectl(t, "patch", "daemonset/logs", "-p", `{"spec":{"template":{"spec":{"nodeSelector":{"disk":"ssd"}}}}}`)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1))
		return first + "\n" + s.dsSummary(t)
	}},
	{name: "a tainted node without a toleration gets no pod", run: func(t *testing.T, s *scene) string {
		s.kubectl(t, "taint", "node", "kroll-node-2", "dedicated=db:NoSchedule")
		defer s.kubectl(t, "taint", "node", "kroll-node-2", "dedicated=db:NoSchedule-")
		s.apply(t, logDaemonSet)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 3, 4))
		tolerating := daemonSetManifest("", "      tolerations:\n      - key: dedicated\n        operator: Exists\n")
		s.apply(t, tolerating)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		return s.dsSummary(t)
	}},
	{name: "RollingUpdate keeps maxUnavailable and undo round trips", run: func(t *testing.T, s *scene) string {
		s.apply(t, logDaemonSet)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		if out := s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=90s"); !strings.Contains(out, `daemon set "logs" successfully rolled out`) {
			t.Errorf("rollout status: %s", out)
		}
		s.waitDS(t, onNodes("fluentd:v2", 0, 1, 2, 3, 4))
		if hist := s.kubectl(t, "rollout", "history", "daemonset/logs"); !strings.Contains(hist, "1         <none>") || !strings.Contains(hist, "2         <none>") {
			t.Errorf("rollout history:\n%s", hist)
		}
		s.kubectl(t, "rollout", "undo", "daemonset/logs", "--to-revision=1")
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		w.Verify(t, 20)
		if w.Surged() {
			t.Error("a node ran old and new pods at once without maxSurge")
		}
		return s.dsSummary(t)
	}},
	{name: "maxSurge 1 starts the new pod before removing the old", run: func(t *testing.T, s *scene) string {
		s.apply(t, daemonSetManifest("  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: 1\n      maxUnavailable: 0\n", ""))
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		s.waitDS(t, onNodes("fluentd:v2", 0, 1, 2, 3, 4))
		w.Verify(t, 20)
		if !w.Surged() {
			t.Error("no node ever ran the new pod next to the old one")
		}
		return s.dsSummary(t)
	}},
	{name: "OnDelete replaces only deleted pods", run: func(t *testing.T, s *scene) string {
		s.apply(t, daemonSetManifest("  updateStrategy:\n    type: OnDelete\n", ""))
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		eventually(t, time.Minute, "the new generation observed", func(context.Context) (bool, string) {
			ds := s.daemonSet(t)
			return ds.Status.ObservedGeneration == ds.Generation && ds.Status.UpdatedNumberScheduled == 0, dsStatus(ds)
		})
		for _, p := range s.pods(t, "app=logs") {
			if p.Spec.NodeName == "kroll-node-3" {
				s.kubectl(t, "delete", "pod", p.Name, "--wait=false")
			}
		}
		eventually(t, time.Minute, "node 3 with the new image", func(context.Context) (bool, string) {
			got := s.dsPods(t)
			ds := s.daemonSet(t)
			return got == "kroll-node-0=fluentd:v1 kroll-node-1=fluentd:v1 kroll-node-2=fluentd:v1 kroll-node-3=fluentd:v2 kroll-node-4=fluentd:v1" &&
				ds.Status.UpdatedNumberScheduled == 1 && ds.Status.NumberAvailable == 5, got + " " + dsStatus(ds)
		})
		return s.dsSummary(t)
	}},
	{name: "rollout restart replaces every pod", run: func(t *testing.T, s *scene) string {
		s.apply(t, logDaemonSet)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		before := s.podNames(t, "app=logs")
		s.kubectl(t, "rollout", "restart", "daemonset/logs")
		s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=90s")
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		after := s.podNames(t, "app=logs")
		for _, name := range after {
			for _, old := range before {
				if name == old {
					t.Errorf("pod %s was not replaced", name)
				}
			}
		}
		return dsStatus(s.daemonSet(t))
	}},
	{name: "in place: images change without replacing pods", krollOnly: true, run: func(t *testing.T, s *scene) string {
		if s.mode == cluster.WorkloadControllersUpstream {
			return "" // upstream has no in-place update
		}
		s.apply(t, strings.Replace(logDaemonSet, "  name: logs\n", "  name: logs\n  annotations:\n    kroll.dev/update-strategy: InPlaceIfPossible\n", 1))
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		before := map[string]string{}
		for _, p := range s.pods(t, "app=logs") {
			before[string(p.UID)] = p.Spec.NodeName
		}
		w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		s.waitDS(t, onNodes("fluentd:v2", 0, 1, 2, 3, 4))
		for _, p := range s.pods(t, "app=logs") {
			if node, ok := before[string(p.UID)]; !ok || node != p.Spec.NodeName || p.Status.ContainerStatuses[0].RestartCount != 1 {
				t.Errorf("pod %s on %s: kept=%v restarts=%d; want every pod kept on its node, restarted once", p.Name, p.Spec.NodeName, ok, p.Status.ContainerStatuses[0].RestartCount)
			}
		}
		w.Verify(t, 10)
		s.waitInPlaceCondition(t, "daemonset/logs", "True/"+inplace.ReasonComplete) // the rollout is over

		// env cannot change in place: the usual rolling update, with an event naming it.
		s.kubectl(t, "set", "env", "daemonset/logs", "LEVEL=debug")
		s.waitDS(t, onNodes("fluentd:v2", 0, 1, 2, 3, 4))
		s.expectEvent(t, inplace.ReasonFallback, "spec.containers[agent].env")
		s.waitInPlaceCondition(t, "daemonset/logs", "False/"+inplace.ReasonFallback+": the change to spec.containers[agent].env cannot be made in place")
		for _, p := range s.pods(t, "app=logs") {
			if _, kept := before[string(p.UID)]; kept {
				t.Errorf("pod %s was kept through an env change", p.Name)
			}
		}

		// InPlaceOnly: an env change touches no pod, and an event says why.
		unchanged := s.podNames(t, "app=logs")
		s.kubectl(t, "annotate", "--overwrite", "daemonset/logs", "kroll.dev/update-strategy=InPlaceOnly")
		s.kubectl(t, "set", "env", "daemonset/logs", "LEVEL=info")
		eventually(t, time.Minute, "the InPlaceUpdateBlocked event", func(context.Context) (bool, string) {
			out, _ := s.tryKubectl(t, "get", "events", "--field-selector", "reason=InPlaceUpdateBlocked", "-o", "custom-columns=M:.message", "--no-headers")
			return strings.Contains(out, "spec.containers[agent].env"), out
		})
		s.waitInPlaceCondition(t, "daemonset/logs", "False/"+inplace.ReasonBlocked+": the change to spec.containers[agent].env cannot be made in place; InPlaceOnly touches no pod")
		if now := s.podNames(t, "app=logs"); fmt.Sprint(now) != fmt.Sprint(unchanged) {
			t.Errorf("InPlaceOnly replaced pods: %v, were %v", now, unchanged)
		}
		return ""
	}},
	// Before a node is added: it waits for the pods on the five nodes the cluster
	// starts with.
	clientRevisionScenario,
	{name: "a node added gets a pod", run: func(t *testing.T, s *scene) string {
		s.apply(t, logDaemonSet)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.c.AddNodes(ctx, 1); err != nil {
			t.Fatal(err)
		}
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4, 5))
		return s.dsSummary(t)
	}},
}

func TestDaemonSetScenarios(t *testing.T) {
	t.Parallel()
	runCompared(t, "ds", daemonSetScenarios, clustertest.WithNodes(5))
}
