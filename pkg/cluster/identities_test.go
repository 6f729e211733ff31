package cluster

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

func TestSimulatedKubeletRules_actAsEachNodeByName(t *testing.T) {
	rules := simulatedKubeletRules(3)
	var users, groups []string
	for _, r := range rules {
		for _, res := range r.Resources {
			if res == "users" {
				users = append(users, r.ResourceNames...)
			}
			if res == "groups" {
				groups = append(groups, r.ResourceNames...)
			}
		}
		for _, v := range r.Verbs {
			for _, res := range r.Resources {
				switch {
				case v == "get" || v == "list" || v == "watch" || v == "impersonate":
				case res == "events" || res == "subjectaccessreviews" || (res == "nodes" && v == "delete"):
				default:
					t.Errorf("the shared identity may %s %s: it writes only through the nodes' identities", v, res)
				}
			}
		}
	}
	if want := "system:node:kroll-node-0 system:node:kroll-node-1 system:node:kroll-node-2"; strings.Join(users, " ") != want {
		t.Errorf("impersonates users %v, want %s", users, want)
	}
	if strings.Join(groups, " ") != "system:nodes" {
		t.Errorf("impersonates groups %v, want system:nodes only", groups)
	}
}

func TestStaleKCMControllerBindings_earlierKrollsOnly(t *testing.T) {
	var bindings []rbacv1.ClusterRoleBinding
	for _, name := range []string{"kroll:kube-controller-manager:namespace-controller", "system:kube-controller-manager",
		"system:controller:deployment-controller", "kroll:controller-manager", "kroll:kube-controller-manager:attachdetach-controller"} {
		bindings = append(bindings, rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	got := strings.Join(staleKCMControllerBindings(bindings), " ")
	if want := "kroll:kube-controller-manager:attachdetach-controller kroll:kube-controller-manager:namespace-controller"; got != want {
		t.Errorf("stale bindings %q, want %q", got, want)
	}
}

func TestKCMControllerAgent(t *testing.T) {
	for _, tc := range []struct {
		name, user, ua, want string
	}{
		{"a controller as its service account is kube-controller-manager", "system:serviceaccount:kube-system:deployment-controller",
			"kroll/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:deployment-controller",
			"kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:deployment-controller"},
		{"a test binary's controller too", "system:serviceaccount:kube-system:generic-garbage-collector",
			"e2e.test/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:generic-garbage-collector",
			"kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:generic-garbage-collector"},
		{"already named", "system:serviceaccount:kube-system:deployment-controller",
			"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:deployment-controller", ""},
		{"a user agent naming another service account", "system:serviceaccount:kube-system:deployment-controller",
			"kroll/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:replicaset-controller", ""},
		{"a service account of another namespace", "system:serviceaccount:default:deployment-controller",
			"kroll/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:default:deployment-controller", ""},
		{"kroll's own controllers", "kroll:controller-manager", "kroll/v0.0.0 (linux/amd64) kubernetes/$Format/deployment-controller", ""},
		{"kubectl as a kube-system service account", "system:serviceaccount:kube-system:deployment-controller", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := kcmControllerAgent(tc.user, tc.ua)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("kcmControllerAgent = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestDeployedControllersRules_areRbacYamls(t *testing.T) {
	rules, err := deployedControllersRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 5 {
		t.Fatalf("deploy/rbac.yaml's role has %d rules", len(rules))
	}
	for _, r := range rules {
		for _, v := range r.Verbs {
			if v == "*" || v == "impersonate" || v == "escalate" || v == "bind" {
				t.Errorf("kroll's controllers would be granted %s on %v", v, r.Resources)
			}
		}
	}
}

// Given a cluster with two simulated nodes and a pod bound to each, when node 0's own
// client (the one the simulator writes through) tries to change node 1's Node, its
// status, its pod's status or delete its pod, then each is forbidden, while the same
// on node 0's own objects succeeds; the simulator's shared identity cannot write a pod's
// status or a Node itself, and kroll's controllers' identity cannot read Secrets.
func TestIdentities_aNodeCannotTouchAnothersObjects(t *testing.T) {
	c, _ := startTestCluster(t, 2)
	ctx := context.Background()
	node0, node1 := kubelet.NodeName(0), kubelet.NodeName(1)
	for i, node := range []string{node0, node1} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('0'+i)), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := c.pki.restConfigFor(c.Server, identityKubelet)
	if err != nil {
		t.Fatal(err)
	}
	asNode, err := nodeClients(shared)
	if err != nil {
		t.Fatal(err)
	}
	label := []byte(`{"metadata":{"labels":{"kroll.dev/touched":"yes"}}}`)
	status := []byte(`{"status":{"conditions":[{"type":"kroll.dev/Touched","status":"True"}]}}`)
	writes := func(client kubernetes.Interface, node, pod string) map[string]error {
		_, patchNode := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, label, metav1.PatchOptions{})
		_, patchNodeStatus := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
		_, patchPodStatus := client.CoreV1().Pods("default").Patch(ctx, pod, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
		return map[string]error{"patch its Node": patchNode, "patch its Node's status": patchNodeStatus, "patch its pod's status": patchPodStatus}
	}
	for what, err := range writes(asNode(node0), node1, "p1") {
		if !apierrors.IsForbidden(err) {
			t.Errorf("node %s may %s of node %s: %v", node0, what, node1, err)
		}
	}
	if err := asNode(node0).CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node %s may delete node %s's pod: %v", node0, node1, err)
	}
	for what, err := range writes(asNode(node0), node0, "p0") {
		if err != nil {
			t.Errorf("node %s may not %s of its own: %v", node0, what, err)
		}
	}
	sharedClient := kubernetes.NewForConfigOrDie(shared)
	for what, err := range writes(sharedClient, node1, "p1") {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the simulator's shared identity may %s (of node %s) as itself: %v", what, node1, err)
		}
	}
	controllers, err := c.pki.restConfigFor(c.Server, identityControllers)
	if err != nil {
		t.Fatal(err)
	}
	// They read Secrets (configuration rollout snapshots them) but never change one.
	if err := kubernetes.NewForConfigOrDie(controllers).CoreV1().Secrets("kube-system").Delete(ctx, "any", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("kroll's controllers' identity may delete Secrets: %v", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(controllers).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("kroll's controllers' identity may not list pods: %v", err)
	}
}

// Given the clients of three nodes made from one configuration, when each lists pods,
// then each request carries its node's identity (Impersonate-User system:node:<name>,
// Impersonate-Group system:nodes) and all of them travel over one connection: a node's
// identity costs no connection of its own.
func TestNodeClients_oneConnectionManyIdentities(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	seen := map[string]string{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Impersonate-User")] = strings.Join(r.Header.Values("Impersonate-Group"), ",")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	base := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	asNode, err := nodeClients(base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := asNode(kubelet.NodeName(i)).CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if asNode(kubelet.NodeName(0)) != asNode(kubelet.NodeName(0)) {
		t.Error("a node's client is made anew on every use")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 3 {
		if got := seen[nodeUser(kubelet.NodeName(i))]; got != nodesGroup {
			t.Errorf("requests of %s carried groups %q, want %s (seen: %v)", kubelet.NodeName(i), got, nodesGroup, seen)
		}
	}
	if conns != 1 {
		t.Errorf("three nodes' requests opened %d connections, want 1", conns)
	}
}

// Given a cluster, then kube-controller-manager's controllers act as their own service
// accounts (the root CA publisher writes a new namespace's kube-root-ca.crt
// ConfigMap) and their writes are named kube-controller-manager's, which kroll's
// preflight and verdicts read; kube-controller-manager's own identity holds none of its
// controllers' rights (an earlier kroll's binding for them is removed on start).
func TestKubeControllerManager_controllersActAsTheirServiceAccounts(t *testing.T) {
	c, cfg := startTestCluster(t, 0)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "named"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	if err := c.waitFor(ctx, "the root CA ConfigMap", func(ctx context.Context) bool {
		var err error
		cm, err = c.Client.CoreV1().ConfigMaps("named").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, f := range cm.ManagedFields {
		managers = append(managers, f.Manager)
	}
	if strings.Join(managers, " ") != kcmUserAgent {
		t.Errorf("the kube-root-ca.crt ConfigMap's writers are %v, want [%s]", managers, kcmUserAgent)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "root-ca-cert-publisher", metav1.GetOptions{}); err != nil {
		t.Errorf("the root CA publisher's own service account: %v", err)
	}
	finalize := authorizationv1.ResourceAttributes{Verb: "update", Resource: "namespaces", Subresource: "finalize"}
	if allowed(ctx, c.Client, identityControllerManager.cn, finalize) {
		t.Errorf("%s may finalize namespaces: it holds the namespace controller's role", identityControllerManager.cn)
	}

	// An earlier kroll's binding is gone after a restart.
	stale := kcmControllerBindingPrefix + "namespace-controller"
	if err := ensureClusterRoleBinding(ctx, c.Client, stale, "system:controller:namespace-controller", identityControllerManager.cn); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, stale, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier binding %s after a restart: %v", stale, err)
	}
}
