package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/manager"
	"github.com/kroll-dev/kroll/pkg/metrics"
)

// permission is one thing RBAC grants: a verb on a group's resource[/subresource].
type permission struct{ verb, group, resource string }

func (p permission) String() string { return fmt.Sprintf("%s %s/%s", p.verb, p.group, p.resource) }

// requestRecorder records, on the client side, every request a manager makes: the
// permission it needs and the status codes it got, and the messages of refusals.
type requestRecorder struct {
	mu        sync.Mutex
	codes     map[permission]map[int]int
	forbidden []string
}

func newRequestRecorder(t *testing.T) *requestRecorder {
	r := &requestRecorder{codes: map[permission]map[int]int{}}
	t.Cleanup(func() {
		if t.Failed() {
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Logf("requests refused: %d\n%s", len(r.forbidden), strings.Join(r.forbidden, "\n"))
		}
	})
	return r
}

func (r *requestRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		info := metrics.RequestOf(req.Method, req.URL)
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		p := permission{info.Verb, info.Group, info.Resource}
		if info.Subresource != "" {
			p.resource += "/" + info.Subresource
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.codes[p] == nil {
			r.codes[p] = map[int]int{}
		}
		r.codes[p][resp.StatusCode]++
		if resp.StatusCode == http.StatusForbidden {
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			r.forbidden = append(r.forbidden, p.String()+": "+string(body))
		}
		return resp, nil
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// used returns the permissions exercised with success (2xx) at least once.
func (r *requestRecorder) used() map[permission]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[permission]bool{}
	for p, codes := range r.codes {
		for code := range codes {
			if code/100 == 2 {
				out[p] = true
			}
		}
	}
	return out
}

// granted expands rules to the permissions they grant (no wildcards expected).
func granted(t *testing.T, rules []rbacv1.PolicyRule) map[permission]bool {
	out := map[permission]bool{}
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Fatalf("deploy/rbac.yaml grants a wildcard (%s %s/%s): not least privilege", v, g, res)
					}
					out[permission{v, g, res}] = true
				}
			}
		}
	}
	return out
}

// serviceAccountConfig is a client configuration that authenticates as the service
// account namespace/name with a token from the TokenRequest API, as a pod would.
func serviceAccountConfig(t *testing.T, c *cluster.Cluster, namespace, name string) *rest.Config {
	t.Helper()
	hour := int64(3600)
	tok, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(c.RESTConfig)
	cfg.BearerToken = tok.Status.Token
	return cfg
}

