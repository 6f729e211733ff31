package e2e

import (
	"context"
	"fmt"
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
	"github.com/kroll-dev/kroll/pkg/manager"
)

// podLedger counts, from the API side (a pod watch), every pod ever created per
// pod-template-hash and every pod deleted per hash.
type podLedger struct {
	mu      sync.Mutex
	created map[string]map[string]bool // hash → pod names
	deleted map[string]int
}

func watchPods(t *testing.T, c *cluster.Cluster, namespace string) *podLedger {
	l := &podLedger{created: map[string]map[string]bool{}, deleted: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	hash := func(obj any) string {
		if p, ok := obj.(*corev1.Pod); ok {
			return p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
		return ""
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			l.mu.Lock()
			defer l.mu.Unlock()
			h := hash(obj)
			if l.created[h] == nil {
				l.created[h] = map[string]bool{}
			}
			l.created[h][obj.(*corev1.Pod).Name] = true
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.deleted[hash(obj)]++
		},
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return l
}

// startKrollControllers runs kroll's controllers against c until the returned stop is
// called (on a cluster started without workload controllers).
func startKrollControllers(t *testing.T, c *cluster.Cluster) (stop func()) {
	return runManager(t, c.RESTConfig, manager.Options{})
}

// Given a 200-replica rollout in progress, when kroll's controllers are stopped and
// started again several times, each stop at a point where the rollout is unfinished, then the rollout finishes, every observed state keeps
// the bounds, and no pod is created twice: the new ReplicaSet's pods were created
// exactly 200 times and none of them was deleted as surplus.
func TestControllersRestartMidRollout(t *testing.T) {
	t.Parallel()
	const replicas = 200
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(4))
	stop := startKrollControllers(t, c)
	defer func() { stop() }()

	ledger := watchPods(t, c, "default")
	mustKubectl(t, c.KubeconfigPath, "create", "deployment", "big", "--image=nginx:1.14.2", "--replicas=200")
	mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/big", "--timeout=5m")
	w := clustertest.WatchDeployment(t, c.Client, "default", "big")

	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.16.1"}]}}}}`)
	if _, err := c.Client.AppsV1().Deployments("default").Patch(context.Background(), "big", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Each stop comes once the ReplicaSets have moved since the last one (a scaling
	// step of the controllers just started), so the four stops land at four points of
	// the rollout; with the controllers stopped, its state is frozen, and each stop
	// must find it unfinished, or the restarts prove nothing.
	last := "nginx:1.14.2=200"
	for i := 0; i < 4; i++ {
		eventually(t, 30*time.Second, "the ReplicaSets to move on from "+last, func(context.Context) (bool, string) {
			got := rsSizes(listReplicaSets(t, c, "default"))
			return got != last, got
		})
		stop()
		mid, state := midRollout(listReplicaSets(t, c, "default"), "nginx:1.16.1", replicas)
		last = rsSizes(listReplicaSets(t, c, "default"))
		t.Logf("restart %d: controllers stopped at %s", i+1, state)
		if !mid {
			t.Errorf("restart %d: the controllers were stopped after the rollout had finished (%s): the restart proves nothing", i+1, state)
		}
		time.Sleep(500 * time.Millisecond)
		stop = startKrollControllers(t, c)
	}
	mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/big", "--timeout=5m")
	d := waitDeploymentAvailable(t, c, "default", "big", replicas, "nginx:1.16.1", 2*time.Minute)
	w.Verify(t, 100)
	ledger.expectCreatedOnce(t, newReplicaSetHash(t, c, d, "nginx:1.16.1"), replicas)
}

// listReplicaSets lists the ReplicaSets of namespace.
func listReplicaSets(t *testing.T, c *cluster.Cluster, namespace string) []*appsv1.ReplicaSet {
	t.Helper()
	list := must(c.Client.AppsV1().ReplicaSets(namespace).List(context.Background(), metav1.ListOptions{}))
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// midRollout tells whether a rollout to image over rss is under way and unfinished:
// the new ReplicaSet (running image) has pods, and an old one still has pods or the new
// one has fewer than replicas available. state says what it saw.
func midRollout(rss []*appsv1.ReplicaSet, image string, replicas int32) (bool, string) {
	var newSize, newAvailable, old int32
	for _, rs := range rss {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			newSize, newAvailable = *rs.Spec.Replicas, rs.Status.AvailableReplicas
		} else {
			old += *rs.Spec.Replicas
		}
	}
	state := fmt.Sprintf("new ReplicaSet %d (%d available), old %d", newSize, newAvailable, old)
	return newSize > 0 && (old > 0 || newAvailable < replicas), state
}

// newReplicaSetHash is the pod-template-hash of d's ReplicaSet running image.
func newReplicaSetHash(t *testing.T, c *cluster.Cluster, d *appsv1.Deployment, image string) string {
	t.Helper()
	rss := must(c.Client.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{}))
	for _, rs := range rss.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == image && metav1.IsControlledBy(&rs, d) {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	t.Fatalf("no ReplicaSet of %s runs %s", d.Name, image)
	return ""
}

// expectCreatedOnce checks that the pods of the ReplicaSet with hash were created
// exactly replicas times and none deleted: a double create shows as surplus deleted.
func (l *podLedger) expectCreatedOnce(t *testing.T, hash string, replicas int32) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.created[hash]); n != int(replicas) {
		t.Errorf("the new ReplicaSet's pods were created %d times, want exactly %d", n, replicas)
	}
	if n := l.deleted[hash]; n != 0 {
		t.Errorf("%d pods of the new ReplicaSet were deleted: surplus from a double create", n)
	}
}
