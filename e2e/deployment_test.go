package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/history"
)

var (
	progressingReason = regexp.MustCompile(`Progressing=True/\w+`)
	rsName            = regexp.MustCompile(`rs \S+ `)
)

// scene is one scenario's cluster and namespace.
type scene struct {
	c    *cluster.Cluster
	ns   string
	mode cluster.WorkloadControllers
}

// watch starts the invariant watcher on nginx-deployment.
func (s *scene) watch(t *testing.T) *clustertest.DeploymentWatcher {
	return clustertest.WatchDeployment(t, s.c.Client, s.ns, "nginx-deployment")
}

// verify holds kroll to every bound at every observed state; upstream's run is there
// to compare outcomes with, and its bound violations (it counts ReplicaSet specs, not
// pods, so a rollover can briefly run more than replicas+maxSurge pods) are only logged.
func (s *scene) verify(t *testing.T, w *clustertest.DeploymentWatcher, minObserved int) {
	t.Helper()
	if s.mode == cluster.WorkloadControllersKroll {
		w.Verify(t, minObserved)
		return
	}
	w.Report(t)
}

func (s *scene) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return mustKubectl(t, s.c.KubeconfigPath, append([]string{"-n", s.ns}, args...)...)
}

func (s *scene) tryKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return kubectl(t, s.c.KubeconfigPath, append([]string{"-n", s.ns}, args...)...)
}

func (s *scene) apply(t *testing.T, manifest string) {
	t.Helper()
	s.kubectl(t, "apply", "-f", writeFile(t, "manifest.yaml", manifest))
}