// runManager runs kroll's manager in this process with opts until the returned stop.
func runManager(t *testing.T, cfg *rest.Config, opts manager.Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := manager.Run(ctx, cfg, opts); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// Given the embedded cluster with RBAC and the OwnerReferencesPermissionEnforcement
// admission plugin (so that blockOwnerDeletion needs finalizers permission, as on
// clusters that enable it), and kroll's manager running as the service account of
// deploy/rbac.yaml, when a rollout of every kind runs through every write the
// controllers make (create, scale, in-place update, rolling update, history limits,
// rollback, adoption of orphans, identity repair, claim retention, aggregated events),
// then nothing is refused, and every permission the role grants was used: the role is
// minimal, for removing any permission would refuse a request that was made. The
// finalizers permissions are checked the other way: a role without them has each
// kind's child creation refused.
func TestControllerManagerLeastPrivilege(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3),
		clustertest.WithAPIServerArgs("--enable-admission-plugins=OwnerReferencesPermissionEnforcement"))
	mustKubectl(t, c.KubeconfigPath, "apply", "-f", "../deploy/namespace.yaml", "-f", "../deploy/rbac.yaml")
	for _, manifest := range []string{"deployment.yaml", "pdb.yaml", "bootstrap-pod.yaml"} {
		if out := mustKubectl(t, c.KubeconfigPath, "apply", "--dry-run=server", "-f", "../deploy/"+manifest); !strings.Contains(out, "created (server dry run)") {
			t.Fatalf("deploy/%s does not validate: %s", manifest, out)
		}
	}
	role := must(c.Client.RbacV1().ClusterRoles().Get(context.Background(), "kroll-controller-manager", metav1.GetOptions{}))
	leaseRole := must(c.Client.RbacV1().Roles("kroll-system").Get(context.Background(), "kroll-controller-manager-leader-election", metav1.GetOptions{}))
	// The cluster's own Role for reading its client CA, which rbac.yaml binds in kube-system.
	binding := must(c.Client.RbacV1().RoleBindings("kube-system").Get(context.Background(), "kroll-controller-manager-authentication-reader", metav1.GetOptions{}))
	caRole := must(c.Client.RbacV1().Roles("kube-system").Get(context.Background(), binding.RoleRef.Name, metav1.GetOptions{}))
	want := granted(t, slices.Concat(role.Rules, leaseRole.Rules, caRole.Rules))
	// Two kinds of permission are checked by admission, not used by a request of their
	// own: update on an owner's finalizers (to set blockOwnerDeletion on its children),
	// and delete on an object whose owner references are changed (a StatefulSet's
	// claims, by its retention policy).
	admissionOnly := map[permission]bool{{"delete", "", "persistentvolumeclaims"}: true}
	for p := range want {
		if strings.HasSuffix(p.resource, "/finalizers") {
			admissionOnly[p] = true
		}
	}
	for p := range admissionOnly {
		if !want[p] {
			t.Fatalf("deploy/rbac.yaml does not grant %s", p)
		}
	}

	rec := newRequestRecorder(t)
	cfg := serviceAccountConfig(t, c, "kroll-system", "kroll-controller-manager")
	cfg.Wrap(rec.wrap)
	// It serves its endpoints as deploy/deployment.yaml has it, with profiling; their
	// TokenReviews and SubjectAccessReviews go through the same service account.
	serving, addr := secureServing(t, writeKubeconfig(t, cfg), rec.wrap)
	serving.Profiling = true
	stop := runManager(t, cfg, manager.Options{LeaderElection: manager.LeaderElection{Enabled: true, Namespace: "kroll-system",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}, Serving: serving})
	t.Run("secure endpoints", func(t *testing.T) { checkSecureEndpoints(t, c, addr) })
	s := newScene(t, c, "rbac", cluster.WorkloadControllersKroll)
	exerciseEveryWrite(t, s)
	stop()

	rec.mu.Lock()
	if len(rec.forbidden) > 0 {
		t.Errorf("the role refused %d requests:\n%s", len(rec.forbidden), strings.Join(rec.forbidden, "\n"))
	}
	rec.mu.Unlock()
	used := rec.used()
	// Informers stream their initial list over a watch (WatchList) where the API server
	// serves it, as this one does, and fall back to a list where it does not: each
	// watched resource needs list too, for the clusters kroll is deployed on.
	for p := range used {
		if p.verb == "watch" {
			used[permission{"list", p.group, p.resource}] = true
		}
	}
	var unused, missing []string
	for p := range want {
		if !used[p] && !admissionOnly[p] {
			unused = append(unused, p.String())
		}
	}
	for p := range used {
		if !want[p] {
			missing = append(missing, p.String())
		}
	}
	sort.Strings(unused)
	sort.Strings(missing)
	if len(unused) > 0 {
		t.Errorf("deploy/rbac.yaml grants what no controller used (not minimal):\n  %s", strings.Join(unused, "\n  "))
	}
	if len(missing) > 0 {
		t.Errorf("the controllers succeeded at requests deploy/rbac.yaml does not grant:\n  %s", strings.Join(missing, "\n  "))
	}

	t.Run("each permission admission checks is needed", func(t *testing.T) {
		checkAdmissionOnly(t, c, role, admissionOnly)
	})
}

