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
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// inPlaceKind is one opted-in workload of the template-change scenarios.
type inPlaceKind struct {
	kind, name string
	// app is the value of the pods' app label.
	app, manifest, image string
	// watch starts the kind's invariant watcher; verify checks what it saw.
	watch func(t *testing.T, s *scene) (verify func(t *testing.T))
}

var inPlaceKinds = []inPlaceKind{
	{kind: "deployment", name: "web", app: "web", image: "nginx:1.14.2",
		manifest: inPlaceDeployment("web", 4, inplace.IfPossible, "1", "1", ""),
		watch: func(t *testing.T, s *scene) func(*testing.T) {
			w := clustertest.WatchDeployment(t, s.c.Client, s.ns, "web")
			return func(t *testing.T) { w.Verify(t, 4) }
		}},
	{kind: "statefulset", name: "web", app: "nginx", image: "nginx:1.14.2",
		manifest: optIn(statefulSetManifest(3, ""), "web"),
		watch: func(t *testing.T, s *scene) func(*testing.T) {
			w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
			return func(t *testing.T) { w.Verify(t, 3) }
		}},
	{kind: "daemonset", name: "logs", app: "logs", image: "fluentd:v1",
		manifest: optIn(daemonSetManifest("", ""), "logs"),
		watch: func(t *testing.T, s *scene) func(*testing.T) {
			w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
			return func(t *testing.T) { w.Verify(t, 3) }
		}},
}

// revisionLabel is the label that names a pod's revision for k, and the value every
// pod must have once k has rolled out.
func (s *scene) revisionLabel(t *testing.T, k inPlaceKind) (key, value string) {
	t.Helper()
	ctx := context.Background()
	switch k.kind {
	case "deployment":
		d := s.deployment(t, k.name)
		for _, rs := range s.replicaSets(t) {
			if rs.Annotations["deployment.kubernetes.io/revision"] == d.Annotations["deployment.kubernetes.io/revision"] {
				return appsv1.DefaultDeploymentUniqueLabelKey, rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			}
		}
		t.Fatalf("no ReplicaSet of deployment %s has its revision", k.name)
	case "statefulset":
		set := s.statefulSet(t)
		if set.Status.CurrentRevision != set.Status.UpdateRevision {
			t.Errorf("rolled out, yet currentRevision %s != updateRevision %s", set.Status.CurrentRevision, set.Status.UpdateRevision)
		}
		return appsv1.ControllerRevisionHashLabelKey, set.Status.UpdateRevision
	case "daemonset":
		revs, err := s.c.Client.AppsV1().ControllerRevisions(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var newest *appsv1.ControllerRevision
		for i := range revs.Items {
			if newest == nil || revs.Items[i].Revision > newest.Revision {
				newest = &revs.Items[i]
			}
		}
		if newest == nil {
			t.Fatal("no ControllerRevision")
		}
		return appsv1.ControllerRevisionHashLabelKey, newest.Labels[appsv1.ControllerRevisionHashLabelKey]
	}
	return "", ""
}

// expectPodsCarry checks that every pod of k has the labels and annotations of want
// (a value "" means: absent) and k's current revision label.
func (s *scene) expectPodsCarry(t *testing.T, k inPlaceKind, want map[string]string) {
	t.Helper()
	key, rev := s.revisionLabel(t, k)
	for _, p := range s.pods(t, "app="+k.app) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[key] != rev {
			t.Errorf("pod %s: %s=%q, want %q", p.Name, key, p.Labels[key], rev)
		}
		for name, value := range want {
			got, ok := p.Labels[name]
			if strings.HasPrefix(name, "annotation:") {
				got, ok = p.Annotations[strings.TrimPrefix(name, "annotation:")]
			}
			if (value == "") == ok || got != value {
				t.Errorf("pod %s: %s=%q (set: %v), want %q", p.Name, name, got, ok, value)
			}
		}
	}
}

// Given a Deployment, a StatefulSet and a DaemonSet opted in to in-place updates, when
// their pod templates change without an image — labels and annotations added, then an
// annotation removed — then the pods get the change where they run, with their new
// revision label, no container restarts and the rollout completes; the InPlaceUpdate
// condition then says the change is complete. When `kubectl rollout restart` asks for
// new containers — which only a new pod gets — InPlaceIfPossible replaces the pods as
// a rolling update does, and InPlaceOnly touches none; the condition names the field.
func TestInPlaceTemplateChangesWithoutImages(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithNodes(3))
	for i, k := range inPlaceKinds {
		t.Run(k.kind, func(t *testing.T) {
			s := newScene(t, c, fmt.Sprintf("template-%d", i), cluster.WorkloadControllersKroll)
			workload := k.kind + "/" + k.name
			s.apply(t, k.manifest)
			s.kubectl(t, "rollout", "status", workload, "--timeout=2m")
			before := s.podRecords(t, k.app)
			verify := k.watch(t, s)

			s.kubectl(t, "patch", workload, "--type=merge", "-p", `{"spec":{"template":{"metadata":{"labels":{"tier":"front"},"annotations":{"note":"v2"}}}}}`)
			s.kubectl(t, "rollout", "status", workload, "--timeout=90s")
			s.expectUpdatedInPlace(t, k.app, before, k.image, 0)
			s.expectPodsCarry(t, k, map[string]string{"tier": "front", "annotation:note": "v2"})
			s.waitInPlaceCondition(t, workload, "True/"+inplace.ReasonComplete)

			s.kubectl(t, "patch", workload, "--type=json", "-p", `[{"op":"remove","path":"/spec/template/metadata/annotations/note"}]`)
			s.kubectl(t, "rollout", "status", workload, "--timeout=90s")
			s.expectUpdatedInPlace(t, k.app, before, k.image, 0)
			s.expectPodsCarry(t, k, map[string]string{"tier": "front", "annotation:note": ""})
			s.waitInPlaceCondition(t, workload, "True/"+inplace.ReasonComplete)
			verify(t)

			restart := "metadata.annotations[kubectl.kubernetes.io/restartedAt] cannot be made in place"
			s.kubectl(t, "rollout", "restart", workload)
			s.kubectl(t, "rollout", "status", workload, "--timeout=2m")
			s.waitInPlaceCondition(t, workload, "False/"+inplace.ReasonFallback+": the change to "+restart)
			replaced := s.podRecords(t, k.app)
			if len(replaced) != len(before) {
				t.Errorf("%d pods after the restart, %d before", len(replaced), len(before))
			}
			for uid, p := range replaced {
				if _, kept := before[uid]; kept {
					t.Errorf("pod %s was kept through a restart: its containers never restarted", p.name)
				}
			}
			s.expectEvent(t, inplace.ReasonFallback, "kubectl.kubernetes.io/restartedAt")

			s.kubectl(t, "annotate", "--overwrite", workload, inplace.StrategyAnnotation+"="+string(inplace.Only))
			s.kubectl(t, "rollout", "restart", workload)
			s.waitInPlaceCondition(t, workload, "False/"+inplace.ReasonBlocked+": the change to "+restart)
			s.stayUpdatedInPlace(t, 2*time.Second, k.app, replaced, k.image, 0) // blocked: no pod touched
			s.expectEvent(t, inplace.ReasonBlocked, "kubectl.kubernetes.io/restartedAt")
		})
	}
}
