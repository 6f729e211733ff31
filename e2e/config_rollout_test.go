package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// configDeployment is a Deployment of replicas pods, opted into configuration rollout,
// that print the ConfigMap app-config's key greeting as an environment variable and as
// a mounted file: "env=<value>" then "<value>" in their log.
func configDeployment(replicas int, optIn string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    kroll.dev/config-rollout: %q
spec:
  replicas: %d
  revisionHistoryLimit: 1
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 0, maxUnavailable: 2}
`+configPodTemplate, optIn, replicas)
}

// configPodTemplate is the pod template of the workloads of configuration rollout's
// scenes: it prints app-config's greeting as an environment variable, then as a
// mounted file.
const configPodTemplate = `  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: busybox:1.36
        command: ["sh", "-c", "` + printGreeting + `"]
        env:
        - name: GREETING
          valueFrom:
            configMapKeyRef: {name: app-config, key: greeting}
        volumeMounts:
        - {name: config, mountPath: /etc/app}
      volumes:
      - name: config
        configMap: {name: app-config}
`

// greetingOf is what pod prints of its configuration: "v1" when its environment and
// its file agree on v1, "env=v1 file=v2" when they do not, "" before it printed.
func (s *scene) greetingOf(t *testing.T, pod *corev1.Pod) string {
	out, err := podLogs(t, s.c.Client, s.ns, pod.Name, &corev1.PodLogOptions{Container: "app"})
	if err != nil {
		return ""
	}
	f := strings.Fields(out)
	if len(f) < 2 {
		return ""
	}
	env := strings.TrimPrefix(f[0], "env=")
	if env != f[1] {
		return fmt.Sprintf("env=%s file=%s", env, f[1])
	}
	return env
}

// printOldAndNew follows a configuration rollout from v1 to v2 of n pods until every
// one is ready on a revision other than old: throughout, pods of old (by the key
// greetings groups them by) print v1 and the others v2, and at some point both are
// seen side by side (a rolling update, not a replacement of all at once).
func printOldAndNew(t *testing.T, greetings func() (map[string]map[string]int, int), old string, n int) {
	t.Helper()
	mixed := false
	for i := 0; i < 900; i++ {
		by, ready := greetings()
		for rev, values := range by {
			want := "v2"
			if rev == old {
				want = "v1"
			}
			for v, k := range values {
				if v != want && v != "" {
					t.Fatalf("%d pods of %s print %q, want %q (%v)", k, rev, v, want, by)
				}
			}
		}
		if len(by) == 2 {
			mixed = true
		}
		if ready == n && by[old] == nil && len(by) == 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !mixed {
		t.Errorf("never saw old and new pods side by side: not a rolling update")
	}
}

// greetings are the values web's running, ready pods print, by ReplicaSet: "web-abc=v1×8".
func (s *scene) greetings(t *testing.T) (map[string]map[string]int, int) {
	return s.greetingsBy(t, func(p *corev1.Pod) string { return metav1.GetControllerOf(p).Name })
}

// greetingsBy are the values web's running, ready pods print, grouped by key(pod),
// and how many are ready.
func (s *scene) greetingsBy(t *testing.T, key func(*corev1.Pod) string) (map[string]map[string]int, int) {
	by, ready := map[string]map[string]int{}, 0
	for _, p := range s.pods(t, "app=web") {
		if p.DeletionTimestamp != nil || !isPodReady(p) {
			continue
		}
		ready++
		k := key(p)
		if by[k] == nil {
			by[k] = map[string]int{}
		}
		by[k][s.greetingOf(t, p)]++
	}
	return by, ready
}

// allPrint tells whether replicas pods are ready and every one prints value; what they
// print, by ReplicaSet.
func (s *scene) allPrint(t *testing.T, replicas int, value string) (bool, string) {
	by, ready := s.greetings(t)
	n := 0
	for _, values := range by {
		n += values[value]
	}
	return ready == replicas && n == replicas, fmt.Sprint(by)
}

// snapshots are the ConfigMaps that snapshot app-config.
func (s *scene) snapshots(t *testing.T) []corev1.ConfigMap {
	list, err := s.c.Client.CoreV1().ConfigMaps(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: configrollout.SnapshotOfLabel + "=app-config"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// checkSnapshots checks app-config's snapshots: n of them, each immutable, controlled
// by an ownerKind whose name want knows, holding the greeting want gives for it.
func (s *scene) checkSnapshots(t *testing.T, ownerKind string, n int, want func(owner string) (greeting string, ok bool)) {
	t.Helper()
	snaps := s.snapshots(t)
	if len(snaps) != n {
		t.Errorf("%d snapshots, want %d (one per revision kept)", len(snaps), n)
	}
	for _, cm := range snaps {
		ref := metav1.GetControllerOf(&cm)
		if cm.Immutable == nil || !*cm.Immutable || ref == nil || ref.Kind != ownerKind {
			t.Errorf("snapshot %s: immutable %v, controller %v", cm.Name, cm.Immutable, ref)
			continue
		}
		if v, ok := want(ref.Name); !ok || cm.Data["greeting"] != v {
			t.Errorf("snapshot %s of %s holds %q, want %q (known: %v)", cm.Name, ref.Name, cm.Data["greeting"], v, ok)
		}
	}
}

// specWriters are the managers that wrote an object's spec, by its managedFields.
func specWriters(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, m := range fields {
		if m.Subresource == "" && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:spec"`) {
			out = append(out, m.Manager+"/"+string(m.Operation))
		}
	}
	sort.Strings(out)
	return out
}

