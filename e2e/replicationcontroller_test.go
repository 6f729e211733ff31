package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
)

const webRC = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 3
  minReadySeconds: 1
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
        tier: front
    spec:
      containers:
      - name: web
        image: nginx:1.14.2
`

// strayWebPod is a bare pod that web's selector matches but that lacks its template's
// tier label: adopted, but not fully labelled.
const strayWebPod = `apiVersion: v1
kind: Pod
metadata:
  name: stray
  labels:
    app: web
spec:
  containers:
  - name: web
    image: nginx:1.14.2
`

// TestReplicationControllers scales, adopts into and deletes a ReplicationController
// with kroll's controllers and with upstream's, and compares what they did.
func TestReplicationControllers(t *testing.T) {
	t.Parallel()
	results := map[cluster.WorkloadControllers]string{}
	for _, mode := range []cluster.WorkloadControllers{cluster.WorkloadControllersKroll, cluster.WorkloadControllersUpstream} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, clustertest.WithWorkloadControllers(mode))
			s := &scene{c: c, ns: "rc", mode: mode}
			s.kubectl(t, "create", "namespace", s.ns)
			eventually(t, time.Minute, "the default service account", func(ctx context.Context) (bool, string) {
				_, err := c.Client.CoreV1().ServiceAccounts(s.ns).Get(ctx, "default", metav1.GetOptions{})
				return err == nil, fmt.Sprint(err)
			})
			results[mode] = replicationControllerScenario(t, s)
		})
	}
	k, u := results[cluster.WorkloadControllersKroll], results[cluster.WorkloadControllersUpstream]
	if k != "" && u != "" && k != u {
		t.Errorf("kroll and upstream differ\nkroll:\n%s\nupstream:\n%s", k, u)
	}
}

func replicationControllerScenario(t *testing.T, s *scene) string {
	var steps []string
	record := func(step, want string) {
		t.Helper()
		s.waitRCStatus(t, "web", want)
		steps = append(steps, step+": "+want)
	}
	s.apply(t, webRC)
	record("created", "replicas=3 fullyLabeled=3 ready=3 available=3 observed=1")
	for _, p := range s.pods(t, "app=web") {
		if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "ReplicationController" || ref.Name != "web" || ref.APIVersion != "v1" {
			t.Errorf("pod %s has controller %+v, want ReplicationController web", p.Name, ref)
		}
	}

	s.kubectl(t, "scale", "rc/web", "--replicas=5")
	record("scaled up", "replicas=5 fullyLabeled=5 ready=5 available=5 observed=2")
	s.kubectl(t, "scale", "rc/web", "--replicas=2")
	record("scaled down", "replicas=2 fullyLabeled=2 ready=2 available=2 observed=3")

	// The pods the scale-down deleted may still be terminating: delete a live one.
	s.kubectl(t, "delete", "pod", "--wait=false", s.livePodNames(t, "app=web")[0])
	record("a pod deleted and replaced", "replicas=2 fullyLabeled=2 ready=2 available=2 observed=3")

	// Deleting with --cascade=orphan leaves the pods; a new RC adopts them, and a bare
	// pod its selector matches, instead of creating others.
	s.kubectl(t, "delete", "rc/web", "--cascade=orphan")
	eventually(t, time.Minute, "the pods orphaned", func(context.Context) (bool, string) {
		owned := 0
		for _, p := range s.pods(t, "app=web") {
			if metav1.GetControllerOf(p) != nil {
				owned++
			}
		}
		return owned == 0, fmt.Sprintf("%d pods still owned", owned)
	})
	s.apply(t, strayWebPod)
	waitPod(t, s.c.Client, s.ns, "stray", "Ready", isPodReady)
	before := s.livePodNames(t, "app=web")
	s.apply(t, webRC)
	record("re-created over two orphans and a stray pod", "replicas=3 fullyLabeled=2 ready=3 available=3 observed=1")
	if after := s.livePodNames(t, "app=web"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("pods %v after re-creating the RC, want the orphans and the stray pod %v adopted", after, before)
	}
	for _, p := range s.livePods(t, "app=web") { // a controller adopts no pod being deleted
		if ref := metav1.GetControllerOf(p); ref == nil || ref.Name != "web" {
			t.Errorf("pod %s has controller %+v, want web", p.Name, ref)
		}
	}

	// Deleting with the default cascade takes the pods with it (the garbage collector).
	s.kubectl(t, "delete", "rc/web")
	eventually(t, time.Minute, "the pods deleted with their RC", func(context.Context) (bool, string) {
		names := s.podNames(t, "app=web")
		return len(names) == 0, fmt.Sprint(names)
	})
	steps = append(steps, "deleted with cascade: no pods")
	return strings.Join(steps, "\n")
}

func (s *scene) pods(t *testing.T, selector string) []*corev1.Pod {
	t.Helper()
	list, err := s.c.Client.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// livePods are the pods selector matches that are not being deleted.
func (s *scene) livePods(t *testing.T, selector string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, p := range s.pods(t, selector) {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// podNames are the names of the pods selector matches, sorted.
func (s *scene) podNames(t *testing.T, selector string) []string {
	t.Helper()
	return sortedNames(s.pods(t, selector))
}

// livePodNames are the names of the live pods (livePods) selector matches, sorted.
func (s *scene) livePodNames(t *testing.T, selector string) []string {
	t.Helper()
	return sortedNames(s.livePods(t, selector))
}

func sortedNames(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// waitRCStatus waits until RC name's status (and its live pods) read want.
func (s *scene) waitRCStatus(t *testing.T, name, want string) {
	t.Helper()
	eventually(t, time.Minute, "rc/"+name+" "+want, func(ctx context.Context) (bool, string) {
		rc, err := s.c.Client.CoreV1().ReplicationControllers(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := rc.Status
		got := fmt.Sprintf("replicas=%d fullyLabeled=%d ready=%d available=%d observed=%d",
			st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas, st.ObservedGeneration)
		live := len(s.livePods(t, labelsOf(rc.Spec.Selector)))
		return got == want && int32(live) == st.Replicas, fmt.Sprintf("%s (%d live pods)", got, live)
	})
}

func labelsOf(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
