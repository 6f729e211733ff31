package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rolloutplan"
)

// Given a Deployment, a StatefulSet and a DaemonSet made from hand-written manifests
// that leave out everything the API server defaults (the strategy and its bounds, the
// pod management policy, the containers' imagePullPolicy and terminationMessagePath,
// the pod's restartPolicy, dnsPolicy, schedulerName, …), when `kroll rollout plan -f`
// plans such a manifest with a new image and the manifest is then applied, then the
// plan reads the API's own defaults: its only change is the image, its strategy is
// the defaulted one, and the revision it names is the one the controller makes (the
// template hash covers every defaulted template field, so one default missed would
// name another revision).
func TestRolloutPlanDefaults(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithNodes(2))
	for i, sc := range []struct {
		name, manifest, workload, strategy string
		// made is the revision the controller made for the applied manifest, as the
		// plan names it: a Deployment's new ReplicaSet (named by its template's hash),
		// a set's ControllerRevision.
		made func(t *testing.T, s *scene) string
	}{
		{"deployment", deploymentManifest(4, ""), "deployment/nginx-deployment", "RollingUpdate (maxSurge 1, maxUnavailable 1)",
			func(t *testing.T, s *scene) string {
				for _, rs := range s.replicaSets(t) {
					if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1.16.1" {
						return rs.Name
					}
				}
				t.Fatal("no ReplicaSet of the new template")
				return ""
			}},
		{"statefulset", statefulSetManifest(2, ""), "statefulset/web", "RollingUpdate (maxUnavailable 1, partition 0, OrderedReady)",
			func(t *testing.T, s *scene) string { return s.statefulSet(t).Status.UpdateRevision }},
		{"daemonset", logDaemonSet, "daemonset/logs", "RollingUpdate (maxSurge 0, maxUnavailable 1)",
			func(t *testing.T, s *scene) string {
				for _, p := range s.pods(t, "app=logs") {
					if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == "fluentd:v2" {
						return history.RevisionName("logs", p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey])
					}
				}
				t.Fatal("no pod of the new template")
				return ""
			}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := newScene(t, c, fmt.Sprintf("plan-defaults-%d", i), cluster.WorkloadControllersKroll)
			s.apply(t, sc.manifest)
			s.kubectl(t, "rollout", "status", sc.workload, "--timeout=2m")
			changed := strings.NewReplacer("nginx:1.14.2", "nginx:1.16.1", "fluentd:v1", "fluentd:v2").Replace(sc.manifest)
			for _, omitted := range []string{"strategy", "imagePullPolicy", "terminationMessagePath", "restartPolicy", "dnsPolicy", "schedulerName", "podManagementPolicy", "updateStrategy"} {
				if strings.Contains(changed, omitted) {
					t.Fatalf("the manifest sets %s: the scenario needs it left to the API server", omitted)
				}
			}
			path := filepath.Join(t.TempDir(), "changed.yaml")
			if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
				t.Fatal(err)
			}
			kroll := krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
			var plan rolloutplan.Plan
			if err := json.Unmarshal([]byte(kroll.must("rollout", "plan", "-f", path, "-o", "json")), &plan); err != nil {
				t.Fatal(err)
			}
			if len(plan.Changes) != 1 || !strings.HasPrefix(plan.Changes[0], "image ") || !strings.Contains(plan.Changes[0], ":v2") && !strings.Contains(plan.Changes[0], "1.16.1") {
				t.Errorf("changes %q, want the image alone (a default the plan missed shows as a change)", plan.Changes)
			}
			if plan.Strategy != sc.strategy {
				t.Errorf("strategy %q, want the defaulted %q", plan.Strategy, sc.strategy)
			}
			if len(plan.Batches) == 0 {
				t.Fatalf("the plan has no batch: %+v", plan)
			}
			s.kubectl(t, "apply", "-f", path)
			s.kubectl(t, "rollout", "status", sc.workload, "--timeout=2m")
			planned := plan.To
			if sc.name == "deployment" {
				planned = plan.Batches[0].Ops[0].Revision // the ReplicaSet the first pod is created in
			}
			if made := sc.made(t, s); planned != made {
				t.Errorf("the plan names revision %q, the controller made %q", planned, made)
			}
		})
	}
}
