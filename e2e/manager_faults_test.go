package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// managerProcess is a `kroll controller-manager` child process.
type managerProcess struct {
	cmd  *exec.Cmd
	addr chan string // the /metrics address, once logged
	done chan struct{}
	mu   sync.Mutex
	log  strings.Builder
	// client reads its endpoints as the cluster's admin (a client certificate of the
	// cluster's CA, in system:masters: always allowed).
	client *http.Client
}

var servingAddress = regexp.MustCompile(`"Serving /healthz, /readyz and /metrics" address="([^"]+)"`)

// startManager starts `kroll controller-manager` against c with args, serving its
// endpoints on a free port of 127.0.0.1; it is killed when the test ends.
func startManager(t *testing.T, bin string, c *cluster.Cluster, args ...string) *managerProcess {
	t.Helper()
	port := must(cluster.FreePort())
	m := &managerProcess{addr: make(chan string, 1), done: make(chan struct{}), client: endpointsClient(t, c.RESTConfig)}
	m.cmd = exec.Command(bin, append([]string{"controller-manager", "--kubeconfig", c.KubeconfigPath,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port)}, args...)...)
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stderr)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			m.mu.Lock()
			m.log.WriteString(s.Text() + "\n")
			m.mu.Unlock()
			if match := servingAddress.FindStringSubmatch(s.Text()); match != nil {
				m.addr <- match[1]
			}
		}
		_ = m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			m.mu.Lock()
			t.Logf("controller-manager pid %d log (last 1500 bytes):\n%s", m.cmd.Process.Pid, tail(m.log.String(), 1500))
			m.mu.Unlock()
		}
	})
	return m
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill sends SIGKILL and waits for the process to be gone.
func (m *managerProcess) kill() {
	_ = m.cmd.Process.Kill()
	<-m.done
}

// scrape reads m's /metrics and returns the sample named by series (name{labels}
// exactly as exposed), or -1 when absent or unreachable.
func (m *managerProcess) scrape(t *testing.T, series string) float64 {
	code, body := httpGet(m.client, "https://"+m.address(t)+"/metrics")
	if code != http.StatusOK {
		return -1
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

func (m *managerProcess) address(t *testing.T) string {
	t.Helper()
	select {
	case a := <-m.addr:
		m.addr <- a
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("controller-manager did not start serving")
		return ""
	}
}

// slowPods is a Deployment manifest whose pods take startup to become ready, so that a
// rollout lasts long enough to be interrupted.
func slowPods(name string, replicas int, startup time.Duration) string {
	return appManifest("Deployment", name, replicas, fmt.Sprintf("%s: %s", kubelet.AnnotationStartupDelay, startup))
}

// setImage changes namespace/name's container image.
func setImage(t *testing.T, c *cluster.Cluster, namespace, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image)
	if _, err := c.Client.AppsV1().Deployments(namespace).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectExactRollout checks, once namespace/name is rolled out to image, that the new
// ReplicaSet's pods were created exactly replicas times (counted from the API side) and
// none of them deleted as surplus, and that exactly replicas pods run.
func expectExactRollout(t *testing.T, c *cluster.Cluster, ledger *podLedger, namespace, name string, replicas int32, image string) {
	t.Helper()
	d := waitDeploymentAvailable(t, c, namespace, name, replicas, image, 5*time.Minute)
	newHash := newReplicaSetHash(t, c, d, image)
	eventually(t, 2*time.Minute, fmt.Sprintf("exactly %d pods of %s, all on %s", replicas, name, image), func(ctx context.Context) (bool, string) {
		pods := must(c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name}))
		n, other := 0, 0
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image == image && p.DeletionTimestamp == nil {
				n++
			} else {
				other++
			}
		}
		return n == int(replicas) && other == 0, fmt.Sprintf("%d on %s, %d others", n, image, other)
	})
	ledger.expectCreatedOnce(t, newHash, replicas)
}

