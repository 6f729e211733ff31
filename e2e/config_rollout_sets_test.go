package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/history"
)

// configSet is a StatefulSet (replicas pods, Parallel, maxUnavailable 2) or a
// DaemonSet (maxUnavailable 3) named web, opted into configuration rollout, whose pods
// print app-config's greeting as configDeployment's do.
func configSet(kind string, replicas int) string {
	if kind == "DaemonSet" {
		return configWorkload(kind, "  updateStrategy:\n    rollingUpdate: {maxUnavailable: 3}\n")
	}
	return configStatefulSet(replicas, "  podManagementPolicy: Parallel\n  updateStrategy:\n    rollingUpdate: {maxUnavailable: 2}\n")
}

// configStatefulSet is the StatefulSet web of replicas pods with the spec lines
// spec (its strategy), opted into configuration rollout, its pods printing app-config's
// greeting.
func configStatefulSet(replicas int, spec string) string {
	return configWorkload("StatefulSet", fmt.Sprintf("  replicas: %d\n  serviceName: web\n", replicas)+spec)
}

// configWorkload is the workload web of kind with the spec lines spec, opted into
// configuration rollout, revisionHistoryLimit 1, its pods printing app-config's greeting.
func configWorkload(kind, spec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata:
  name: web
  annotations:
    kroll.dev/config-rollout: "true"
spec:
%s  revisionHistoryLimit: 1
  selector:
    matchLabels: {app: web}
`+configPodTemplate, kind, spec)
}

// setGreetings are the values web's running, ready pods print, by the revision their
// controller-revision-hash label names.
func (s *scene) setGreetings(t *testing.T) (map[string]map[string]int, int) {
	return s.greetingsBy(t, func(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] })
}

// configSetScene runs the acceptance scenario of configuration rollout on a
// StatefulSet or DaemonSet of n pods (see TestConfigRolloutDeployment): an edit rolls
// through the set's strategy (watched by w's bounds), old pods print v1 and new ones
// v2 throughout, undo brings v1 back with the ConfigMap left at v2, the snapshots are
// immutable, owned by the ControllerRevisions and gone with the set.
func configSetScene(t *testing.T, s *scene, kind string, n int, watch func() interface{ Verify(testing.TB, int) },
	revisionOf func() string, spec func() (int64, []metav1.ManagedFieldsEntry, *corev1.PodSpec)) {
	resource := strings.ToLower(kind) + "/web"
	s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
	s.apply(t, configSet(kind, n))
	s.kubectl(t, "rollout", "status", resource, "--timeout=2m")
	eventually(t, time.Minute, "every pod prints v1", func(context.Context) (bool, string) {
		by, ready := s.setGreetings(t)
		return ready == n && len(by) == 1 && by[revisionOf()]["v1"] == n, fmt.Sprint(by)
	})
	oldRev := revisionOf()
	generation, _, _ := spec()

	w := watch()
	s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
	printOldAndNew(t, func() (map[string]map[string]int, int) { return s.setGreetings(t) }, oldRev, n)
	s.kubectl(t, "rollout", "status", resource, "--timeout=2m")
	w.Verify(t, n)
	eventually(t, time.Minute, "every pod prints v2", func(context.Context) (bool, string) {
		by, ready := s.setGreetings(t)
		return ready == n && len(by) == 1 && by[revisionOf()]["v2"] == n, fmt.Sprint(by)
	})
	newRev := revisionOf()
	if newRev == oldRev {
		t.Fatalf("no new revision for the changed data")
	}
	if hist := s.kubectl(t, "rollout", "history", resource); !strings.Contains(hist, "configmap/app-config changed") {
		t.Errorf("rollout history does not say what changed:\n%s", hist)
	}
	// The revisions by the hash their pods are labelled with.
	revisions := func() map[string]string {
		list := must(s.c.Client.AppsV1().ControllerRevisions(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"}))
		out := map[string]string{}
		for _, r := range list.Items {
			hash := r.Name[strings.LastIndex(r.Name, "-")+1:]
			if kind == "StatefulSet" {
				hash = r.Name
			}
			out[hash] = r.Name
			if hash == newRev && r.Annotations[history.ChangeCauseAnnotation] != "configmap/app-config changed" {
				t.Errorf("revision %s: change-cause %q", r.Name, r.Annotations[history.ChangeCauseAnnotation])
			}
		}
		return out
	}
	checkSnapshots := func(t *testing.T, values map[string]string) {
		t.Helper()
		revs := revisions()
		s.checkSnapshots(t, "ControllerRevision", len(values), func(owner string) (string, bool) {
			for hash, v := range values {
				if revs[hash] == owner {
					return v, true
				}
			}
			return "", false
		})
	}
	checkSnapshots(t, map[string]string{oldRev: "v1", newRev: "v2"})
	gen, fields, _ := spec()
	if gen != generation {
		t.Errorf("the configuration rollout wrote the %s's spec: generation %d → %d", kind, generation, gen)
	}
	if writers := specWriters(fields); len(writers) != 1 || !strings.HasPrefix(writers[0], "kubectl") {
		t.Errorf("spec written by %v, want the user's kubectl alone", writers)
	}

	// Undo: every pod back to v1 (the old revision again), the ConfigMap keeps v2, the
	// spec names the user's ConfigMap.
	s.kubectl(t, "rollout", "undo", resource)
	s.kubectl(t, "rollout", "status", resource, "--timeout=2m")
	eventually(t, time.Minute, "every pod prints v1 again", func(context.Context) (bool, string) {
		by, ready := s.setGreetings(t)
		return ready == n && len(by) == 1 && by[oldRev]["v1"] == n, fmt.Sprint(by)
	})
	if cm := must(s.c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app-config", metav1.GetOptions{})); cm.Data["greeting"] != "v2" {
		t.Errorf("the undo changed the user's ConfigMap: %v", cm.Data)
	}
	_, _, pod := spec()
	if name := pod.Volumes[0].ConfigMap.Name; name != "app-config" {
		t.Errorf("the undo wrote %q into the %s's spec", name, kind)
	}
	if ref := pod.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name; ref != "app-config" {
		t.Errorf("the undo wrote %q into the %s's env", ref, kind)
	}
	checkSnapshots(t, map[string]string{oldRev: "v1", newRev: "v2"})

	// Deleted, the set takes its revisions and their snapshots with it.
	s.kubectl(t, "delete", resource)
	eventually(t, 2*time.Minute, "no snapshot left", func(context.Context) (bool, string) {
		n := len(s.snapshots(t))
		return n == 0, fmt.Sprintf("%d snapshots", n)
	})
}

// configRolloutSets are TestConfigRolloutDeployment's scenes for the sets, on its
// cluster (8 nodes): a StatefulSet of 10 pods and a DaemonSet on every node.
func configRolloutSets(t *testing.T, c *cluster.Cluster) {
	t.Run("a StatefulSet of 10 rolls its configuration through partition and maxUnavailable, and undo brings it back", func(t *testing.T) {
		s := newScene(t, c, "config-sts", cluster.WorkloadControllersKroll)
		sts := func() *appsv1.StatefulSet {
			return must(c.Client.AppsV1().StatefulSets(s.ns).Get(context.Background(), "web", metav1.GetOptions{}))
		}
		configSetScene(t, s, "StatefulSet", 10,
			func() interface{ Verify(testing.TB, int) } {
				return clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")
			},
			func() string { return sts().Status.UpdateRevision },
			func() (int64, []metav1.ManagedFieldsEntry, *corev1.PodSpec) {
				set := sts()
				return set.Generation, set.ManagedFields, &set.Spec.Template.Spec
			})
	})
	t.Run("a DaemonSet on 8 nodes rolls its configuration 3 nodes at a time, and undo brings it back", func(t *testing.T) {
		s := newScene(t, c, "config-ds", cluster.WorkloadControllersKroll)
		ds := func() *appsv1.DaemonSet {
			return must(c.Client.AppsV1().DaemonSets(s.ns).Get(context.Background(), "web", metav1.GetOptions{}))
		}
		nodes := len(must(c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})).Items)
		configSetScene(t, s, "DaemonSet", nodes,
			func() interface{ Verify(testing.TB, int) } {
				return clustertest.WatchDaemonSet(t, c.Client, s.ns, "web")
			},
			func() string {
				// The newest revision's hash: what the DaemonSet's new pods are labelled.
				var newest *appsv1.ControllerRevision
				for _, r := range must(c.Client.AppsV1().ControllerRevisions(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})).Items {
					if newest == nil || r.Revision > newest.Revision {
						newest = r.DeepCopy()
					}
				}
				if newest == nil {
					return ""
				}
				return newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
			},
			func() (int64, []metav1.ManagedFieldsEntry, *corev1.PodSpec) {
				set := ds()
				return set.Generation, set.ManagedFields, &set.Spec.Template.Spec
			})
	})
}