// secureServing is kroll's serving options on a free port of 127.0.0.1, reviewing
// clients through kubeconfig, each review's request passed through wrap.
func secureServing(t *testing.T, kubeconfig string, wrap func(http.RoundTripper) http.RoundTripper) (*manager.Serving, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := manager.NewServing()
	s.SecureServing.Listener = l
	s.Authentication.RemoteKubeConfigFile, s.Authorization.RemoteKubeConfigFile = kubeconfig, kubeconfig
	s.Authentication.WithCustomRoundTripper(wrap)
	s.Authorization.WithCustomRoundTripper(wrap)
	return s, l.Addr().String()
}

// writeKubeconfig writes cfg's server, CA and bearer token to a kubeconfig file.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// endpointsClient is an HTTPS client of kroll's endpoints that presents cfg's
// credentials (a bearer token or a client certificate; none for an anonymous
// configuration). The serving certificate is self-signed and not verified, as a
// kubelet's HTTPS probe does not verify it either.
func endpointsClient(t *testing.T, cfg *rest.Config) *http.Client {
	cfg = rest.CopyConfig(cfg)
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = true, nil, ""
	cfg.Timeout = 10 * time.Second
	return must(rest.HTTPClientFor(cfg))
}

// Given kroll's manager serving at addr with profiling, and deploy/rbac.yaml's
// kroll-metrics-reader bound to one service account: a scrape without a token gets 401
// (with an invalid one too); a service account without the binding 403; the bound one
// 200 with Prometheus text, and 403 on /debug/pprof/; the probes are open to anyone; the
// cluster's admin (a client certificate in system:masters) reads the profiles.
func checkSecureEndpoints(t *testing.T, c *cluster.Cluster, addr string) {
	ctx := context.Background()
	for _, name := range []string{"scraper", "nobody"} {
		must(c.Client.CoreV1().ServiceAccounts("kroll-system").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))
	}
	must(c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-kroll-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kroll-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: "kroll-system"}},
	}, metav1.CreateOptions{}))
	bogus := rest.AnonymousClientConfig(c.RESTConfig)
	bogus.BearerToken = "not-a-token"
	clients := map[string]*http.Client{
		"anonymous": endpointsClient(t, rest.AnonymousClientConfig(c.RESTConfig)),
		"bogus":     endpointsClient(t, bogus),
		"nobody":    endpointsClient(t, serviceAccountConfig(t, c, "kroll-system", "nobody")),
		"scraper":   endpointsClient(t, serviceAccountConfig(t, c, "kroll-system", "scraper")),
		"admin":     endpointsClient(t, c.RESTConfig),
	}
	tests := []struct {
		who, path string
		code      int
		body      string // a part of the body (a JSON Status for refusals)
	}{
		{"anonymous", "/metrics", http.StatusUnauthorized, "Unauthorized"},
		{"bogus", "/metrics", http.StatusUnauthorized, "Unauthorized"},
		{"nobody", "/metrics", http.StatusForbidden, `system:serviceaccount:kroll-system:nobody\" cannot get path \"/metrics\"`},
		{"scraper", "/metrics", http.StatusOK, "# TYPE workqueue_adds_total counter"},
		{"anonymous", "/healthz", http.StatusOK, "ok"},
		{"anonymous", "/readyz", http.StatusOK, "ok"},
		{"anonymous", "/debug/pprof/", http.StatusUnauthorized, "Unauthorized"},
		{"scraper", "/debug/pprof/", http.StatusForbidden, `kroll-system:scraper\" cannot get path \"/debug/pprof/\"`},
		{"admin", "/debug/pprof/", http.StatusOK, "goroutine"},
		{"admin", "/metrics", http.StatusOK, "leader_election_master_status"},
	}
	for _, tt := range tests {
		// The RoleBinding reaches the API server's authorizer within moments, and /readyz
		// waits for the leader's caches: bounded retries.
		var code int
		var body string
		for try := 0; try < 50; try++ {
			code, body = httpGet(clients[tt.who], "https://"+addr+tt.path)
			if code == tt.code && strings.Contains(body, tt.body) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("GET %s as %s: %d %s; want %d with %q", tt.path, tt.who, code, tail(body, 300), tt.code, tt.body)
		}
	}
}