// Given two `kroll controller-manager` processes with upstream's lease timings, when
// the leader is killed with SIGKILL in the middle of a rollout, then the other leads
// within the lease duration (15s) and the retry periods it looks at the lease in, the
// rollout finishes, every
// observed state keeps the bounds, and no pod is created twice. The leader's /metrics
// show the rollout in progress while it runs.
func TestControllerManagerFailover(t *testing.T) {
	t.Parallel()
	const replicas = 60
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(4))
	a, b := startManager(t, bin, c), startManager(t, bin, c)
	mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "d.yaml", slowPods("web", replicas, 2*time.Second)))
	waitDeploymentAvailable(t, c, "default", "web", replicas, "nginx:1.14.2", 5*time.Minute)

	leaderOf := func() (leader, standby *managerProcess) {
		for _, m := range []*managerProcess{a, b} {
			if m.scrape(t, `leader_election_master_status{name="kroll-controller-manager"}`) == 1 {
				leader = m
			} else {
				standby = m
			}
		}
		return leader, standby
	}
	leader, standby := leaderOf()
	if leader == nil || standby == nil {
		t.Fatal("want one leader and one standby among the two managers")
	}
	ledger := watchPods(t, c, "default")
	w := clustertest.WatchDeployment(t, c.Client, "default", "web")
	setImage(t, c, "default", "web", "nginx:1.16.1")
	eventually(t, 30*time.Second, "the leader's /metrics to show the rollout in progress", func(context.Context) (bool, string) {
		v := leader.scrape(t, `kroll_rollouts_in_progress{kind="deployment"}`)
		return v == 1, fmt.Sprint(v)
	})
	time.Sleep(time.Second)
	lease := func() *coordinationv1.Lease {
		return must(c.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kroll-controller-manager", metav1.GetOptions{}))
	}
	before := lease()
	killed := time.Now()
	leader.kill()
	// Nothing scales the ReplicaSets until the standby leads: the state now is where
	// the kill landed, and it must be mid-rollout for the failover to prove anything.
	mid, state := midRollout(listReplicaSets(t, c, "default"), "nginx:1.16.1", replicas)
	t.Logf("leader (pid %d) killed at %s", leader.cmd.Process.Pid, state)
	if !mid {
		t.Errorf("the leader was killed after the rollout had finished (%s): the failover proves nothing", state)
	}
	eventually(t, 30*time.Second, "the standby to lead", func(context.Context) (bool, string) {
		v := standby.scrape(t, `leader_election_master_status{name="kroll-controller-manager"}`)
		return v == 1, fmt.Sprint(v)
	})
	failover := time.Since(killed)
	after := lease()
	t.Logf("failover: the standby led %.1fs after the leader was killed; it acquired the lease %.1fs after the last renewal (lease duration 15s)",
		failover.Seconds(), after.Spec.AcquireTime.Sub(before.Spec.RenewTime.Time).Seconds())
	if *after.Spec.HolderIdentity == *before.Spec.HolderIdentity || *after.Spec.LeaseTransitions != *before.Spec.LeaseTransitions+1 {
		t.Errorf("lease after failover: holder %s (before %s), transitions %d (before %d)", *after.Spec.HolderIdentity,
			*before.Spec.HolderIdentity, *after.Spec.LeaseTransitions, *before.Spec.LeaseTransitions)
	}
	// client-go's standby times the lease from when it saw the last renewal, and looks
	// at it every retry period jittered by up to 1.2× (2s to 4.4s): it takes over at
	// most 15s + 2 × 4.4s after the last renewal, which came before the kill. A second on
	// top for this test's polling.
	if limit := 15*time.Second + 2*4400*time.Millisecond + time.Second; failover > limit {
		t.Errorf("failover took %v, want within the lease duration (15s) plus two jittered retry periods (%v with this test's polling)", failover, limit)
	}
	expectExactRollout(t, c, ledger, "default", "web", replicas, "nginx:1.16.1")
	w.Verify(t, 50)
	eventually(t, 30*time.Second, "the new leader's /metrics to show no rollout in progress", func(context.Context) (bool, string) {
		v := standby.scrape(t, `kroll_rollouts_in_progress{kind="deployment"}`)
		return v == 0, fmt.Sprint(v)
	})
	for _, series := range []string{
		`kroll_api_requests_total{client="replicaset-controller",code="201",group="",resource="pods",subresource="",verb="create"}`,
		`kroll_sync_duration_seconds_count{controller="deployment-controller",result="success"}`,
		`workqueue_adds_total{name="deployment"}`,
	} {
		if v := standby.scrape(t, series); v <= 0 {
			t.Errorf("/metrics of the new leader: %s = %v, want > 0", series, v)
		}
	}

	// A graceful stop hands over at once: a third manager stands by (ready, healthy);
	// SIGTERM to the leader stops its controllers, releases the lease and exits 0, and
	// the third leads within two retry periods, not a lease duration.
	third := startManager(t, bin, c)
	for _, probe := range []string{"/healthz", "/readyz"} {
		eventually(t, 30*time.Second, "the standby's "+probe, func(context.Context) (bool, string) {
			code, body := httpGet(endpointsClient(t, rest.AnonymousClientConfig(c.RESTConfig)), "https://"+third.address(t)+probe)
			return code == http.StatusOK, fmt.Sprint(code, " ", body)
		})
	}
	stopped := time.Now()
	if err := standby.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the third manager to lead", func(context.Context) (bool, string) {
		v := third.scrape(t, `leader_election_master_status{name="kroll-controller-manager"}`)
		return v == 1, fmt.Sprint(v)
	})
	t.Logf("hand-over on SIGTERM: the third manager led %.1fs after the signal", time.Since(stopped).Seconds())
	// Profiles are served only with --profiling, even to the cluster's admin (whose
	// client certificate the scrapes above show accepted).
	if code, body := httpGet(third.client, "https://"+third.address(t)+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ without --profiling: %d %s, want 404", code, tail(body, 200))
	}
	<-standby.done
	if code := standby.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the manager stopped by SIGTERM exited %d, want 0", code)
	}
}

