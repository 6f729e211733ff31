package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The cpu request of the resize scenario's container: from oldCPU to newCPU.
const (
	oldCPU = "100m"
	newCPU = "200m"
)

var cpuPatch = []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + newCPU + `"}}}]}}}}`)

// resizeScenario: the cpu request of one Deployment of size replicas (25%/25%) goes
// from 100m to 200m, at upstream's default client limits (QPS 20): replaced pod by
// pod by the RollingUpdate (kroll's and upstream's), or resized in place through
// pods/resize with the Deployment opted in (kroll-inplace; the container's
// resizePolicy for cpu is NotRequired, so no container restarts). Timed from the
// change until the Deployment is complete at the new template and every one of its
// pods reports cpu 200m in status.containerStatuses[].resources: a rollout in place is
// over when the kubelets have made the resizes, not when they are written.
//
// Room: the nodes are sized for the pods as every Deployment scenario's are (100 pods a
// node plus the 25% surge, at least 20 nodes, each of 32 CPUs): 1,000 replicas plus a
// surge of 250 at 200m is 250 CPUs of the 640 the 20 nodes have, at most 22 of a
// node's 32 (110 pods), so no resize is deferred for room and no new pod is unschedulable.
func resizeScenario(size int) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("resize-%d", size),
		Title: fmt.Sprintf("CPU request %s → %s, 1 Deployment × %d, %s", oldCPU, newCPU, size, DefaultLimits),
		Size:  size, Nodes: nodesFor(size), Arms: []Arm{krollArm, inPlaceArm, upstreamArm}, Limits: DefaultLimits, settle: settleFor(size),
	}
	s.prepare = func(ctx context.Context, r *run) error {
		return r.createDeployments(ctx, []*appsv1.Deployment{newSizedDeployment("bench", int32(size), r.arm.InPlace)})
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		deployments, pods := r.informers.Apps().V1().Deployments(), r.informers.Core().V1().Pods()
		if err := r.sync(ctx, deployments.Informer()); err != nil {
			return measurement{}, err
		}
		if err := r.sync(ctx, pods.Informer()); err != nil {
			return measurement{}, err
		}
		stopWatch, err := watchAvailability(deployments.Informer(), []string{"bench"})
		if err != nil {
			return measurement{}, err
		}
		defer stopWatch()
		began := time.Now()
		if _, err := r.client.AppsV1().Deployments(namespace).Patch(ctx, "bench", types.StrategicMergePatchType, cpuPatch, metav1.PatchOptions{}); err != nil {
			return measurement{}, err
		}
		want := resource.MustParse(newCPU)
		complete := func() (bool, string) {
			d, err := deployments.Lister().Deployments(namespace).Get("bench")
			if err != nil {
				return false, err.Error()
			}
			st := d.Status
			return deploymentComplete(d) && requestsCPU(d.Spec.Template.Spec.Containers[0].Resources, want),
				fmt.Sprintf("replicas=%d updated=%d available=%d observedGeneration=%d/%d", st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.ObservedGeneration, d.Generation)
		}
		if err := until(ctx, deployments.Informer(), 30*time.Minute, "deployment rolled", func() bool { ok, _ := complete(); return ok },
			func() string { _, s := complete(); return s }); err != nil {
			return measurement{}, err
		}
		resized := func() (int, int) {
			list, _ := pods.Lister().Pods(namespace).List(labels.Everything())
			n := 0
			for _, p := range list {
				if p.DeletionTimestamp == nil && reportsCPU(p, want) {
					n++
				}
			}
			return n, len(list)
		}
		if err := until(ctx, pods.Informer(), 30*time.Minute, "pods resized", func() bool { n, all := resized(); return n == size && all == size },
			func() string { n, all := resized(); return fmt.Sprintf("%d of %d pods report cpu %s", n, all, newCPU) }); err != nil {
			return measurement{}, err
		}
		m := measurement{seconds: time.Since(began).Seconds(), leastAvailabilityMargin: stopWatch()}
		if !r.arm.InPlace {
			m.podWritesPerSecond = float64(2*size) / m.seconds
		}
		return m, nil
	}
	return s
}

// newSizedDeployment is newDeployment whose container requests cpu 100m, resized in
// place without a restart (resizePolicy cpu NotRequired).
func newSizedDeployment(name string, replicas int32, inPlace bool) *appsv1.Deployment {
	d := newDeployment(name, replicas, inPlace)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(oldCPU)}
	c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	return d
}

// requestsCPU tells resources whose cpu request is want (unset is zero).
func requestsCPU(r corev1.ResourceRequirements, want resource.Quantity) bool {
	have := r.Requests[corev1.ResourceCPU]
	return have.Cmp(want) == 0
}

// reportsCPU tells a pod whose first container reports running with cpu request want
// (status.containerStatuses[].resources, as the kubelet reports what it applied).
func reportsCPU(p *corev1.Pod, want resource.Quantity) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "app" && cs.Resources != nil {
			return requestsCPU(*cs.Resources, want)
		}
	}
	return false
}
