package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rolloutplan"
)

// opRecorder records, from a pod watch, every pod operation of one namespace in the
// order the API server made it: a pod created, a pod's deletion (its deletion
// timestamp set, or the pod gone at once), a pod's images changed in place — each with
// its revision as a plan names it (revision) and its node.
type opRecorder struct {
	mu       sync.Mutex
	ops      []rolloutplan.PodOp
	started  bool
	deleting map[types.UID]bool
	revision func(*corev1.Pod) string
}

func recordPodOps(t *testing.T, c *cluster.Cluster, namespace string, revision func(*corev1.Pod) string) *opRecorder {
	r := &opRecorder{deleting: map[types.UID]bool{}, revision: revision}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	record := func(op rolloutplan.Op, p *corev1.Pod) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.started {
			return
		}
		if op == rolloutplan.Delete {
			if r.deleting[p.UID] {
				return
			}
			r.deleting[p.UID] = true
		}
		r.ops = append(r.ops, rolloutplan.PodOp{Op: op, Pod: p.Name, Node: placement.TargetNode(p), Revision: r.revision(p)})
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { record(rolloutplan.Create, obj.(*corev1.Pod)) },
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			switch {
			case old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil:
				record(rolloutplan.Delete, old)
			case images(old) != images(cur):
				record(rolloutplan.InPlace, cur)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			record(rolloutplan.Delete, obj.(*corev1.Pod))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// Once the handler has seen the pods that exist (not just the informer's cache).
	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
	r.mu.Lock()
	r.started = true // pods that existed already are not operations
	r.mu.Unlock()
	return r
}

func images(p *corev1.Pod) string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

// opKey is how an operation is compared with the plan's: a created or deleted pod is
// known by its revision only — where the scheduler puts a new pod, and so which old pod
// the deletion ranking then prefers, is not the plan's to say — but for a StatefulSet,
// whose pods are its ordinals (named), a DaemonSet, whose pods are its nodes (onNodes),
// and pods updated in place, whose names the plan gives.
func opKey(op rolloutplan.PodOp, named, onNodes bool) string {
	switch {
	case named || op.Op == rolloutplan.InPlace:
		return fmt.Sprintf("%s %s %s", op.Op, op.Pod, op.Revision)
	case onNodes:
		return fmt.Sprintf("%s on %s %s", op.Op, op.Node, op.Revision)
	}
	return fmt.Sprintf("%s %s", op.Op, op.Revision)
}

// expectBatches checks that the operations recorded, batch by batch, are the plan's:
// the first len(batch 1) recorded operations are batch 1's (in any order), and so on.
func (r *opRecorder) expectBatches(t *testing.T, plan rolloutplan.Plan, named, onNodes bool) {
	t.Helper()
	r.mu.Lock()
	recorded := append([]rolloutplan.PodOp(nil), r.ops...)
	r.mu.Unlock()
	var want, got []string
	next := 0
	for i, b := range plan.Batches {
		var w, g []string
		for _, op := range b.Ops {
			w = append(w, opKey(op, named, onNodes))
		}
		for j := next; j < next+len(b.Ops) && j < len(recorded); j++ {
			g = append(g, opKey(recorded[j], named, onNodes))
		}
		next += len(b.Ops)
		sort.Strings(w)
		sort.Strings(g)
		want = append(want, fmt.Sprintf("%d. %s", i+1, strings.Join(w, "; ")))
		got = append(got, fmt.Sprintf("%d. %s", i+1, strings.Join(g, "; ")))
	}
	for _, op := range recorded[min(next, len(recorded)):] {
		got = append(got, "beyond the plan: "+opKey(op, named, onNodes))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the controller's operations differ from the plan printed before\nplan:\n%s\ncontroller:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// Given a Deployment (rolling and in place), a partitioned StatefulSet and a DaemonSet,
// when `kroll rollout plan` prints what an image change would do and then the change is
// made, then kroll's controllers make exactly the planned batches, in order: the plan
// and the controllers decide with the same planners.
func TestRolloutPlanMatchesTheControllers(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithNodes(3))
	byOwner := func(p *corev1.Pod) string {
		if ref := metav1.GetControllerOf(p); ref != nil {
			return ref.Name
		}
		return ""
	}
	byHash := func(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] }
	byDaemonHash := func(p *corev1.Pod) string {
		return history.RevisionName("logs", p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey])
	}
	for i, sc := range []struct {
		name, manifest, workload, image string
		revision                        func(*corev1.Pod) string
		named, onNodes                  bool
	}{
		{"deployment rolling, maxSurge 1, maxUnavailable 0", deploymentManifest(4, "  strategy:\n    rollingUpdate:\n      maxSurge: 1\n      maxUnavailable: 0\n"),
			"deployment/nginx-deployment", "nginx=nginx:1.16.1", byOwner, false, false},
		{"deployment in place, maxUnavailable 2", inPlaceDeployment("web", 6, "InPlaceIfPossible", "0", "2", ""),
			"deployment/web", "app=nginx:1.16.1", byOwner, false, false},
		{"statefulset, partition 2 of 4", statefulSetManifest(4, "  updateStrategy:\n    rollingUpdate:\n      partition: 2\n"),
			"statefulset/web", "nginx=nginx:1.16.1", byHash, true, false},
		{"daemonset over 3 nodes, maxUnavailable 1", daemonSetManifest("", ""),
			"daemonset/logs", "agent=fluentd:v2", byDaemonHash, false, true},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := newScene(t, c, fmt.Sprintf("parity-%d", i), cluster.WorkloadControllersKroll)
			s.apply(t, sc.manifest)
			s.kubectl(t, "rollout", "status", sc.workload, "--timeout=2m")
			kroll := krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
			var plan rolloutplan.Plan
			if err := json.Unmarshal([]byte(kroll.must("rollout", "plan", sc.workload, "--image", sc.image, "-o", "json")), &plan); err != nil {
				t.Fatal(err)
			}
			if len(plan.Batches) < 2 {
				t.Fatalf("the plan has %d batches; the scenario proves nothing with fewer than 2: %+v", len(plan.Batches), plan)
			}
			rec := recordPodOps(t, c, s.ns, sc.revision)
			container, image, _ := strings.Cut(sc.image, "=")
			s.kubectl(t, "set", "image", sc.workload, container+"="+image)
			s.kubectl(t, "rollout", "status", sc.workload, "--timeout=2m")
			creates, deletes, inPlace := plan.Counts()
			planned := creates + deletes + inPlace
			recorded := func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.ops) }
			eventually(t, 30*time.Second, "every planned operation", func(context.Context) (bool, string) {
				return recorded() >= planned, fmt.Sprint(recorded(), " operations")
			})
			// The rollout is complete: a controller acting on it again would do so within
			// a sync of its last status write.
			holdsFor(t, time.Second, 50*time.Millisecond, fmt.Sprint("no operation beyond the plan's ", planned), func(context.Context) (bool, string) {
				return recorded() == planned, fmt.Sprint(recorded(), " operations")
			})
			rec.expectBatches(t, plan, sc.named, sc.onNodes)
		})
	}
}
