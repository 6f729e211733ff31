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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := manager.Run(ctx, c.RESTConfig, manager.Options{}); err != nil {
			t.Errorf("controllers: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

// Given a 200-replica rollout in progress, when kroll's controllers are stopped and
// started again several times, then the rollout finishes, every observed state keeps
// the bounds, and no pod is created twice: the new ReplicaSet's pods were created
// exactly 200 times and none of them was deleted as surplus.
func TestControllersRestartMidRollout(t *testing.T) {
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
	d := waitDeploymentAvailable(t, c, "big", replicas, "nginx:1.16.1")
	w.Verify(t, 100)

	newHash := ""
	rss, err := c.Client.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range rss.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1.16.1" && metav1.IsControlledBy(&rs, d) {
			newHash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if n := len(ledger.created[newHash]); n != replicas {
		t.Errorf("the new ReplicaSet's pods were created %d times, want exactly %d", n, replicas)
	}
	if n := ledger.deleted[newHash]; n != 0 {
		t.Errorf("%d pods of the new ReplicaSet were deleted: surplus from a double create", n)
	}
}
