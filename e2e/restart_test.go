package e2e

import (
	"context"
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
// started again several times, then the rollout finishes, every observed state keeps
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
	for i := 0; i < 4; i++ {
		time.Sleep(2 * time.Second)
		stop()
		t.Logf("restart %d: controllers stopped mid-rollout", i+1)
		time.Sleep(500 * time.Millisecond)
		stop = startKrollControllers(t, c)
	}
	mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/big", "--timeout=5m")
	d := waitDeploymentAvailable(t, c, "default", "big", replicas, "nginx:1.16.1", 2*time.Minute)
	w.Verify(t, 100)
	ledger.expectCreatedOnce(t, newReplicaSetHash(t, c, d, "nginx:1.16.1"), replicas)
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