// checkAdmissionOnly shows each permission in admissionOnly needed: in three phases,
// each in a fresh namespace with the manager running under role less some of them, a
// workload that needs them has the request admission checks refused, with the
// refusal that names the object the permission is for.
func checkAdmissionOnly(t *testing.T, c *cluster.Cluster, role *rbacv1.ClusterRole, admissionOnly map[permission]bool) {
	ctx := context.Background()
	without := func(dropped map[permission]string) []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if _, drop := dropped[permission{v, r.APIGroups[0], res}]; !drop {
						rules = append(rules, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, Verbs: []string{v}})
					}
				}
			}
		}
		return rules
	}
	reduced := must(c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kroll-reduced"}}, metav1.CreateOptions{}))
	must(c.Client.CoreV1().ServiceAccounts("kroll-system").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kroll-reduced"}}, metav1.CreateOptions{}))
	must(c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kroll-reduced"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kroll-reduced"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kroll-reduced", Namespace: "kroll-system"}},
	}, metav1.CreateOptions{}))

	claims := func(whenDeleted string) string {
		return strings.ReplaceAll(strings.Replace(claimTemplate, "whenDeleted: Retain", "whenDeleted: "+whenDeleted, 1), "STORAGECLASS", "NS")
	}
	blockOwnerDeletion := "is forbidden: cannot set blockOwnerDeletion"
	phases := []struct {
		name string
		// dropped maps each permission taken away to the text of the refusal it causes.
		dropped map[permission]string
		run     func(t *testing.T, s *scene)
	}{
		{"owners' finalizers", map[permission]string{
			{"update", "apps", "deployments/finalizers"}:        `replicasets.apps "web-`,
			{"update", "apps", "replicasets/finalizers"}:        `pods "solo-`,
			{"update", "", "replicationcontrollers/finalizers"}: `pods "rc-`,
			{"update", "apps", "statefulsets/finalizers"}:       `controllerrevisions.apps "web-`,
			{"update", "apps", "daemonsets/finalizers"}:         `controllerrevisions.apps "logs-`,
		}, func(t *testing.T, s *scene) {
			s.apply(t, inPlaceDeployment("web", 1, inplace.IfPossible, "1", "0", ""))
			s.apply(t, appManifest("ReplicaSet", "solo", 1))
			s.apply(t, appManifest("ReplicationController", "rc", 1))
			s.apply(t, statefulSetManifest(1, ""))
			s.apply(t, logDaemonSet)
		}},
		{"delete on claims", map[permission]string{
			{"delete", "", "persistentvolumeclaims"}: "cannot set an ownerRef on a resource you can't delete",
		}, func(t *testing.T, s *scene) {
			// The claim is created owned by the set; orphaned, it must be re-owned by the
			// set made again: a change of its owner references.
			s.kubectl(t, "apply", "-f", writeFile(t, "pv.yaml", fmt.Sprintf(persistentVolume, s.ns, "rbac", 0)))
			sts := statefulSetManifest(1, strings.ReplaceAll(claims("Delete"), "NS", s.ns))
			s.apply(t, sts)
			s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
			orphanAndReadopt(t, s, "statefulset", "web", sts)
		}},
		{"pods' finalizers", map[permission]string{
			{"update", "", "pods/finalizers"}: `persistentvolumeclaims "www-web-1" ` + blockOwnerDeletion,
		}, func(t *testing.T, s *scene) {
			for i := 0; i < 2; i++ {
				s.kubectl(t, "apply", "-f", writeFile(t, "pv.yaml", fmt.Sprintf(persistentVolume, s.ns, "rbac", i)))
			}
			s.apply(t, statefulSetManifest(2, strings.ReplaceAll(claims("Retain"), "NS", s.ns)))
			s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
			s.kubectl(t, "scale", "statefulset/web", "--replicas=1")
		}},
	}
	covered := map[permission]bool{}
	for i, phase := range phases {
		t.Run(phase.name, func(t *testing.T) {
			for p := range phase.dropped {
				covered[p] = true
			}
			reduced.Rules = without(phase.dropped)
			reduced = must(c.Client.RbacV1().ClusterRoles().Update(ctx, reduced, metav1.UpdateOptions{}))
			rec := newRequestRecorder(t)
			cfg := serviceAccountConfig(t, c, "kroll-system", "kroll-reduced")
			cfg.Wrap(rec.wrap)
			stop := runManager(t, cfg, manager.Options{})
			defer stop()
			s := newScene(t, c, fmt.Sprintf("reduced-%d", i), cluster.WorkloadControllersKroll)
			phase.run(t, s)
			for p, text := range phase.dropped {
				eventually(t, time.Minute, "a request refused for want of "+p.String(), func(context.Context) (bool, string) {
					rec.mu.Lock()
					defer rec.mu.Unlock()
					for _, msg := range rec.forbidden {
						if strings.Contains(msg, text) {
							return true, msg
						}
					}
					return false, fmt.Sprint(len(rec.forbidden), " refusals")
				})
			}
		})
	}
	for p := range admissionOnly {
		if !covered[p] {
			t.Errorf("no phase shows %s needed", p)
		}
	}
}

