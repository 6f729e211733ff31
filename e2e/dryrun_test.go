package e2e

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// countingProxy is a reverse proxy on 127.0.0.1 in front of the API server that counts
// what reaches it: every request that is not a read (GET) is a write.
type countingProxy struct {
	url string
	// ca is the proxy's serving certificate, PEM: client-go sends a token over TLS only.
	ca     []byte
	mu     sync.Mutex
	reads  int
	writes []string
}

// startCountingProxy proxies to c's API server with the cluster's CA only: the
// client's own Authorization header is what authenticates.
func startCountingProxy(t *testing.T, c *cluster.Cluster) *countingProxy {
	target, err := url.Parse(c.RESTConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(&rest.Config{Host: c.RESTConfig.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: c.RESTConfig.CAData, CAFile: c.RESTConfig.CAFile, ServerName: c.RESTConfig.ServerName}})
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = tr, -1 // watches stream
	p := &countingProxy{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			p.reads++
		} else {
			p.writes = append(p.writes, r.Method+" "+r.URL.Path)
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	p.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return p
}

func (p *countingProxy) counts() (reads int, writes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads, append([]string(nil), p.writes...)
}

// tokenKubeconfig writes a kubeconfig for server (whose CA is ca, PEM) authenticating
// with token.
func tokenKubeconfig(t *testing.T, server string, ca []byte, token string) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// managerRun is the outcome of a `kroll controller-manager` run to its end.
type managerRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func runManagerToEnd(t *testing.T, bin, kubeconfig string, args ...string) managerRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"controller-manager", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := managerRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if err != nil && r.code <= 0 {
		t.Fatalf("kroll controller-manager %v: %v\n%s", args, err, r.stderr)
	}
	return r
}

// readOnlyRules grant get, list and watch on what a dry run reads, and nothing else.
var readOnlyRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions"},
		Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "replicationcontrollers", "persistentvolumeclaims"},
		Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
}

// readOnlyToken binds rules to a new service account of kube-system and returns its token.
func readOnlyToken(t *testing.T, c *cluster.Cluster, name string, rules []rbacv1.PolicyRule) string {
	ctx := context.Background()
	must(c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}))
	must(c.Client.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))
	must(c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "kube-system"}},
	}, metav1.CreateOptions{}))
	return serviceAccountConfig(t, c, "kube-system", name).BearerToken
}