// httpGet returns the status code and body of url (0 when it cannot be reached).
func httpGet(client *http.Client, url string) (int, string) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// Given a 500-replica Deployment rolling out, when its only controller manager is
// killed with SIGKILL and started again 20 times at random moments, then the rollout
// finishes with exactly 500 pods of the new template, each created once, and every
// observed state keeps the bounds. Then, when 10% of the manager's writes fail with 500,
// 409 or 429, a second rollout finishes the same way.
func TestControllerManagerChaos(t *testing.T) {
	t.Parallel()
	const replicas = 500
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(8))
	// Without leader election: a restarted process has a new identity and would wait out
	// its killed predecessor's lease each time; the crash, not the hand-over, is tested.
	args := []string{"--leader-elect=false", "--kube-api-qps=100", "--kube-api-burst=200"}
	m := startManager(t, bin, c, args...)
	mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "d.yaml", slowPods("big", replicas, 2*time.Second)))
	waitDeploymentAvailable(t, c, "default", "big", replicas, "nginx:1.14.2", 5*time.Minute)

	t.Run("20 kills", func(t *testing.T) {
		ledger := watchPods(t, c, "default")
		w := clustertest.WatchDeployment(t, c.Client, "default", "big")
		setImage(t, c, "default", "big", "nginx:1.16.1")
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
		midKills := 0
		for i := 0; i < 20; i++ {
			time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
			d := must(c.Client.AppsV1().Deployments("default").Get(context.Background(), "big", metav1.GetOptions{}))
			// Not yet observed, the new template's rollout is in flight all the same (a
			// status written for the old one still says 500 updated and available).
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedReplicas < replicas || st.AvailableReplicas < replicas || st.Replicas > replicas {
				midKills++
			}
			m.kill()
			m = startManager(t, bin, c, args...)
		}
		t.Logf("20 kills, %d of them mid-rollout", midKills)
		if midKills < 10 {
			t.Errorf("only %d of the 20 kills came mid-rollout", midKills)
		}
		expectExactRollout(t, c, ledger, "default", "big", replicas, "nginx:1.16.1")
		w.Verify(t, 100)
	})
	m.kill()

	t.Run("10% of writes fail", func(t *testing.T) {
		faults := &writeFaults{rate: 0.1, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))}
		cfg := *c.RESTConfig
		cfg.Wrap(faults.wrap)
		runManager(t, &cfg, manager.Options{QPS: 100, Burst: 200})
		ledger := watchPods(t, c, "default")
		w := clustertest.WatchDeployment(t, c.Client, "default", "big")
		setImage(t, c, "default", "big", "nginx:1.17.0")
		expectExactRollout(t, c, ledger, "default", "big", replicas, "nginx:1.17.0")
		w.Verify(t, 100)
		t.Logf("writes failed: %d of %d (500: %d, 409: %d, 429: %d)", faults.failed.Load(), faults.writes.Load(),
			faults.byCode[0].Load(), faults.byCode[1].Load(), faults.byCode[2].Load())
		if faults.failed.Load() < 20 {
			t.Errorf("only %d writes failed; the test did not test much", faults.failed.Load())
		}
	})
}

// writeFaults fails a share of the writes (create, update, patch, delete) passing
// through it, without sending them, with 500, 409 or 429 in turn: the answers an API
// server gives when etcd hiccups, when an object changed meanwhile, and when it sheds
// load (no Retry-After, so client-go hands the error to the controller).
type writeFaults struct {
	rate   float64
	mu     sync.Mutex
	rng    *rand.Rand
	writes atomic.Int64
	failed atomic.Int64
	byCode [3]atomic.Int64
}

