package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// fromSecret is a manifest of configPodTemplate's whose pods read the Secret
// app-secret instead of the ConfigMap app-config, by environment and by file.
func fromSecret(manifest string) string {
	return strings.NewReplacer(
		"configMapKeyRef: {name: app-config, key: greeting}", "secretKeyRef: {name: app-secret, key: greeting}",
		"configMap: {name: app-config}", "secret: {secretName: app-secret}").Replace(manifest)
}

// configSetCases are the StatefulSet scenes of configuration rollout beyond the
// acceptance one (configSetScene), on TestConfigRolloutDeployment's cluster, side by
// side: OnDelete, a partition with a Secret, and self-healing.
func configSetCases(t *testing.T, c *cluster.Cluster) {
	t.Run("a StatefulSet with OnDelete replaces no pod on a ConfigMap edit; a pod deleted comes back on the new configuration", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-sts-ondelete", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
		s.apply(t, configStatefulSet(3, "  updateStrategy: {type: OnDelete}\n"))
		eventually(t, 2*time.Minute, "every pod prints v1", func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 3 && by[s.statefulSet(t).Status.UpdateRevision]["v1"] == 3, fmt.Sprint(by)
		})
		oldRev := s.statefulSet(t).Status.UpdateRevision
		w := clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"v2"}}`)
		eventually(t, time.Minute, "a new update revision", func(context.Context) (bool, string) {
			st := s.statefulSet(t).Status
			return st.UpdateRevision != oldRev, fmt.Sprintf("update %s, current %s", st.UpdateRevision, st.CurrentRevision)
		})
		newRev := s.statefulSet(t).Status.UpdateRevision
		holdsFor(t, 3*time.Second, 200*time.Millisecond, "no pod replaced: every pod on v1", func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 3 && by[oldRev]["v1"] == 3 && len(by) == 1, fmt.Sprint(by)
		})
		s.kubectl(t, "delete", "pod", "web-1")
		eventually(t, time.Minute, "web-1 back on v2, the others on v1", func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 3 && by[newRev]["v2"] == 1 && by[oldRev]["v1"] == 2, fmt.Sprint(by)
		})
		if p := must(c.Client.CoreV1().Pods(s.ns).Get(context.Background(), "web-1", metav1.GetOptions{})); p.Labels[appsv1.ControllerRevisionHashLabelKey] != newRev {
			t.Errorf("web-1 is of revision %q, want the update revision %s", p.Labels[appsv1.ControllerRevisionHashLabelKey], newRev)
		}
		w.Verify(t, 3)
	})

	t.Run("a StatefulSet with a partition rolls a Secret edit to the ordinals at or above it, the rest once lowered; history --diff shows no value", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-sts-partition", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "secret", "generic", "app-secret", "--from-literal=greeting=hush-1")
		s.apply(t, fromSecret(configStatefulSet(4, "  updateStrategy:\n    rollingUpdate: {partition: 2}\n")))
		s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod prints hush-1", func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 4 && by[s.statefulSet(t).Status.UpdateRevision]["hush-1"] == 4, fmt.Sprint(by)
		})
		oldRev := s.statefulSet(t).Status.UpdateRevision
		w := clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")
		s.kubectl(t, "patch", "secret", "app-secret", "--type=merge", "-p", `{"stringData":{"greeting":"hush-2"}}`)
		var newRev string
		staged := func(context.Context) (bool, string) {
			newRev = s.statefulSet(t).Status.UpdateRevision
			by, ready := s.setGreetings(t)
			return ready == 4 && newRev != oldRev && by[newRev]["hush-2"] == 2 && by[oldRev]["hush-1"] == 2, fmt.Sprint(by)
		}
		eventually(t, 2*time.Minute, "web-2 and web-3 on hush-2, web-0 and web-1 on hush-1", staged)
		holdsFor(t, 2*time.Second, 200*time.Millisecond, "held at the partition", staged)

		secrets := must(c.Client.CoreV1().Secrets(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: configrollout.SnapshotOfLabel + "=app-secret"})).Items
		if len(secrets) != 2 {
			t.Errorf("%d snapshots of app-secret, want 2 (one per revision)", len(secrets))
		}
		for _, sec := range secrets {
			if ref := metav1.GetControllerOf(&sec); sec.Immutable == nil || !*sec.Immutable || ref == nil || ref.Kind != "ControllerRevision" || sec.Type != "Opaque" {
				t.Errorf("snapshot %s: immutable %v, controller %v, type %q", sec.Name, sec.Immutable, ref, sec.Type)
			}
		}
		kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: s.c.KubeconfigPath, ns: s.ns}
		diff := kroll.must("rollout", "history", "statefulset/web", "--diff")
		if !strings.Contains(diff, "secret/app-secret changed") || !strings.Contains(diff, "greeting") || strings.Contains(diff, "hush-") {
			t.Errorf("rollout history --diff, want app-secret's greeting changed and no value:\n%s", diff)
		}

		s.kubectl(t, "patch", "statefulset", "web", "--type=merge", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
		s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
		eventually(t, time.Minute, "every pod prints hush-2", func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 4 && by[newRev]["hush-2"] == 4, fmt.Sprint(by)
		})
		w.Verify(t, 4)
	})

	t.Run("a StatefulSet whose new configuration crashes its pods is rolled back to the previous one by on-failure Rollback", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, c, "config-sts-crash", cluster.WorkloadControllersKroll)
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=good")
		// The container exits 1 unless its configuration says good; minReadySeconds
		// keeps the moment a crashing container is Ready from counting (minReady).
		m := annotateWorkload(configStatefulSet(3, "  minReadySeconds: 2\n"), "web", failure.OnFailureAnnotation, "Rollback")
		s.apply(t, strings.Replace(m, printGreeting, crashUnlessGood, 1))
		s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
		oldRev := s.statefulSet(t).Status.UpdateRevision
		w := clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")
		// The rollback counts in kroll_rollouts_rolled_back_total{kind="StatefulSet"},
		// which testHealSets counts exactly.
		setRollbacks.Lock()
		defer setRollbacks.Unlock()
		s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"bad"}}`)
		eventually(t, 3*time.Minute, "web rolled back", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, "statefulset/web", failure.RolledBackFromAnnotation)
			return got == "2", "rolled back from " + got + "; " + s.setsCondition(t, "statefulset/web", failure.ConditionRolloutFailed)
		})
		back := func(context.Context) (bool, string) {
			by, ready := s.setGreetings(t)
			return ready == 3 && by[oldRev]["good"] == 3 && len(by) == 1, fmt.Sprint(by)
		}
		eventually(t, 2*time.Minute, "every pod Ready on the previous configuration", back)
		// The live data is still the bad one; nothing rolls forward until it is edited.
		holdsFor(t, 3*time.Second, 250*time.Millisecond, "every pod stays on the previous configuration", back)
		if cm := must(c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app-config", metav1.GetOptions{})); cm.Data["greeting"] != "bad" {
			t.Errorf("the rollback changed the user's ConfigMap: %v", cm.Data)
		}
		w.Verify(t, 3)
	})
}
