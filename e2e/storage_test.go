package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/storage"
)

// storageStatefulSet is the documentation's StatefulSet example with its storage: a
// claim "data" per pod from the default StorageClass, mounted by nginx; the claim of a
// pod scaled away is deleted with it, the others are kept when the set is deleted
// (whenDeleted defaults to Retain).
var storageStatefulSet = strings.Replace(statefulSetManifest(3, `  persistentVolumeClaimRetentionPolicy:
    whenScaled: Delete
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
`), "        ports:\n", "        volumeMounts:\n        - name: data\n          mountPath: /usr/share/nginx/html\n        ports:\n", 1)

// claimAndVolume reads claim name and the volume it is bound to.
func (s *scene) claimAndVolume(t *testing.T, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	claim, err := s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
	if claim.Spec.VolumeName == "" {
		t.Fatalf("claim %s is not bound (%s)", name, claim.Status.Phase)
	}
	pv, err := s.c.Client.CoreV1().PersistentVolumes().Get(context.Background(), claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("volume of claim %s: %v", name, err)
	}
	return claim, pv
}

// waitVolumeGone waits until volume name no longer exists.
func (s *scene) waitVolumeGone(t *testing.T, name string) {
	t.Helper()
	eventually(t, time.Minute, "volume "+name+" deleted", func(ctx context.Context) (bool, string) {
		pv, err := s.c.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("%s %s", pv.Name, pv.Status.Phase)
	})
}