// appManifest is a workload of kind (Deployment, ReplicaSet or ReplicationController)
// named name with replicas pods labelled app=name running nginx:1.14.2; podAnnotations
// go on its pod template.
func appManifest(kind, name string, replicas int, podAnnotations ...string) string {
	apiVersion, selector := "apps/v1", "    matchLabels:\n      app: "+name
	if kind == "ReplicationController" {
		apiVersion, selector = "v1", "    app: "+name
	}
	annotations := ""
	if len(podAnnotations) > 0 {
		annotations = "      annotations:\n        " + strings.Join(podAnnotations, "\n        ") + "\n"
	}
	return fmt.Sprintf(`apiVersion: %[1]s
kind: %[2]s
metadata:
  name: %[3]s
spec:
  replicas: %[4]d
  selector:
%[5]s
  template:
    metadata:
      labels:
        app: %[3]s
%[6]s    spec:
      containers:
      - name: app
        image: nginx:1.14.2
`, apiVersion, kind, name, replicas, selector, annotations)
}

// orphanAndReadopt deletes kind/name leaving its children, waits until it is gone,
// and creates it again from manifest: the controller must adopt the orphans back.
func orphanAndReadopt(t *testing.T, s *scene, kind, name, manifest string) {
	t.Helper()
	s.kubectl(t, "delete", kind, name, "--cascade=orphan", "--wait=true")
	s.apply(t, manifest)
}

// exerciseEveryWrite drives kroll's controllers through every kind of write they make,
// waiting for each step to finish.
// configuredDeployment rolls its ConfigMap conf and Secret cred with its revisions.
const configuredDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: configured
  annotations:
    kroll.dev/config-rollout: "true"
spec:
  replicas: 1
  selector:
    matchLabels: {app: configured}
  template:
    metadata:
      labels: {app: configured}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        volumeMounts:
        - {name: conf, mountPath: /etc/conf}
        - {name: cred, mountPath: /etc/cred}
      volumes:
      - {name: conf, configMap: {name: conf}}
      - {name: cred, secret: {secretName: cred}}