// Given kroll's controllers and a Deployment of 10 pods opted into configuration
// rollout, reading the ConfigMap app-config through an environment variable and a
// mounted file, when the ConfigMap is edited, then the Deployment rolls out a new
// revision through its strategy (every observed state keeps maxUnavailable), old pods
// print the old value and new pods the new one throughout, and the revision's
// change-cause names the ConfigMap; `kubectl rollout undo` brings every pod back to
// the old value while the ConfigMap keeps the edited data; the snapshots are
// immutable, owned by their ReplicaSets and pruned with them; the user's Deployment
// spec is written by nobody but the user (and the undo); a later edit rolls forward.
// The same cluster (8 nodes) holds the scenes of the StatefulSet and the DaemonSet
// (configRolloutSets).
func TestConfigRolloutDeployment(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersKroll), clustertest.WithNodes(8),
		clustertest.WithKubelet(func(k *kubelet.Config) { k.PodStartupDelay = 300 * time.Millisecond }))
	s := newScene(t, c, "config", cluster.WorkloadControllersKroll)
	s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
	s.apply(t, configDeployment(10, "true"))
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	first := s.replicaSets(t)
	if len(first) != 1 {
		t.Fatalf("%d ReplicaSets after the first rollout", len(first))
	}
	oldRS := first[0].Name
	eventually(t, time.Minute, "every pod prints v1", func(context.Context) (bool, string) {
		by, ready := s.greetings(t)
		return ready == 10 && by[oldRS]["v1"] == 10, fmt.Sprint(by)
	})
	generation := s.deployment(t, "web").Generation

	w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
	s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
	// Throughout the rollout: old pods print v1, new pods v2, nothing else.
	printOldAndNew(t, func() (map[string]map[string]int, int) { return s.greetings(t) }, oldRS, 10)
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	w.Verify(t, 10)
	eventually(t, time.Minute, "every pod prints v2", func(context.Context) (bool, string) {
		return s.allPrint(t, 10, "v2")
	})
	var newRS *appsv1.ReplicaSet
	for _, rs := range s.replicaSets(t) {
		if rs.Name != oldRS {
			newRS = rs
		}
	}
	if newRS == nil {
		t.Fatal("no new ReplicaSet")
	}
	if cause := newRS.Annotations[history.ChangeCauseAnnotation]; cause != "configmap/app-config changed" {
		t.Errorf("change-cause %q", cause)
	}
	if history := s.kubectl(t, "rollout", "history", "deployment/web"); !strings.Contains(history, "configmap/app-config changed") {
		t.Errorf("rollout history does not say what changed:\n%s", history)
	}
	checkSnapshots := func(t *testing.T, values map[string]string) {
		t.Helper()
		s.checkSnapshots(t, "ReplicaSet", len(values), func(owner string) (string, bool) { v, ok := values[owner]; return v, ok })
	}
	checkSnapshots(t, map[string]string{oldRS: "v1", newRS.Name: "v2"})
	d := s.deployment(t, "web")
	if d.Generation != generation {
		t.Errorf("the configuration rollout wrote the Deployment's spec: generation %d → %d", generation, d.Generation)
	}
	if writers := specWriters(d.ManagedFields); len(writers) != 1 || !strings.HasPrefix(writers[0], "kubectl") {
		t.Errorf("spec written by %v, want the user's kubectl alone", writers)
	}

	// Undo: every pod back to v1, the ConfigMap keeps v2, no snapshot name in the spec.
	s.kubectl(t, "rollout", "undo", "deployment/web")
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	eventually(t, time.Minute, "every pod prints v1 again", func(context.Context) (bool, string) {
		by, ready := s.greetings(t)
		return ready == 10 && by[oldRS]["v1"] == 10, fmt.Sprint(by)
	})
	if cm := must(c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app-config", metav1.GetOptions{})); cm.Data["greeting"] != "v2" {
		t.Errorf("the undo changed the user's ConfigMap: %v", cm.Data)
	}
	d = s.deployment(t, "web")
	if name := d.Spec.Template.Spec.Volumes[0].ConfigMap.Name; name != "app-config" {
		t.Errorf("the undo wrote %q into the Deployment's spec", name)
	}
	if ref := d.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name; ref != "app-config" {
		t.Errorf("the undo wrote %q into the Deployment's env", ref)
	}
	checkSnapshots(t, map[string]string{oldRS: "v1", newRS.Name: "v2"})

	// A later edit rolls forward to it; revisionHistoryLimit 1 prunes the oldest
	// ReplicaSet, and its snapshot goes with it.
	s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v3"}}`)
	s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	eventually(t, time.Minute, "every pod prints v3", func(context.Context) (bool, string) {
		return s.allPrint(t, 10, "v3")
	})
	eventually(t, time.Minute, "at most revisionHistoryLimit+1 snapshots", func(context.Context) (bool, string) {
		snaps := s.snapshots(t)
		return len(snaps) <= 2 && len(s.replicaSets(t)) <= 2, fmt.Sprintf("%d snapshots, %d replica sets", len(snaps), len(s.replicaSets(t)))
	})

	t.Run("a missing ConfigMap holds the rollout back, named in a condition and an event, until it exists", func(t *testing.T) {
		s := newScene(t, c, "config-missing", cluster.WorkloadControllersKroll)
		s.apply(t, configDeployment(2, "true"))
		eventually(t, time.Minute, "the ConfigRollout condition", func(context.Context) (bool, string) {
			cond := s.configCondition(t)
			return strings.HasPrefix(cond, "False/"+configrollout.ReasonMissing+": referenced configmap/app-config not found"), cond
		})
		s.expectEvent(t, configrollout.ReasonMissing, "configmap/app-config")
		if rss := s.replicaSets(t); len(rss) != 0 {
			t.Errorf("%d ReplicaSets made without the ConfigMap", len(rss))
		}
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=late")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "both pods print late, the condition gone", func(context.Context) (bool, string) {
			ok, by := s.allPrint(t, 2, "late")
			return ok && s.configCondition(t) == "", by + " " + s.configCondition(t)
		})
	})

	t.Run("an invalid opt-in is reported and rolls nothing", func(t *testing.T) {
		s := newScene(t, c, "config-invalid", cluster.WorkloadControllersKroll)
		s.withoutAdmissionPolicy(t) // the API server would refuse the bad value
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
		s.apply(t, configDeployment(2, "yes"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "the ConfigRollout condition", func(context.Context) (bool, string) {
			cond := s.configCondition(t)
			return strings.HasPrefix(cond, "False/"+configrollout.ReasonInvalidAnnotation+`: kroll.dev/config-rollout="yes" is not valid`), cond
		})
		s.expectEvent(t, configrollout.ReasonInvalidAnnotation, `kroll.dev/config-rollout="yes"`)
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
		holdsFor(t, 3*time.Second, 200*time.Millisecond, "no rollout", func(context.Context) (bool, string) {
			n := len(s.replicaSets(t))
			return n == 1, fmt.Sprintf("%d replica sets", n)
		})
	})

	configRolloutSets(t, c)
	configScenarios(t, c)
	configSetCases(t, c)
}

// configCondition is web's ConfigRollout condition as "Status/Reason: message"; "" when absent.
func (s *scene) configCondition(t *testing.T) string {
	for _, c := range s.deployment(t, "web").Status.Conditions {
		if string(c.Type) == configrollout.ConditionType {
			return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}