// Given workloads of every kind that kroll's controllers made and completed, and then
// stopped (no controller runs), when `kroll controller-manager --dry-run` runs through
// a counting proxy as a service account that may only read, then it prints no write
// and exits 0; when a bare ReplicaSet's pod is deleted while no controller runs, it
// prints the pod kroll would create and exits 1; and in neither case did a request
// other than a read reach the API server. Bad input: no cluster, a resource it may not
// list, and a kube-controller-manager that leads and runs its workload controllers
// each give one line and exit 1 before any controller starts.
func TestControllerManagerDryRun(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(2))
	s := newScene(t, c, "dryrun", cluster.WorkloadControllersKroll)
	stop := runManager(t, c.RESTConfig, manager.Options{})
	s.apply(t, appManifest("Deployment", "front", 2))
	s.apply(t, appManifest("ReplicaSet", "solo", 1))
	s.apply(t, statefulSetManifest(2, ""))
	s.apply(t, logDaemonSet)
	for _, w := range []string{"deployment/front", "statefulset/web", "daemonset/logs"} {
		s.kubectl(t, "rollout", "status", w, "--timeout=2m")
	}
	eventually(t, time.Minute, "solo's pod ready and counted", func(ctx context.Context) (bool, string) {
		rs := must(c.Client.AppsV1().ReplicaSets("dryrun").Get(ctx, "solo", metav1.GetOptions{}))
		return rs.Status.ReadyReplicas == 1 && rs.Status.ObservedGeneration == rs.Generation, fmt.Sprintf("%+v", rs.Status)
	})
	stop()
	// kroll up's cluster runs kube-controller-manager with its workload controllers off,
	// leading by its Lease as on a real control plane: no reason to refuse.
	waitKCMLease(t, c)

	proxy := startCountingProxy(t, c)
	readOnly := tokenKubeconfig(t, proxy.url, proxy.ca, readOnlyToken(t, c, "kroll-dryrun", readOnlyRules))
	dryRun := func(t *testing.T, kubeconfig string) managerRun {
		r := runManagerToEnd(t, bin, kubeconfig, "--dry-run", "--dry-run-timeout=40s")
		reads, writes := proxy.counts()
		t.Logf("exit %d after %.1fs; %d reads reached the API server\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Seconds(), reads, r.stdout, r.stderr)
		if len(writes) > 0 {
			t.Errorf("%d requests other than reads reached the API server: %v", len(writes), writes)
		}
		if reads == 0 {
			t.Error("no request reached the proxy: the dry run did not read through it")
		}
		checkEveryWriteChanges(t, "with the read-only role", parseDryRunReport(r.stdout))
		return r
	}

	t.Run("complete workloads: nothing to write, exit 0", func(t *testing.T) {
		r := dryRun(t, readOnly)
		if r.code != 0 || !strings.Contains(r.stdout, "dry run: no writes beyond in-flight rollouts' next steps") {
			t.Errorf("exit %d, want 0 with the no-writes summary", r.code)
		}
		for _, w := range []string{"Deployment dryrun/front", "ReplicaSet dryrun/solo", "StatefulSet dryrun/web", "DaemonSet dryrun/logs"} {
			if strings.Contains(r.stdout, w) {
				t.Errorf("the report lists %s, which is complete", w)
			}
		}
	})

	t.Run("a ReplicaSet short of a pod: the create, exit 1", func(t *testing.T) {
		pod := s.pods(t, "app=solo")[0].Name
		s.kubectl(t, "delete", "pod", pod, "--wait=true")
		r := dryRun(t, readOnly)
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
		if !strings.Contains(r.stdout, "ReplicaSet dryrun/solo\n") || !strings.Contains(r.stdout, "create Pod dryrun/solo-…: new Pod solo-… for ReplicaSet dryrun/solo") {
			t.Errorf("the report does not show the pod kroll would create for solo")
		}

		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 ||
			!strings.HasPrefix(lines[0], "kroll: dry run: kroll would make") || !strings.Contains(lines[0], "ReplicaSet dryrun/solo") {
			t.Errorf("stderr is not the one summary line naming solo: %q", r.stderr)
		}
		if got := len(s.pods(t, "app=solo")); got != 0 {
			t.Errorf("solo has %d pods after the dry run, want 0", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String()
		l.Close()
		noNodes := []rbacv1.PolicyRule{readOnlyRules[0], {APIGroups: []string{""}, Resources: []string{"pods", "replicationcontrollers", "persistentvolumeclaims"},
			Verbs: []string{"get", "list", "watch"}}}
		upstreamPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager-cp", Labels: map[string]string{"component": "kube-controller-manager"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-controller-manager", Image: "registry.k8s.io/kube-controller-manager:v1.36.3",
				Command: []string{"kube-controller-manager", "--controllers=*,bootstrapsigner,tokencleaner", "--leader-elect=true"}}}}}
		cases := []struct {
			name, kubeconfig string
			args             []string
			setup            func()
			want             string
		}{
			{"no cluster", tokenKubeconfig(t, closed, nil, "x"), []string{"--dry-run"}, nil, "kroll: cannot reach the API server " + closed},
			{"no permission to list nodes", tokenKubeconfig(t, proxy.url, proxy.ca, readOnlyToken(t, c, "kroll-no-nodes", noNodes)), []string{"--dry-run"}, nil,
				"kroll: no permission to list nodes in all namespaces"},
			{"kube-controller-manager leads with its workload controllers on", readOnly, nil, func() {
				must(c.Client.CoreV1().Pods("kube-system").Create(context.Background(), upstreamPod, metav1.CreateOptions{}))
			}, "kroll: kube-controller-manager still runs its workload controllers: Lease kube-system/kube-controller-manager held by "},
			// No pod to see (a managed control plane): its recent writes give it away.
			// The embedded kube-controller-manager runs no workload controller here, so
			// the test writes a Deployment's status as kube-controller-manager does.
			{"kube-controller-manager leads and just wrote a Deployment's status", readOnly, nil, func() {
				ctx := context.Background()
				if err := c.Client.CoreV1().Pods("kube-system").Delete(ctx, upstreamPod.Name, *metav1.NewDeleteOptions(0)); err != nil {
					t.Fatal(err)
				}
				d := must(c.Client.AppsV1().Deployments("dryrun").Get(ctx, "front", metav1.GetOptions{}))
				for i := range d.Status.Conditions {
					d.Status.Conditions[i].Message += " (upstream)"
				}
				must(c.Client.AppsV1().Deployments("dryrun").UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}))
			}, " and it wrote Deployment dryrun/front at "},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if tc.setup != nil {
					tc.setup()
				}
				_, before := proxy.counts()
				r := runManagerToEnd(t, bin, tc.kubeconfig, tc.args...)
				_, after := proxy.counts()
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || r.stdout != "" {
					t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and one line containing %q", r.code, r.stdout, r.stderr, tc.want)
				}
				if len(after) != len(before) {
					t.Errorf("requests other than reads reached the API server: %v", after[len(before):])
				}
			})
		}
		// A dry run is not refused: it is the check made before switching upstream's
		// controllers off. Its report's first line says they run; it still finds solo's pod.
		r0 := runManagerToEnd(t, bin, readOnly, "--dry-run", "--dry-run-timeout=40s")
		if first, _, _ := strings.Cut(r0.stdout, "\n"); r0.code != 1 ||
			!strings.HasPrefix(first, "dry run: kube-controller-manager still runs its workload controllers (Lease kube-system/kube-controller-manager held by ") ||
			!strings.Contains(r0.stdout, "ReplicaSet dryrun/solo") {
			t.Errorf("dry run beside kube-controller-manager: exit %d, stdout:\n%s\nstderr:\n%s\nwant its note first, solo's pod, exit 1", r0.code, r0.stdout, r0.stderr)
		}
		// With --force it starts: the dry run runs (and still finds solo's pod).
		r := runManagerToEnd(t, bin, readOnly, "--dry-run", "--force", "--dry-run-timeout=40s")
		if r.code != 1 || !strings.Contains(r.stdout, "ReplicaSet dryrun/solo") {
			t.Errorf("--force: exit %d, stdout:\n%s\nstderr:\n%s\nwant the dry run's report and exit 1", r.code, r.stdout, r.stderr)
		}
	})

	// A ReplicaSet held at 1 of 2 pods by a quota has its counts right already; its
	// ReplicaFailure condition is taken off (as after a controller restart that has not
	// tried a create yet). The dry run's controller tries the create again, is refused
	// by the dry run, and writes the status with the dry run's own refusal as the
	// condition: a write that changes nothing, left out of the list and counted.
	t.Run("a status write that would change nothing is left out", func(t *testing.T) {
		q := newScene(t, c, "dryrun-quota", cluster.WorkloadControllersKroll)
		q.apply(t, "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\nspec:\n  hard:\n    pods: \"1\"\n")
		stop := runManager(t, c.RESTConfig, manager.Options{})
		q.apply(t, appManifest("ReplicaSet", "capped", 2))
		eventually(t, time.Minute, "capped at 1 ready pod, the quota's refusal in its status", func(ctx context.Context) (bool, string) {
			rs := must(c.Client.AppsV1().ReplicaSets("dryrun-quota").Get(ctx, "capped", metav1.GetOptions{}))
			failure := false
			for _, cond := range rs.Status.Conditions {
				failure = failure || cond.Type == appsv1.ReplicaSetReplicaFailure
			}
			return rs.Status.ReadyReplicas == 1 && rs.Status.AvailableReplicas == 1 && failure && rs.Status.ObservedGeneration == rs.Generation, fmt.Sprintf("%+v", rs.Status)
		})
		stop()
		rs := must(c.Client.AppsV1().ReplicaSets("dryrun-quota").Get(context.Background(), "capped", metav1.GetOptions{}))
		rs.Status.Conditions = nil
		must(c.Client.AppsV1().ReplicaSets("dryrun-quota").UpdateStatus(context.Background(), rs, metav1.UpdateOptions{}))
		r := dryRun(t, readOnly)
		if !strings.Contains(r.stdout, "create Pod dryrun-quota/capped-…: new Pod capped-… for ReplicaSet dryrun-quota/capped") {
			t.Errorf("the report does not show the pod kroll would try to create for capped")
		}
		if !strings.Contains(r.stdout, " writes left out that would change nothing)") {
			t.Errorf("the report counts no write left out for changing nothing")
		}
	})
}

