package kubelet

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// claimPod is pod web-0 on kroll-node-0 whose container mounts volume "data" from claim
// data-web-0.
func claimPod() *corev1.Pod {
	p := newPod("nginx:1.14.2")
	p.Name = "web-0"
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	return p
}

// boundClaim is claim name bound to volume "pvc-<name>".
func boundClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("claim-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-" + name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

// volumeOn is claim's volume, pinned to node by hostname.
func volumeOn(claim *corev1.PersistentVolumeClaim, node string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Spec.VolumeName},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

// lookupOf answers from the given objects, NotFound as the API server words it.
func lookupOf(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume) volumeLookup {
	return volumeLookup{
		claim: func(ns, name string) (*corev1.PersistentVolumeClaim, error) {
			for _, c := range claims {
				if c.Namespace == ns && c.Name == name {
					return c, nil
				}
			}
			return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), name)
		},
		volume: func(name string) (*corev1.PersistentVolume, error) {
			for _, v := range volumes {
				if v.Name == name {
					return v, nil
				}
			}
			return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
		},
	}
}

func TestMountFailures(t *testing.T) {
	node0 := map[string]string{corev1.LabelHostname: "kroll-node-0"}
	now := metav1.Now()
	unable := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data-web-0: "
	tests := []struct {
		name    string
		pod     func() *corev1.Pod
		claims  func() []*corev1.PersistentVolumeClaim
		volumes func(claims []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume
		want    string
	}{
		{"bound, its volume on this node: mounts", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("data-web-0")}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				return []*corev1.PersistentVolume{volumeOn(c[0], "kroll-node-0")}
			}, ""},
		{"the claim is still Pending (no volume yet)", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				c := boundClaim("data-web-0")
				c.Spec.VolumeName, c.Status.Phase = "", corev1.ClaimPending
				return []*corev1.PersistentVolumeClaim{c}
			}, nil, unable + "PVC is not bound"},
		{"the claim does not exist", claimPod,
			func() []*corev1.PersistentVolumeClaim { return nil }, nil,
			unable + `failed to fetch PVC from API server: persistentvolumeclaims "data-web-0" not found`},
		{"the claim is being deleted and nothing protects it", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				c := boundClaim("data-web-0")
				c.DeletionTimestamp = &now
				return []*corev1.PersistentVolumeClaim{c}
			}, nil, unable + "PVC is being deleted"},
		{"the claim is being deleted but protected while in use: mounts", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				c := boundClaim("data-web-0")
				c.DeletionTimestamp, c.Finalizers = &now, []string{pvcProtectionFinalizer}
				return []*corev1.PersistentVolumeClaim{c}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				return []*corev1.PersistentVolume{volumeOn(c[0], "kroll-node-0")}
			}, ""},
		{"the claim's volume does not exist", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("data-web-0")}
			}, nil,
			unable + `failed to fetch PV pvc-data-web-0 from API server: persistentvolumes "pvc-data-web-0" not found`},
		{"the volume is bound to an earlier claim of that name", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("data-web-0")}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				v := volumeOn(c[0], "kroll-node-0")
				v.Spec.ClaimRef.UID = "old"
				return []*corev1.PersistentVolume{v}
			}, unable + "found PV object pvc-data-web-0 but its pv.Spec.ClaimRef.UID old does not point to claim.UID claim-data-web-0"},
		{"the volume lives on kroll-node-1: the mount fails on node affinity", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("data-web-0")}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				return []*corev1.PersistentVolume{volumeOn(c[0], "kroll-node-1")}
			}, `MountVolume.NodeAffinity check failed for volume "pvc-data-web-0" : no matching NodeSelectorTerms`},
		{"a Block volume mounted as a filesystem", claimPod,
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("data-web-0")}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				v := volumeOn(c[0], "kroll-node-0")
				block := corev1.PersistentVolumeBlock
				v.Spec.VolumeMode = &block
				return []*corev1.PersistentVolume{v}
			}, "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume data has volumeMode Block, but is specified in volumeMounts"},
		{"a claim no container mounts is not waited for",
			func() *corev1.Pod {
				p := claimPod()
				p.Spec.Containers[0].VolumeMounts = nil
				return p
			},
			func() []*corev1.PersistentVolumeClaim { return nil }, nil, ""},
		{"two claims missing: both named, the errors joined",
			func() *corev1.Pod {
				p := claimPod()
				p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "logs", MountPath: "/logs"})
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs-web-0"}}})
				return p
			},
			func() []*corev1.PersistentVolumeClaim { return nil }, nil,
			"Unable to attach or mount volumes: unmounted volumes=[data logs], unattached volumes=[], failed to process volumes=[data logs]: " +
				`error processing PVC default/data-web-0: failed to fetch PVC from API server: persistentvolumeclaims "data-web-0" not found; ` +
				`error processing PVC default/logs-web-0: failed to fetch PVC from API server: persistentvolumeclaims "logs-web-0" not found`},
		{"a generic ephemeral volume's claim made by someone else than the pod",
			func() *corev1.Pod {
				p := claimPod()
				p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
				return p
			},
			func() []*corev1.PersistentVolumeClaim {
				return []*corev1.PersistentVolumeClaim{boundClaim("web-0-data")}
			},
			func(c []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolume {
				return []*corev1.PersistentVolume{volumeOn(c[0], "kroll-node-0")}
			}, "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: PVC default/web-0-data was not created for pod default/web-0 (pod is not owner)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := tt.claims()
			var volumes []*corev1.PersistentVolume
			if tt.volumes != nil {
				volumes = tt.volumes(claims)
			}
			got := strings.Join(mountFailures(tt.pod(), node0, lookupOf(claims, volumes)), " | ")
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestHoldForVolumes_podsWaitInContainerCreatingUntilTheirClaimIsBound(t *testing.T) {
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	events := record.NewFakeRecorder(10)
	k := &Kubelet{sim: *newSimulator(t), volumes: &volumeGate{
		claims: corelisters.NewPersistentVolumeClaimLister(claims), volumes: corelisters.NewPersistentVolumeLister(volumes),
		nodes:     corelisters.NewNodeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		recorders: map[string]record.EventRecorder{"kroll-node-0": events}, reported: map[types.UID]mountReport{},
	}}
	pending := boundClaim("data-web-0")
	pending.Spec.VolumeName, pending.Status.Phase = "", corev1.ClaimPending
	if err := claims.Add(pending); err != nil {
		t.Fatal(err)
	}
	pod, clk := claimPod(), newPodClock()
	sync := func(at time.Duration) (time.Duration, bool) {
		t.Helper()
		now := t0.Add(at)
		st, due, held := k.holdForVolumes(pod, clk, "127.1.0.1", now)
		if !held {
			st, due = k.sim.podStatus(pod, clk, addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}, now)
		}
		pod.Status = st
		if due.IsZero() {
			return 0, held
		}
		return due.Sub(t0), held
	}

	// Waiting: no sandbox, no pod IP, the container being created; retried in 10s.
	if due, held := sync(0); !held || due != 10*time.Second {
		t.Fatalf("unbound claim: held %v, next sync +%s; want held, +10s", held, due)
	}
	sandbox := podCondition(pod.Status, corev1.PodReadyToStartContainers)
	if pod.Status.Phase != corev1.PodPending || containerReason(pod.Status.ContainerStatuses[0]) != reasonContainerCreating ||
		sandbox == nil || sandbox.Status != corev1.ConditionFalse || pod.Status.PodIP != "" || pod.Status.HostIP != "127.1.0.1" {
		t.Errorf("waiting pod's status: %+v", pod.Status)
	}
	// A burst of syncs within the retry period records the event once.
	sync(time.Second)
	sync(10 * time.Second)
	var got []string
	for len(events.Events) > 0 {
		got = append(got, <-events.Events)
	}
	want := "Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data-web-0: PVC is not bound"
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("events %q; want twice (at 0s and 10s): %s", got, want)
	}

	// Bound at 12s, to a volume on another node: a new failure, reported at once.
	bound := boundClaim("data-web-0")
	if err := claims.Update(bound); err != nil {
		t.Fatal(err)
	}
	if err := volumes.Add(volumeOn(bound, "kroll-node-1")); err != nil {
		t.Fatal(err)
	}
	if _, held := sync(12 * time.Second); !held {
		t.Error("a pod was released onto a node its volume is not on")
	}
	if got := <-events.Events; got != `Warning FailedMount MountVolume.NodeAffinity check failed for volume "pvc-data-web-0" : no matching NodeSelectorTerms` {
		t.Errorf("event %q", got)
	}

	// The volume on this node at 30s: the container is created from then, for the startup delay.
	if err := volumes.Update(volumeOn(bound, "kroll-node-0")); err != nil {
		t.Fatal(err)
	}
	if due, held := sync(30 * time.Second); held || due != 30500*time.Millisecond || containerReason(pod.Status.ContainerStatuses[0]) != reasonContainerCreating {
		t.Errorf("just bound: held %v, next +%s, container %s; want ContainerCreating until +30.5s", held, due, containerReason(pod.Status.ContainerStatuses[0]))
	}
	sync(30500 * time.Millisecond)
	if containerReason(pod.Status.ContainerStatuses[0]) != "Running" || pod.Status.PodIP != "10.244.0.2" {
		t.Errorf("after the startup delay: %s, pod IP %q", containerReason(pod.Status.ContainerStatuses[0]), pod.Status.PodIP)
	}
	// Started, it is never held again, even if its claim went away.
	if err := claims.Delete(bound); err != nil {
		t.Fatal(err)
	}
	if _, held := sync(time.Minute); held {
		t.Error("a started pod was held for its volumes")
	}
}