func (s *scene) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, err := s.c.Client.AppsV1().Deployments(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// replicaSets lists the Deployment's ReplicaSets, oldest revision first.
func (s *scene) replicaSets(t *testing.T) []*appsv1.ReplicaSet {
	t.Helper()
	list, err := s.c.Client.AppsV1().ReplicaSets(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	history.SortByRevision(out)
	return out
}

// waitRS waits until the ReplicaSets (oldest revision first) have these image=size pairs.
func (s *scene) waitRS(t *testing.T, want string) {
	t.Helper()
	eventually(t, time.Minute, "ReplicaSets "+want, func(context.Context) (bool, string) {
		got := rsSizes(s.replicaSets(t))
		return got == want, got
	})
}

// rsHold checks that the ReplicaSets stay want (as rsSizes writes them) for window.
func (s *scene) rsHold(t *testing.T, window time.Duration, want string) {
	t.Helper()
	holdsFor(t, window, 100*time.Millisecond, "ReplicaSets "+want, func(context.Context) (bool, string) {
		got := rsSizes(s.replicaSets(t))
		return got == want, got
	})
}

func rsSizes(rss []*appsv1.ReplicaSet) string {
	var parts []string
	for _, rs := range rss {
		parts = append(parts, fmt.Sprintf("%s=%d", rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas))
	}
	return strings.Join(parts, " ")
}

// summary is what both controllers must agree on: each ReplicaSet's revision,
// revision-history, image and size, and the Deployment's revision and conditions.
func (s *scene) summary(t *testing.T, name string) string {
	t.Helper()
	var b strings.Builder
	for _, rs := range s.replicaSets(t) {
		fmt.Fprintf(&b, "rs %s rev=%s hist=%s image=%s replicas=%d\n", rs.Name, rs.Annotations[history.RevisionAnnotation],
			rs.Annotations[history.RevisionHistoryAnnotation], rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
	}
	d := s.deployment(t, name)
	var conds []string
	for _, c := range d.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	sort.Strings(conds)
	fmt.Fprintf(&b, "deployment rev=%s %s", d.Annotations[history.RevisionAnnotation], strings.Join(conds, " "))
	return b.String()
}

const nginxDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
`

// deploymentManifest is nginx-deployment with extra spec fields (indented two spaces).
func deploymentManifest(replicas int, specExtra string) string {
	m := strings.Replace(nginxDeployment, "  replicas: 3\n", fmt.Sprintf("  replicas: %d\n%s", replicas, specExtra), 1)
	return m
}

var deploymentScenarios = []scenario{
	{name: "create update and roll back", run: func(t *testing.T, s *scene) string {
		s.apply(t, nginxDeployment)
		if out := s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s"); !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		rss := s.replicaSets(t)
		hash := rss[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if len(rss) != 1 || rss[0].Name != "nginx-deployment-"+hash {
			t.Fatalf("want one ReplicaSet nginx-deployment-<hash>, got %s", rsSizes(rss))
		}
		pods, _ := s.c.Client.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: labels.Set{appsv1.DefaultDeploymentUniqueLabelKey: hash}.String()})
		if len(pods.Items) != 3 {
			t.Errorf("%d pods carry pod-template-hash=%s, want 3", len(pods.Items), hash)
		}

		w := s.watch(t)
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
		s.kubectl(t, "annotate", "deployment/nginx-deployment", "kubernetes.io/change-cause=image updated to 1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=3")
		events := s.kubectl(t, "get", "events", "--field-selector", "involvedObject.kind=Deployment,reason=ScalingReplicaSet", "--sort-by=.metadata.creationTimestamp", "-o", "custom-columns=M:.message", "--no-headers")
		if n := strings.Count(events, "Scaled "); n < 7 {
			t.Errorf("want the 7 ScalingReplicaSet events of a 3-pod rollout, got %d:\n%s", n, events)
		}

		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.161")
		s.kubectl(t, "annotate", "--overwrite", "deployment/nginx-deployment", "kubernetes.io/change-cause=image updated to 1.161")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=3 nginx:1.161=1")
		s.rsHold(t, 2*time.Second, "nginx:1.14.2=0 nginx:1.16.1=3 nginx:1.161=1") // stuck: stays so
		// As the page shows it: rollout status waits on 1 of 3 new replicas, and the one
		// new pod is stuck in an image pull loop beside 3 running old ones.
		if out, err := s.tryKubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=3s"); err == nil ||
			!strings.Contains(out, `rollout to finish: 1 out of 3 new replicas have been updated...`) {
			t.Errorf("rollout status of the stuck rollout: err %v, output %q; want it waiting on 1 out of 3 new replicas", err, out)
		}
		eventually(t, time.Minute, "3 pods Running and 1 in ImagePullBackOff", func(context.Context) (bool, string) {
			out := s.kubectl(t, "get", "pods", "--no-headers")
			running, backOff := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) < 3:
				case f[1] == "1/1" && f[2] == "Running":
					running++
				case f[1] == "0/1" && f[2] == "ImagePullBackOff":
					backOff++
				}
			}
			return running == 3 && backOff == 1, out
		})
		hist := s.kubectl(t, "rollout", "history", "deployment/nginx-deployment")
		for _, line := range []string{"1         <none>", "2         image updated to 1.16.1", "3         image updated to 1.161"} {
			if !strings.Contains(hist, line) {
				t.Errorf("rollout history lacks %q:\n%s", line, hist)
			}
		}
		s.kubectl(t, "rollout", "undo", "deployment/nginx-deployment")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.161=0 nginx:1.16.1=3")
		s.kubectl(t, "rollout", "undo", "deployment/nginx-deployment", "--to-revision=1")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.161=0 nginx:1.16.1=0 nginx:1.14.2=3")
		s.verify(t, w, 20)
		return s.summary(t, "nginx-deployment")
	}},

	{name: "progress deadline exceeded then fixed", run: func(t *testing.T, s *scene) string {
		s.apply(t, deploymentManifest(3, "  progressDeadlineSeconds: 10\n"))
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.161")
		out, err := s.tryKubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		if err == nil || !strings.Contains(out, "exceeded its progress deadline") {
			t.Errorf("rollout status of a stuck rollout: err %v, output %q; want exit 1 and the progress deadline message", err, out)
		}
		d := s.deployment(t, "nginx-deployment")
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && (c.Status != "False" || c.Reason != "ProgressDeadlineExceeded") {
				t.Errorf("Progressing = %s/%s, want False/ProgressDeadlineExceeded", c.Status, c.Reason)
			}
		}
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		eventually(t, time.Minute, "Progressing NewReplicaSetAvailable", func(context.Context) (bool, string) {
			sum := s.summary(t, "nginx-deployment")
			return strings.Contains(sum, "Progressing=True/NewReplicaSetAvailable"), sum
		})
		return s.summary(t, "nginx-deployment")
	}},

	{name: "proportional scaling of a stuck rollout from 10 to 15 gives 11 old and 7 new", run: func(t *testing.T, s *scene) string {
		s.apply(t, deploymentManifest(10, "  strategy:\n    rollingUpdate:\n      maxSurge: 3\n      maxUnavailable: 2\n"))
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.161")
		s.waitRS(t, "nginx:1.14.2=8 nginx:1.161=5")
		s.kubectl(t, "scale", "deployment/nginx-deployment", "--replicas=15")
		s.waitRS(t, "nginx:1.14.2=11 nginx:1.161=7")
		s.rsHold(t, time.Second, "nginx:1.14.2=11 nginx:1.161=7")
		return s.summary(t, "nginx-deployment")
	}, progressReasonRaces: true},

	{name: "rollover mid-rollout", run: func(t *testing.T, s *scene) string {
		s.apply(t, deploymentManifest(5, ""))
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		w := s.watch(t)
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.161") // never becomes available
		// 5 replicas at 25%/25%: surge 2, unavailable 1 → new 2, old 4, new 3; stuck there.
		s.waitRS(t, "nginx:1.14.2=4 nginx:1.161=3")
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.161=0 nginx:1.16.1=5")
		s.verify(t, w, 10)
		return s.summary(t, "nginx-deployment")
	}},

	{name: "Recreate never runs old and new pods together", run: func(t *testing.T, s *scene) string {
		s.apply(t, deploymentManifest(4, "  strategy:\n    type: Recreate\n"))
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		w := s.watch(t)
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=4")
		s.verify(t, w, 8)
		return s.summary(t, "nginx-deployment")
	}},

	{name: "pause then several changes then resume makes one new ReplicaSet and scaling works paused", run: func(t *testing.T, s *scene) string {
		s.apply(t, nginxDeployment)
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.kubectl(t, "rollout", "pause", "deployment/nginx-deployment")
		s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
		s.kubectl(t, "set", "resources", "deployment/nginx-deployment", "-c=nginx", "--limits=cpu=200m,memory=512Mi")
		s.kubectl(t, "scale", "deployment/nginx-deployment", "--replicas=5")
		s.waitRS(t, "nginx:1.14.2=5")
		s.rsHold(t, time.Second, "nginx:1.14.2=5") // paused: no new ReplicaSet
		s.kubectl(t, "rollout", "resume", "deployment/nginx-deployment")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=5")
		return s.summary(t, "nginx-deployment")
	}},

	{name: "revisionHistoryLimit 2 keeps two old ReplicaSets", run: func(t *testing.T, s *scene) string {
		s.apply(t, deploymentManifest(2, "  revisionHistoryLimit: 2\n"))
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		for _, tag := range []string{"1.15.0", "1.16.0", "1.16.1", "1.17.0"} {
			s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:"+tag)
			s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		}
		s.waitRS(t, "nginx:1.16.0=0 nginx:1.16.1=0 nginx:1.17.0=2")
		return s.summary(t, "nginx-deployment")
	}},

	{name: "rollout restart starts a rollout like any template change", run: func(t *testing.T, s *scene) string {
		s.apply(t, nginxDeployment)
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		w := s.watch(t)
		s.kubectl(t, "rollout", "restart", "deployment/nginx-deployment")
		s.kubectl(t, "rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.14.2=3")
		rss := s.replicaSets(t)
		if _, ok := rss[1].Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; !ok {
			t.Errorf("the new ReplicaSet's template lacks restartedAt: %v", rss[1].Spec.Template.Annotations)
		}
		s.verify(t, w, 10)
		// The restart time is part of the template, so the new ReplicaSet's name differs
		// between runs: compare without names.
		return rsName.ReplaceAllString(s.summary(t, "nginx-deployment"), "rs ")
	}},

	{name: "the deprecated rollbackTo annotation rolls back or says why not", run: func(t *testing.T, s *scene) string {
		const name = "nginx-deployment"
		s.apply(t, nginxDeployment)
		s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=60s")
		s.kubectl(t, "set", "image", "deployment/"+name, "nginx=nginx:1.16.1")
		s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=60s")
		var out []string
		// 1: back to revision 1; 0: the revision before the newest (2); 9: none such;
		// 4: the current template.
		for _, to := range []string{"1", "0", "9", "4"} {
			s.kubectl(t, "annotate", "--overwrite", "deployment/"+name, "deprecated.deployment.rollback.to="+to)
			eventually(t, time.Minute, "the rollback to "+to+" to be taken", func(context.Context) (bool, string) {
				d := s.deployment(t, name)
				_, left := d.Annotations["deprecated.deployment.rollback.to"]
				return !left, fmt.Sprint(d.Annotations)
			})
			s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=60s")
			d := s.deployment(t, name)
			out = append(out, fmt.Sprintf("rollback.to=%s: image %s, revision %s", to, d.Spec.Template.Spec.Containers[0].Image, d.Annotations[history.RevisionAnnotation]))
		}
		events := s.kubectl(t, "get", "events", "--field-selector", "involvedObject.name="+name, "-o", "custom-columns=T:.type,R:.reason,M:.message", "--no-headers")
		var rollbacks []string
		for _, line := range strings.Split(events, "\n") {
			if strings.Contains(line, "Rollback") {
				rollbacks = append(rollbacks, strings.Join(strings.Fields(line), " "))
			}
		}
		sort.Strings(rollbacks)
		return strings.Join(out, "\n") + "\n" + strings.Join(rollbacks, "\n") + "\n" + s.summary(t, name)
	}},

	{name: "a quota that allows 2 pods makes a 3-replica Deployment report ReplicaFailure", run: func(t *testing.T, s *scene) string {
		s.kubectl(t, "create", "quota", "two-pods", "--hard=pods=2")
		eventually(t, time.Minute, "the quota controller to count usage", func(ctx context.Context) (bool, string) {
			q, err := s.c.Client.CoreV1().ResourceQuotas(s.ns).Get(ctx, "two-pods", metav1.GetOptions{})
			return err == nil && q.Status.Hard != nil, fmt.Sprint(err)
		})
		s.apply(t, nginxDeployment)
		eventually(t, time.Minute, "ReplicaFailure on the Deployment", func(context.Context) (bool, string) {
			sum := s.summary(t, "nginx-deployment")
			return strings.Contains(sum, "ReplicaFailure=True/FailedCreate") && strings.Contains(sum, "replicas=3"), sum
		})
		eventually(t, time.Minute, "the ReplicaSet to run the 2 pods the quota allows", func(context.Context) (bool, string) {
			rs := s.replicaSets(t)[0]
			return rs.Status.Replicas == 2, fmt.Sprintf("%d pods", rs.Status.Replicas)
		})
		holdsFor(t, time.Second, 100*time.Millisecond, "the ReplicaSet's 2 pods under a quota of 2", func(context.Context) (bool, string) {
			rs := s.replicaSets(t)[0]
			return rs.Status.Replicas == 2, fmt.Sprintf("%d pods", rs.Status.Replicas)
		})
		events := s.kubectl(t, "get", "events", "--field-selector", "reason=FailedCreate", "-o", "custom-columns=M:.message", "--no-headers")
		if !strings.Contains(events, "exceeded quota") {
			t.Errorf("no FailedCreate event naming the quota:\n%s", events)
		}
		return s.summary(t, "nginx-deployment")
	}},
}

// Given kroll's controllers (and, for comparison, upstream's), when each Deployment
// scenario of the spec is driven with kubectl, then every observed state keeps the
// bounds, and both controllers end with the same revisions, conditions and sizes.
func TestDeploymentScenarios(t *testing.T) {
	t.Parallel()
	runCompared(t, "scenario", deploymentScenarios)
}