// waitKCMLease waits until the cluster's kube-controller-manager holds its Lease
// (kube-system/kube-controller-manager), as a real control plane's leader does.
func waitKCMLease(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	eventually(t, 30*time.Second, "kube-controller-manager holds its Lease", func(ctx context.Context) (bool, string) {
		l, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", fmt.Sprintf("%+v", l.Spec)
	})
}

// Given `kroll up --workload-controllers upstream` (upstream's controllers run, and its
// kube-controller-manager leads by its Lease as on a real control plane), when a
// Deployment has just been rolled out by upstream's controllers, then `kroll
// controller-manager` refuses to start, naming the Lease and the write, in one line;
// with --force it starts (shown with --dry-run, which ends by itself).
func TestControllerManagerRefusesUpstream(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersUpstream), clustertest.WithNodes(1))
	s := newScene(t, c, "upstream", cluster.WorkloadControllersUpstream)
	waitKCMLease(t, c)
	s.apply(t, appManifest("Deployment", "front", 1))
	s.kubectl(t, "rollout", "status", "deployment/front", "--timeout=2m")
	r := runManagerToEnd(t, bin, c.KubeconfigPath, "--secure-port=0")
	want := "kroll: kube-controller-manager still runs its workload controllers: Lease kube-system/kube-controller-manager held by "
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "it wrote ") ||
		!strings.Contains(lines[0], "--controllers=*,-deployment-controller") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and one line: %s … it wrote … --controllers=*,-deployment-controller…", r.code, r.stderr, want)
	}
	if r := runManagerToEnd(t, bin, c.KubeconfigPath, "--force", "--dry-run", "--dry-run-timeout=20s"); strings.Contains(r.stderr, "still runs its workload controllers") {
		t.Errorf("--force: still refused: %s", r.stderr)
	}
}