`

func exerciseEveryWrite(t *testing.T, s *scene) {
	rolledOut := func(workload string) {
		t.Helper()
		s.kubectl(t, "rollout", "status", workload, "--timeout=2m")
	}
	// A Deployment of 12: its ReplicaSet's 12 SuccessfulCreate events are aggregated
	// (create, then patch). Adopted back after orphaning; an in-place update (pod
	// patch, pod status patch); two rolling updates with a history limit of 1 (ReplicaSet
	// create, update, delete).
	web := inPlaceDeployment("web", 12, inplace.IfPossible, "3", "3", "  revisionHistoryLimit: 1\n")
	s.apply(t, web)
	rolledOut("deployment/web")
	orphanAndReadopt(t, s, "deployment", "web", web)
	rolledOut("deployment/web")
	s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.16.1")
	rolledOut("deployment/web")
	s.kubectl(t, "set", "env", "deployment/web", "A=1")
	rolledOut("deployment/web")
	s.kubectl(t, "set", "env", "deployment/web", "A=2")
	rolledOut("deployment/web")
	eventually(t, time.Minute, "the oldest ReplicaSet deleted by the history limit", func(context.Context) (bool, string) {
		rss := s.replicaSets(t)
		return len(rss) == 2, rsSizes(rss)
	})
	// A new image that does not pull is rolled back (the Deployment's own update).
	s.apply(t, healDeployment("healed", 2, "1", "0", "kroll.dev/on-failure=Rollback"))
	rolledOut("deployment/healed")
	s.kubectl(t, "set", "image", "deployment/healed", "app=nginx:1.161")
	s.expectRolledBack(t, "healed", 2, ": ErrImagePull)")
	// A rollout that respects disruption budgets: its old pods are evicted
	// (pods/eviction create; the budgets are watched).
	s.apply(t, budgetDeployment(2, 1, 0, "Respect"))
	rolledOut("deployment/nginx-deployment")
	s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.16.1")
	rolledOut("deployment/nginx-deployment")
	// The same in place under a budget: each restart takes its disruption and gives it
	// back (poddisruptionbudgets/status update).
	s.apply(t, budgetManifest(1))
	s.budgetSettled(t, 1)
	s.kubectl(t, "annotate", "deployment/nginx-deployment", inplace.StrategyAnnotation+"="+string(inplace.IfPossible))
	s.kubectl(t, "set", "image", "deployment/nginx-deployment", "nginx=nginx:1.17")
	rolledOut("deployment/nginx-deployment")
	// A resize in place (pods/resize patch).
	s.apply(t, resizeDeployment("sized", 2, inplace.IfPossible, 1, "100m"))
	rolledOut("deployment/sized")
	s.kubectl(t, "set", "resources", "deployment/sized", "-c", "app", "--requests=cpu=200m,memory=64Mi")
	rolledOut("deployment/sized")

	// Configuration rollout: the snapshots of a ConfigMap and a Secret (create).
	s.kubectl(t, "create", "configmap", "conf", "--from-literal=k=v")
	s.kubectl(t, "create", "secret", "generic", "cred", "--from-literal=p=x")
	s.apply(t, configuredDeployment)
	rolledOut("deployment/configured")
	eventually(t, time.Minute, "a snapshot of each", func(ctx context.Context) (bool, string) {
		cms, err := s.c.Client.CoreV1().ConfigMaps(s.ns).List(ctx, metav1.ListOptions{LabelSelector: configrollout.SnapshotOfLabel + "=conf"})
		if err != nil {
			return false, err.Error()
		}
		secrets, err := s.c.Client.CoreV1().Secrets(s.ns).List(ctx, metav1.ListOptions{LabelSelector: configrollout.SnapshotOfLabel + "=cred"})
		if err != nil {
			return false, err.Error()
		}
		return len(cms.Items) == 1 && len(secrets.Items) == 1, fmt.Sprintf("%d ConfigMap and %d Secret snapshots", len(cms.Items), len(secrets.Items))
	})

	// A ReplicaSet and a ReplicationController adopt their orphaned pods back, then
	// scale down (pod delete).
	solo := appManifest("ReplicaSet", "solo", 2)
	s.apply(t, solo)
	eventually(t, time.Minute, "solo's 2 pods ready", func(context.Context) (bool, string) {
		return len(s.pods(t, "app=solo")) == 2, fmt.Sprint(s.podNames(t, "app=solo"))
	})
	orphanAndReadopt(t, s, "replicaset", "solo", appManifest("ReplicaSet", "solo", 1))
	rc := appManifest("ReplicationController", "rc", 2)
	s.apply(t, rc)
	eventually(t, time.Minute, "rc's 2 pods", func(context.Context) (bool, string) {
		return len(s.pods(t, "app=rc")) == 2, fmt.Sprint(s.podNames(t, "app=rc"))
	})
	orphanAndReadopt(t, s, "replicationcontroller", "rc", appManifest("ReplicationController", "rc", 1))
	for _, app := range []string{"solo", "rc"} {
		eventually(t, time.Minute, app+" scaled down to 1 adopted pod", func(context.Context) (bool, string) {
			pods := s.pods(t, "app="+app)
			return len(pods) == 1 && metav1.GetControllerOf(pods[0]) != nil, fmt.Sprint(s.podNames(t, "app="+app))
		})
	}

	// A StatefulSet with claims (create; owner references per retention policy: patch),
	// adopted back after orphaning (pod and revision patch), a pod's identity label
	// restored (pod update), two updates with a history limit of 1 (revision create,
	// delete) and an undo (revision update).
	for i := 0; i < 3; i++ {
		s.kubectl(t, "apply", "-f", writeFile(t, "pv.yaml", fmt.Sprintf(persistentVolume, s.ns, "rbac", i)))
	}
	claims := strings.ReplaceAll(strings.Replace(claimTemplate, "whenDeleted: Retain", "whenDeleted: Delete", 1), "STORAGECLASS", s.ns)
	sts := statefulSetManifest(2, "  revisionHistoryLimit: 1\n"+claims)
	s.apply(t, sts)
	rolledOut("statefulset/web")
	orphanAndReadopt(t, s, "statefulset", "web", sts)
	rolledOut("statefulset/web")
	s.kubectl(t, "label", "pod", "web-0", "statefulset.kubernetes.io/pod-name-")
	eventually(t, time.Minute, "web-0's identity label restored", func(context.Context) (bool, string) {
		p := s.pods(t, "app=nginx")
		for _, pod := range p {
			if pod.Name == "web-0" {
				return pod.Labels["statefulset.kubernetes.io/pod-name"] == "web-0", fmt.Sprint(pod.Labels)
			}
		}
		return false, "no web-0"
	})
	s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.16.1")
	rolledOut("statefulset/web")
	s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.17.0")
	rolledOut("statefulset/web")
	s.kubectl(t, "rollout", "undo", "statefulset/web")
	rolledOut("statefulset/web")
	s.kubectl(t, "scale", "statefulset/web", "--replicas=1")
	eventually(t, time.Minute, "web-1's claim deleted with it (whenScaled: Delete)", func(context.Context) (bool, string) {
		c := s.claims(t)
		return !strings.Contains(c, "www-web-1"), c
	})

	// A DaemonSet on every node, adopted back after orphaning, two updates with a
	// history limit of 1 and an undo.
	ds := daemonSetManifest("  revisionHistoryLimit: 1\n", "")
	s.apply(t, ds)
	rolledOut("daemonset/logs")
	orphanAndReadopt(t, s, "daemonset", "logs", ds)
	rolledOut("daemonset/logs")
	s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
	rolledOut("daemonset/logs")
	s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v3")
	rolledOut("daemonset/logs")
	s.kubectl(t, "rollout", "undo", "daemonset/logs")
	rolledOut("daemonset/logs")

	// Both roll back an image that does not pull by themselves (kroll.dev/on-failure:
	// an update of the workload, then of its status).
	setRollbacks.Lock()
	defer setRollbacks.Unlock()
	for _, w := range []struct{ workload, container string }{{"statefulset/web", "nginx"}, {"daemonset/logs", "agent"}} {
		s.kubectl(t, "annotate", w.workload, failure.OnFailureAnnotation+"=Rollback")
		s.kubectl(t, "set", "image", w.workload, w.container+"=nginx:nonexistent")
		eventually(t, time.Minute, w.workload+" rolled back", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, w.workload, failure.RolledBackFromAnnotation)
			return got != "", got
		})
		rolledOut(w.workload)
	}
}