// events are the distinct "Reason: message" of the events about the object of kind and
// name, sorted.
func (s *scene) events(t *testing.T, kind, name string) string {
	t.Helper()
	list, err := s.c.Client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range list.Items {
		if line := e.Reason + ": " + e.Message; !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// claimLabels describes the namespace's claims' labels: name{k=v,...}, sorted.
func (s *scene) claimLabels(t *testing.T) string {
	t.Helper()
	list, err := s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.Name+"{"+labelsOf(c.Labels)+"}")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

var storageScenarios = []scenario{
	{name: "volumeClaimTemplates: claims provisioned per pod; pods back on their volume's node; whenScaled Delete; whenDeleted Retain", run: func(t *testing.T, s *scene) string {
		classes := mustKubectl(t, s.c.KubeconfigPath, "get", "storageclass")
		if !strings.Contains(classes, "standard (default)") || !strings.Contains(classes, storage.ProvisionerName) || !strings.Contains(classes, "WaitForFirstConsumer") {
			t.Errorf("kubectl get storageclass:\n%s", classes)
		}
		s.apply(t, storageStatefulSet)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		var steps []string
		steps = append(steps, "3 pods: "+s.claims(t), "claim labels: "+s.claimLabels(t))

		// Each pod runs where its volume is, its claim provisioned for it by name.
		volumes := map[int]string{}
		for i := 0; i < 3; i++ {
			pod := s.pods(t, fmt.Sprintf("statefulset.kubernetes.io/pod-name=web-%d", i))[0]
			claim, pv := s.claimAndVolume(t, fmt.Sprintf("data-web-%d", i))
			volumes[i] = pv.Name
			if pv.Name != "pvc-"+string(claim.UID) || storage.VolumeNode(pv) != pod.Spec.NodeName || claim.Annotations["volume.kubernetes.io/selected-node"] != pod.Spec.NodeName {
				t.Errorf("web-%d on %s: claim %s (selected node %q) bound to %s pinned to %q", i, pod.Spec.NodeName, claim.Name,
					claim.Annotations["volume.kubernetes.io/selected-node"], pv.Name, storage.VolumeNode(pv))
			}
			if class := claim.Spec.StorageClassName; class == nil || *class != storage.DefaultClassName || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				t.Errorf("claim %s: class %v, volume reclaim policy %s; want the default class, Delete", claim.Name, class, pv.Spec.PersistentVolumeReclaimPolicy)
			}
		}
		s.expectEvent(t, "ProvisioningSucceeded", "Successfully provisioned volume "+volumes[0])
		s.expectEvent(t, "ExternalProvisioning", "Waiting for a volume to be created either by the external provisioner '"+storage.ProvisionerName+"'")

		// A deleted pod comes back on the same node, with the same claim.
		before := s.pods(t, "statefulset.kubernetes.io/pod-name=web-1")[0]
		claimBefore, _ := s.claimAndVolume(t, "data-web-1")
		if err := s.c.Client.CoreV1().Pods(s.ns).Delete(context.Background(), "web-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		after := waitPod(t, s.c.Client, s.ns, "web-1", "replaced and ready", func(p *corev1.Pod) bool { return p.UID != before.UID && isPodReady(p) })
		claimAfter, _ := s.claimAndVolume(t, "data-web-1")
		var podClaims []string
		for _, v := range after.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				podClaims = append(podClaims, v.Name+"="+v.PersistentVolumeClaim.ClaimName)
			}
		}
		steps = append(steps, fmt.Sprintf("web-1's claims: %v", podClaims))
		if after.Spec.NodeName != before.Spec.NodeName || claimAfter.UID != claimBefore.UID || after.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
			t.Errorf("web-1 came back on %s with claim %s (%s); it was on %s with %s", after.Spec.NodeName,
				after.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, claimAfter.UID, before.Spec.NodeName, claimBefore.UID)
		}
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		steps = append(steps, "web-1 deleted: "+s.claims(t))

		// whenScaled: Delete — web-2's claim goes with it, and its volume (reclaim Delete).
		s.kubectl(t, "scale", "statefulset/web", "--replicas=2")
		s.waitSTS(t, "web-0=r1 web-1=r1")
		eventually(t, time.Minute, "data-web-2 deleted", func(context.Context) (bool, string) {
			c := s.claims(t)
			return !strings.Contains(c, "data-web-2"), c
		})
		s.waitVolumeGone(t, volumes[2])
		steps = append(steps, "scaled to 2: "+s.claims(t))

		// whenDeleted: Retain — the claims and their volumes outlive the set.
		s.kubectl(t, "delete", "statefulset/web")
		eventually(t, time.Minute, "the pods gone with the set", func(context.Context) (bool, string) {
			names := s.podNames(t, "app=nginx")
			return len(names) == 0, fmt.Sprint(names)
		})
		for i := 0; i < 2; i++ {
			if _, pv := s.claimAndVolume(t, fmt.Sprintf("data-web-%d", i)); pv.Status.Phase != corev1.VolumeBound {
				t.Errorf("volume %s of a retained claim is %s", pv.Name, pv.Status.Phase)
			}
		}
		steps = append(steps, "set deleted: "+s.claims(t), "statefulset events:\n"+s.events(t, "StatefulSet", "web"))
		return strings.Join(steps, "\n")
	}},
	{name: "whenScaled Retain and whenDeleted Delete: pods scaled back up take their old claims on their old nodes; deleting the set takes claims and volumes", run: func(t *testing.T, s *scene) string {
		s.apply(t, strings.Replace(storageStatefulSet, "    whenScaled: Delete\n", "    whenScaled: Retain\n    whenDeleted: Delete\n", 1))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		type placed struct{ node, claimUID, volume string }
		before := map[string]placed{}
		for _, p := range s.pods(t, "app=nginx") {
			claim, pv := s.claimAndVolume(t, "data-"+p.Name)
			before[p.Name] = placed{p.Spec.NodeName, string(claim.UID), pv.Name}
		}
		steps := []string{"3 pods: " + s.claims(t)}
		s.kubectl(t, "scale", "statefulset/web", "--replicas=1")
		s.waitSTS(t, "web-0=r1")
		steps = append(steps, "scaled to 1: "+s.claims(t))
		s.kubectl(t, "scale", "statefulset/web", "--replicas=3")
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		for _, p := range s.pods(t, "app=nginx") {
			claim, pv := s.claimAndVolume(t, "data-"+p.Name)
			if now := (placed{p.Spec.NodeName, string(claim.UID), pv.Name}); now != before[p.Name] {
				t.Errorf("%s scaled back: %+v; before %+v", p.Name, now, before[p.Name])
			}
		}
		steps = append(steps, "scaled back to 3: "+s.claims(t))
		s.kubectl(t, "delete", "statefulset/web")
		eventually(t, time.Minute, "the claims deleted with the set", func(context.Context) (bool, string) {
			c := s.claims(t)
			return c == "", c
		})
		for _, p := range before {
			s.waitVolumeGone(t, p.volume)
		}
		return strings.Join(append(steps, "set deleted: claims and volumes gone"), "\n")
	}},
	{name: "an Immediate Retain class: the claim is bound before any pod; the pod goes to the volume; the volume outlives the claim", run: func(t *testing.T, s *scene) string {
		class := "keep-" + s.ns
		mustKubectl(t, s.c.KubeconfigPath, "apply", "-f", writeFile(t, "class.yaml", fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
provisioner: %s
volumeBindingMode: Immediate
reclaimPolicy: Retain
`, class, storage.ProvisionerName)))
		s.apply(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: cache
spec:
  storageClassName: %s
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 2Gi
`, class))
		eventually(t, time.Minute, "claim cache bound with no pod", func(context.Context) (bool, string) {
			c := s.claims(t)
			return c == "cache(Bound owner=none)", c
		})
		_, pv := s.claimAndVolume(t, "cache")
		node := storage.VolumeNode(pv)
		s.apply(t, `apiVersion: v1
kind: Pod
metadata:
  name: reader
spec:
  containers:
  - name: app
    image: nginx:1.14.2
    volumeMounts:
    - name: cache
      mountPath: /cache
  volumes:
  - name: cache
    persistentVolumeClaim:
      claimName: cache
`)
		pod := waitPod(t, s.c.Client, s.ns, "reader", "ready", isPodReady)
		if pod.Spec.NodeName != node || node == "" {
			t.Errorf("reader runs on %s, its volume %s is on %q", pod.Spec.NodeName, pv.Name, node)
		}
		s.kubectl(t, "delete", "pod/reader", "pvc/cache")
		eventually(t, time.Minute, "volume "+pv.Name+" Released", func(ctx context.Context) (bool, string) {
			got, err := s.c.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.Phase == corev1.VolumeReleased, string(got.Status.Phase)
		})
		var kept *corev1.PersistentVolume
		holdsFor(t, 2*time.Second, 100*time.Millisecond, "the Retain volume kept, Released", func(ctx context.Context) (bool, string) {
			var err error
			if kept, err = s.c.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			return kept.Status.Phase == corev1.VolumeReleased, string(kept.Status.Phase)
		})
		mustKubectl(t, s.c.KubeconfigPath, "delete", "pv/"+pv.Name, "storageclass/"+class)
		return fmt.Sprintf("claim bound before its pod; pod on its volume's node: %v; volume %s after the claim was deleted",
			pod.Spec.NodeName == node, kept.Status.Phase)
	}},
	{name: "a pod whose claim is not bound waits in ContainerCreating; one on the wrong node for its volume never starts", run: func(t *testing.T, s *scene) string {
		// A class nobody provisions: the claim stays Pending until a volume is made by hand.
		class := "manual-" + s.ns
		s.apply(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: late
spec:
  storageClassName: %s
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`, class))
		// Bound to their nodes directly, past the scheduler (which would wait for the claim).
		podOn := func(name, node string) string {
			return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: %s
  containers:
  - name: app
    image: nginx:1.14.2
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: late
`, name, node)
		}
		s.apply(t, podOn("early", "kroll-node-0"))
		s.apply(t, podOn("misplaced", "kroll-node-1"))
		notBound := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC " + s.ns + "/late: PVC is not bound"
		for _, name := range []string{"early", "misplaced"} {
			eventually(t, time.Minute, name+"'s FailedMount event", func(context.Context) (bool, string) {
				ev := s.events(t, "Pod", name)
				return strings.Contains(ev, "FailedMount: "+notBound), ev
			})
		}
		holdsFor(t, time.Second, 100*time.Millisecond, "early and misplaced Pending in ContainerCreating, without an IP, while the claim is Pending", func(ctx context.Context) (bool, string) {
			for _, name := range []string{"early", "misplaced"} {
				pod, err := s.c.Client.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				if pod.Status.Phase != corev1.PodPending || !strings.Contains(podState(pod), " 0/1 ContainerCreating ") || pod.Status.PodIP != "" {
					return false, fmt.Sprintf("%s: %s, pod IP %q", name, podState(pod), pod.Status.PodIP)
				}
			}
			return true, ""
		})

		// A volume on kroll-node-0, made for the claim (its UID too, so that the PV
		// controller binds at once rather than at its next 15s resync): early starts;
		// misplaced cannot.
		volume := "late-" + s.ns
		late, err := s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).Get(context.Background(), "late", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, s.c.KubeconfigPath, "apply", "-f", writeFile(t, "pv.yaml", fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  storageClassName: %s
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  claimRef:
    namespace: %s
    name: late
    uid: %s
  local:
    path: /var/lib/kroll/manual/late
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - key: kubernetes.io/hostname
          operator: In
          values: [kroll-node-0]
`, volume, class, s.ns, late.UID)))
		waitPod(t, s.c.Client, s.ns, "early", "ready once its claim is bound", isPodReady)
		eventually(t, time.Minute, "misplaced's node affinity FailedMount event", func(context.Context) (bool, string) {
			ev := s.events(t, "Pod", "misplaced")
			return strings.Contains(ev, `FailedMount: MountVolume.NodeAffinity check failed for volume "`+volume+`" : no matching NodeSelectorTerms`), ev
		})
		misplaced := waitPod(t, s.c.Client, s.ns, "misplaced", "still waiting", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
		s.kubectl(t, "delete", "pod/early", "pod/misplaced", "pvc/late")
		mustKubectl(t, s.c.KubeconfigPath, "delete", "pv/"+volume)
		return "early: waited, then ready; misplaced: " + podState(misplaced)
	}},
}

func TestStorageScenarios(t *testing.T) {
	t.Parallel()
	runCompared(t, "storage", storageScenarios)
}

// Given a cluster whose StatefulSet runs on provisioned volumes and whose user edited the
// default class, when the cluster restarts on its data dir (one made before simulated
// storage existed, say: no provisioner certificate yet), then the edit is kept, the pods
// run again on their volumes' nodes with their claims, no volume is made twice, and a
// new claim is provisioned.
func TestStorageSurvivesARestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	c := clustertest.Start(t, clustertest.WithDataDir(dataDir))
	s := newScene(t, c, "storage-restart", cluster.WorkloadControllersKroll)
	s.apply(t, strings.Replace(storageStatefulSet, "  replicas: 3\n", "  replicas: 2\n", 1))
	s.waitSTS(t, "web-0=r1 web-1=r1")
	mustKubectl(t, c.KubeconfigPath, "annotate", "storageclass", storage.DefaultClassName, "owner=me")
	mustKubectl(t, c.KubeconfigPath, "patch", "storageclass", storage.DefaultClassName, "-p", `{"allowVolumeExpansion":true}`)
	placement := func(c *cluster.Cluster) string {
		s.c = c
		var out []string
		for _, p := range s.pods(t, "app=nginx") {
			claim, pv := s.claimAndVolume(t, "data-"+p.Name)
			out = append(out, fmt.Sprintf("%s on %s: claim %s volume %s on %s", p.Name, p.Spec.NodeName, claim.UID, pv.Name, storage.VolumeNode(pv)))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	before := placement(c)

	c.Stop()
	for _, f := range []string{"storage-provisioner.crt", "storage-provisioner.key"} {
		if err := os.Remove(filepath.Join(dataDir, "pki", f)); err != nil {
			t.Fatal(err)
		}
	}
	c2, err := cluster.Start(context.Background(), clustertest.Config(t, clustertest.WithDataDir(dataDir)))
	if err != nil {
		t.Fatalf("restart on %s: %v", dataDir, err)
	}
	t.Cleanup(c2.Stop)
	s.c = c2
	s.waitSTS(t, "web-0=r1 web-1=r1")
	if after := placement(c2); after != before {
		t.Errorf("after the restart:\n%s\nbefore:\n%s", after, before)
	}
	class, err := c2.Client.StorageV1().StorageClasses().Get(context.Background(), storage.DefaultClassName, metav1.GetOptions{})
	if err != nil || class.Annotations["owner"] != "me" || class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion {
		t.Errorf("the user's edits of %s were not kept: %v %+v", storage.DefaultClassName, err, class)
	}
	s.kubectl(t, "scale", "statefulset/web", "--replicas=3")
	s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
	volumes, err := c2.Client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(volumes.Items) != 3 {
		t.Errorf("%d volumes for 3 claims (%v)", len(volumes.Items), err)
	}
}
