package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// withAnnotations is manifest (configDeployment's) with more annotations on the
// Deployment, "key=value" each, and spec fields replaced: "revisionHistoryLimit: 1"
// → the given line, and so on (old → new pairs).
func withAnnotations(manifest string, annotations []string, replace ...string) string {
	var a strings.Builder
	for _, line := range annotations {
		k, v, _ := strings.Cut(line, "=")
		fmt.Fprintf(&a, "    %s: %q\n", k, v)
	}
	manifest = strings.Replace(manifest, "  annotations:\n", "  annotations:\n"+a.String(), 1)
	for i := 0; i+1 < len(replace); i += 2 {
		manifest = strings.Replace(manifest, replace[i], replace[i+1], 1)
	}
	return manifest
}

// printGreeting is the command of configPodTemplate's container, and crashUnlessGood
// the same command exiting 1 unless its configuration's greeting is good.
const (
	printGreeting   = `echo env=$GREETING; cat /etc/app/greeting; sleep 36000`
	crashUnlessGood = `test \"$GREETING\" = good || exit 1; ` + printGreeting
)

// configScenarios are the configuration rollout scenes that share TestConfigRolloutDeployment's
// cluster, each in its own namespace, side by side.
func configScenarios(t *testing.T, c *cluster.Cluster) {
	t.Run("a configuration that crashes the new pods is rolled back to the previous one; the ConfigMap keeps the bad data", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-crash", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=good")
		// The container exits 1 unless its configuration says good.
		s.apply(t, withAnnotations(configDeployment(4, "true"), []string{"kroll.dev/on-failure=Rollback"},
			printGreeting, crashUnlessGood,
			"rollingUpdate: {maxSurge: 0, maxUnavailable: 2}", "rollingUpdate: {maxSurge: 1, maxUnavailable: 0}",
			// A container that exits at once is Ready for a moment; minReadySeconds keeps
			// that moment from counting as available (as the self-healing scenes do).
			"  replicas: 4\n", "  replicas: 4\n  minReadySeconds: 2\n"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		first := s.replicaSets(t)[0].Name
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"bad"}}`)
		eventually(t, 3*time.Minute, "web rolled back", func(context.Context) (bool, string) {
			d := s.deployment(t, "web")
			return d.Annotations[failure.RolledBackFromAnnotation] == "2", fmt.Sprintf("annotations %v, conditions %v", d.Annotations, d.Status.Conditions)
		})
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod Ready on the previous configuration", func(context.Context) (bool, string) {
			by, ready := s.greetings(t)
			return ready == 4 && by[first]["good"] == 4, fmt.Sprint(by)
		})
		// The rollback holds: the live data is still the bad one, and it does not roll
		// forward again until the ConfigMap is edited.
		holdsFor(t, 5*time.Second, 250*time.Millisecond, "every pod stays on the previous configuration", func(context.Context) (bool, string) {
			by, ready := s.greetings(t)
			return ready == 4 && by[first]["good"] == 4 && len(by) == 1, fmt.Sprint(by)
		})
		if cm := must(c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app-config", metav1.GetOptions{})); cm.Data["greeting"] != "bad" {
			t.Errorf("the rollback changed the user's ConfigMap: %v", cm.Data)
		}
		w.Verify(t, 4)
	})

	t.Run("a staged Deployment holds a configuration change at step 1 until promoted", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-staged", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
		s.apply(t, withAnnotations(configDeployment(4, "true"), []string{"kroll.dev/rollout-steps=25%, pause, 100%"}))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		first := s.replicaSets(t)[0].Name
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
		atStep1 := func(context.Context) (bool, string) {
			by, ready := s.greetings(t)
			return ready == 4 && by[first]["v1"] == 3 && len(by) == 2, fmt.Sprint(by)
		}
		eventually(t, 2*time.Minute, "step 1: one pod on v2, three on v1", atStep1)
		holdsFor(t, 3*time.Second, 200*time.Millisecond, "held at step 1 until promoted", atStep1)
		kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: s.c.KubeconfigPath, ns: s.ns}
		kroll.must("rollout", "promote", "deployment/web")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod prints v2", func(context.Context) (bool, string) {
			return s.allPrint(t, 4, "v2")
		})
		w.Verify(t, 4)
	})

	t.Run("several edits keep at most revisionHistoryLimit+1 snapshots, and no controller writes the Deployment's spec", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-edits", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v0")
		s.apply(t, withAnnotations(configDeployment(2, "true"), nil, "revisionHistoryLimit: 1", "revisionHistoryLimit: 2"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		before := s.deployment(t, "web")
		spec := must(json.Marshal(before.Spec))
		writers := specWriters(before.ManagedFields)
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		for i := 1; i <= 5; i++ {
			s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", fmt.Sprintf(`{"data":{"greeting":"v%d"}}`, i))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			eventually(t, time.Minute, fmt.Sprintf("every pod prints v%d", i), func(context.Context) (bool, string) {
				return s.allPrint(t, 2, fmt.Sprintf("v%d", i))
			})
		}
		eventually(t, time.Minute, "at most 3 snapshots (revisionHistoryLimit 2, plus the revision running)", func(context.Context) (bool, string) {
			n, rss := len(s.snapshots(t)), len(s.replicaSets(t))
			return n <= 3 && rss <= 3, fmt.Sprintf("%d snapshots, %d replica sets", n, rss)
		})
		after := s.deployment(t, "web")
		if got := must(json.Marshal(after.Spec)); !bytes.Equal(got, spec) {
			t.Errorf("the Deployment's spec changed:\n%s\n→\n%s", spec, got)
		}
		if after.Generation != before.Generation || !slices.Equal(specWriters(after.ManagedFields), writers) {
			t.Errorf("spec writers %v (generation %d) → %v (generation %d)", writers, before.Generation, specWriters(after.ManagedFields), after.Generation)
		}
		w.Verify(t, 2)
	})

	t.Run("a snapshot a quota refuses: the condition and a Warning event, the rollout waits, then proceeds once the quota is lifted", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-quota", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
		s.apply(t, configDeployment(4, "true"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		first := s.replicaSets(t)[0].Name
		// Room for the ConfigMaps there are (kube-root-ca.crt, app-config, one
		// snapshot) and no more.
		cms := len(must(c.Client.CoreV1().ConfigMaps(s.ns).List(context.Background(), metav1.ListOptions{})).Items)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": *resource.NewQuantity(int64(cms), resource.DecimalSI)}}}
		must(c.Client.CoreV1().ResourceQuotas(s.ns).Create(context.Background(), quota, metav1.CreateOptions{}))
		eventually(t, time.Minute, "the quota's usage counted", func(context.Context) (bool, string) {
			q := must(c.Client.CoreV1().ResourceQuotas(s.ns).Get(context.Background(), "configmaps", metav1.GetOptions{}))
			used := q.Status.Used["count/configmaps"]
			return used.Value() == int64(cms), fmt.Sprint(q.Status.Used)
		})
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
		eventually(t, time.Minute, "the ConfigRollout condition", func(context.Context) (bool, string) {
			cond := s.configCondition(t)
			return strings.HasPrefix(cond, "False/"+configrollout.ReasonSnapshotFailed+": cannot write the snapshot") && strings.Contains(cond, "exceeded quota"), cond
		})
		s.expectEvent(t, configrollout.ReasonSnapshotFailed, "exceeded quota")
		holdsFor(t, 3*time.Second, 200*time.Millisecond, "the rollout waits: every pod on v1", func(context.Context) (bool, string) {
			by, ready := s.greetings(t)
			return ready == 4 && by[first]["v1"] == 4 && len(by) == 1, fmt.Sprint(by)
		})
		if err := c.Client.CoreV1().ResourceQuotas(s.ns).Delete(context.Background(), "configmaps", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "every pod prints v2, the condition gone", func(context.Context) (bool, string) {
			ok, by := s.allPrint(t, 4, "v2")
			return ok && s.configCondition(t) == "", by + " " + s.configCondition(t)
		})
		w.Verify(t, 4)
	})

	t.Run("binaryData and a ConfigMap near the 1 MiB limit roll, and the pods get them", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-big", cluster.WorkloadControllersKroll)
		big := func(greeting string, b byte) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
				Data:       map[string]string{"greeting": greeting, "big": strings.Repeat(greeting[:1], 1000*1000)},
				BinaryData: map[string][]byte{"bin": {0xff, 0x00, b, 0xfe}}}
		}
		must(c.Client.CoreV1().ConfigMaps(s.ns).Create(context.Background(), big("a", 1), metav1.CreateOptions{}))
		s.apply(t, configDeployment(2, "true"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod prints a", func(context.Context) (bool, string) { return s.allPrint(t, 2, "a") })
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		cm := must(c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app-config", metav1.GetOptions{}))
		next := big("b", 2)
		cm.Data, cm.BinaryData = next.Data, next.BinaryData
		must(c.Client.CoreV1().ConfigMaps(s.ns).Update(context.Background(), cm, metav1.UpdateOptions{}))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod prints b", func(context.Context) (bool, string) { return s.allPrint(t, 2, "b") })
		for _, snap := range s.snapshots(t) {
			want := big(snap.Data["greeting"], map[string]byte{"a": 1, "b": 2}[snap.Data["greeting"]])
			if snap.Data["big"] != want.Data["big"] || !bytes.Equal(snap.BinaryData["bin"], want.BinaryData["bin"]) {
				t.Errorf("snapshot %s: %d bytes of big, bin %v; want a copy", snap.Name, len(snap.Data["big"]), snap.BinaryData["bin"])
			}
		}
		pods := s.pods(t, "app=web")
		for _, p := range pods {
			name := p.Spec.Volumes[0].ConfigMap.Name
			snap := must(c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), name, metav1.GetOptions{}))
			if p.DeletionTimestamp == nil && (!bytes.Equal(snap.BinaryData["bin"], []byte{0xff, 0x00, 2, 0xfe}) || snap.Data["greeting"] != "b") {
				t.Errorf("pod %s mounts %s, which holds greeting %q and bin %v", p.Name, name, snap.Data["greeting"], snap.BinaryData["bin"])
			}
		}
		out := s.kubectl(t, "rollout", "history", "deployment/web")
		if !strings.Contains(out, "configmap/app-config changed") {
			t.Errorf("rollout history:\n%s", out)
		}
		kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: s.c.KubeconfigPath, ns: s.ns}
		diff := kroll.must("rollout", "history", "deployment/web", "--diff")
		if !strings.Contains(diff, "binaryData bin: 4 bytes sha256:") || !strings.Contains(diff, "data big: 1000000 bytes sha256:") || !strings.Contains(diff, "-a\n+b\n") {
			t.Errorf("rollout history --diff:\n%.2000s", diff)
		}
		w.Verify(t, 2)
	})
}