func (f *writeFaults) wrap(next http.RoundTripper) http.RoundTripper {
	codes := []struct {
		code   int
		reason metav1.StatusReason
	}{{500, metav1.StatusReasonInternalError}, {409, metav1.StatusReasonConflict}, {429, metav1.StatusReasonTooManyRequests}}
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			return next.RoundTrip(req)
		}
		f.writes.Add(1)
		f.mu.Lock()
		fail, pick := f.rng.Float64() < f.rate, f.rng.IntN(len(codes))
		f.mu.Unlock()
		if !fail {
			return next.RoundTrip(req)
		}
		f.failed.Add(1)
		f.byCode[pick].Add(1)
		c := codes[pick]
		body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected fault","reason":%q,"code":%d}`, c.reason, c.code)
		return &http.Response{StatusCode: c.code, Status: fmt.Sprintf("%d %s", c.code, http.StatusText(c.code)),
			Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			Request: req, ContentLength: int64(len(body))}, nil
	})
}

// Given a 20-replica Deployment rolling out under `kroll controller-manager`, when it
// is scaled, given another image, or paused while the rollout runs, then it converges to
// what the Deployment documentation says, and every observed state keeps the bounds:
// scaled to 30, all 30 pods on the new template; a second image mid-rollout rolls over
// to it (revision 3, the middle ReplicaSet scaled to 0); paused, no ReplicaSet changes
// size until it is resumed, and then the rollout finishes.
func TestControllerManagerConcurrentEdits(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(4))
	startManager(t, bin, c)
	start := func(t *testing.T, s *scene) *clustertest.DeploymentWatcher {
		s.apply(t, slowPods("web", 20, time.Second))
		waitDeploymentAvailable(t, c, s.ns, "web", 20, "nginx:1.14.2", 5*time.Minute)
		w := clustertest.WatchDeployment(t, c.Client, s.ns, "web")
		setImage(t, c, s.ns, "web", "nginx:1.16.1")
		eventually(t, 30*time.Second, "the rollout under way", func(ctx context.Context) (bool, string) {
			d := must(c.Client.AppsV1().Deployments(s.ns).Get(ctx, "web", metav1.GetOptions{}))
			return d.Status.UpdatedReplicas > 0 && d.Status.UpdatedReplicas < 20, fmt.Sprintf("%+v", d.Status)
		})
		return w
	}
	t.Run("scale while rolling", func(t *testing.T) {
		s := newScene(t, c, "scale", cluster.WorkloadControllersKroll)
		w := start(t, s)
		s.kubectl(t, "scale", "deployment/web", "--replicas=30")
		waitDeploymentAvailable(t, c, s.ns, "web", 30, "nginx:1.16.1", 5*time.Minute)
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=30")
		w.Verify(t, 20)
	})
	t.Run("set image while rolling", func(t *testing.T) {
		s := newScene(t, c, "rollover", cluster.WorkloadControllersKroll)
		w := start(t, s)
		setImage(t, c, s.ns, "web", "nginx:1.17.0")
		d := waitDeploymentAvailable(t, c, s.ns, "web", 20, "nginx:1.17.0", 5*time.Minute)
		s.waitRS(t, "nginx:1.14.2=0 nginx:1.16.1=0 nginx:1.17.0=20")
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; rev != "3" {
			t.Errorf("revision %s after two template changes, want 3", rev)
		}
		w.Verify(t, 20)
	})
	t.Run("pause while rolling", func(t *testing.T) {
		s := newScene(t, c, "pause", cluster.WorkloadControllersKroll)
		w := start(t, s)
		s.kubectl(t, "rollout", "pause", "deployment/web")
		// What was under way may finish (pods already created become ready); then
		// nothing moves.
		time.Sleep(3 * time.Second) // a pass under way when the pause was written ends
		s.rsHold(t, 3*time.Second, rsSizes(s.replicaSets(t)))
		if cond := s.deployment(t, "web").Status.Conditions; !strings.Contains(fmt.Sprint(cond), "DeploymentPaused") {
			t.Errorf("conditions while paused: %v, want Progressing with reason DeploymentPaused", cond)
		}
		s.kubectl(t, "rollout", "resume", "deployment/web")
		waitDeploymentAvailable(t, c, s.ns, "web", 20, "nginx:1.16.1", 5*time.Minute)
		w.Verify(t, 20)
	})
}
