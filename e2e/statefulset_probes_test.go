package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
)

// The StatefulSet behaviours upstream's specs show by breaking a pod's HTTP readiness
// probe through exec, as scenarios of our own: web runs httpd, Ready while its
// index.html is served, and `mv` in the container takes the file away and back.

// Upstream's own command shape: the framework runs `/bin/sh -x -c "<cmd>"`, and
// `|| true` makes each move harmless to repeat.
const (
	breakIndex   = "mv -v /usr/local/apache2/htdocs/index.html /tmp/ || true"
	restoreIndex = "mv -v /tmp/index.html /usr/local/apache2/htdocs/ || true"
)

// probedStatefulSet is web of replicas on httpd, with a readiness probe of index.html
// every second (specExtra as in statefulSetManifest).
func probedStatefulSet(replicas int, specExtra string) string {
	return strings.Replace(statefulSetManifest(replicas, specExtra), "        image: nginx:1.14.2\n", `        image: httpd:2.4
        readinessProbe:
          httpGet: {path: /index.html, port: 80}
          periodSeconds: 1
          failureThreshold: 1
`, 1)
}

// sh runs cmd in pod's container through kubectl exec, as upstream's framework does.
func (s *scene) sh(t *testing.T, pod, cmd string) {
	t.Helper()
	s.kubectl(t, "exec", pod, "--", "/bin/sh", "-x", "-c", cmd)
}

// waitReady waits until pod's Ready condition is ready.
func (s *scene) waitReady(t *testing.T, pod string, ready bool) {
	t.Helper()
	waitPod(t, s.c.Client, s.ns, pod, fmt.Sprintf("Ready=%v", ready), func(p *corev1.Pod) bool { return isPodReady(p) == ready })
}

// stsHolds checks for a few seconds that web's pods read want (see stsPods) and that
// pod stays unready: the controller is halted by it.
func (s *scene) stsHolds(t *testing.T, want, unready string) {
	t.Helper()
	holdsFor(t, 3*time.Second, 100*time.Millisecond, "web halted at "+want+" while "+unready+" is unready", func(ctx context.Context) (bool, string) {
		got := s.stsPods(t)
		for _, p := range s.pods(t, "app=nginx") {
			if p.Name == unready && isPodReady(p) {
				return false, got + ", " + unready + " Ready"
			}
		}
		return got == want, got
	})
}

// scaleUpUnready runs web of one Ready pod (specExtra as in statefulSetManifest),
// starts the watcher, breaks web-0's probe and, once web-0 is unready, scales web to 3.
func (s *scene) scaleUpUnready(t *testing.T, specExtra string) *clustertest.StatefulSetWatcher {
	t.Helper()
	s.apply(t, probedStatefulSet(1, specExtra))
	s.waitSTS(t, "web-0=r1")
	w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
	s.sh(t, "web-0", breakIndex)
	s.waitReady(t, "web-0", false)
	s.kubectl(t, "scale", "statefulset/web", "--replicas=3")
	return w
}

var statefulSetProbeScenarios = []scenario{
	{name: "OrderedReady halts scaling up and down while web-0 is unready", run: func(t *testing.T, s *scene) string {
		w := s.scaleUpUnready(t, "")
		s.stsHolds(t, "web-0=r1", "web-0")
		s.sh(t, "web-0", restoreIndex)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")

		s.sh(t, "web-0", breakIndex)
		s.sh(t, "web-0", breakIndex) // a second move finds nothing and changes nothing
		s.waitReady(t, "web-0", false)
		s.kubectl(t, "scale", "statefulset/web", "--replicas=1")
		s.stsHolds(t, "web-0=r1 web-1=r1 web-2=r1", "web-0")
		s.sh(t, "web-0", restoreIndex)
		s.waitSTS(t, "web-0=r1")
		created, terminated := w.Order()
		if fmt.Sprint(created) != "[web-0 web-1 web-2]" || fmt.Sprint(terminated) != "[web-2 web-1]" {
			t.Errorf("created %v, terminated %v; want 0, 1, 2 in order, then 2, 1", created, terminated)
		}
		w.Verify(t, 10)
		return s.stsSummary(t) + fmt.Sprintf("\ncreated %v terminated %v", created, terminated)
	}},
	{name: "a rolling update to a template whose probe fails halts, and reverting it completes", krollOnly: true, run: func(t *testing.T, s *scene) string {
		s.apply(t, probedStatefulSet(3, ""))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
		s.kubectl(t, "patch", "statefulset/web", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/readinessProbe/httpGet/path","value":"/missing.html"}]`)
		eventually(t, time.Minute, "web-2 replaced by the broken revision", func(context.Context) (bool, string) {
			got := s.stsPods(t)
			return got == "web-0=r1 web-1=r1 web-2=r2", got
		})
		s.stsHolds(t, "web-0=r1 web-1=r1 web-2=r2", "web-2")
		s.kubectl(t, "rollout", "undo", "statefulset/web")
		if s.mode == cluster.WorkloadControllersUpstream {
			// Upstream waits for web-2 to become Ready before it replaces anything, which it
			// never will: its documented way out is to delete the broken pod by hand.
			s.stsHolds(t, "web-0=r3 web-1=r3 web-2=r2", "web-2")
			s.kubectl(t, "delete", "pod", "web-2", "--wait=false")
		}
		s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3")
		if p := s.statefulSet(t).Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path; p != "/index.html" {
			t.Errorf("after the undo the probe's path is %s, want /index.html", p)
		}
		_, terminated := w.Order()
		if fmt.Sprint(terminated) != "[web-2 web-2]" {
			t.Errorf("pods replaced %v; want only web-2, twice (to the broken revision and back)", terminated)
		}
		w.Verify(t, 10)
		return s.stsSummary(t)
	}},
	{name: "Parallel scales up and down to completion with unhealthy pods", run: func(t *testing.T, s *scene) string {
		w := s.scaleUpUnready(t, "  podManagementPolicy: Parallel\n")
		eventually(t, time.Minute, "web-1 and web-2 created and Ready while web-0 is not", func(context.Context) (bool, string) {
			ready := map[string]bool{}
			for _, p := range s.pods(t, "app=nginx") {
				ready[p.Name] = isPodReady(p)
			}
			return len(ready) == 3 && !ready["web-0"] && ready["web-1"] && ready["web-2"], fmt.Sprint(ready)
		})
		for _, p := range []string{"web-1", "web-2"} {
			s.sh(t, p, breakIndex)
		}
		for _, p := range []string{"web-0", "web-1", "web-2"} {
			s.waitReady(t, p, false)
		}
		s.kubectl(t, "scale", "statefulset/web", "--replicas=0")
		s.waitSTS(t, "")
		created, _ := w.Order()
		if len(created) != 3 {
			t.Errorf("pods created %v, want web-0 and the two of the scale-up", created)
		}
		w.Verify(t, 10)
		return s.stsSummary(t)
	}},
}

func TestStatefulSetProbeScenarios(t *testing.T) {
	t.Parallel()
	runCompared(t, "stsprobe", statefulSetProbeScenarios)
}
