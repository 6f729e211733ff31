package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/yaml"

	"github.com/kroll-dev/kroll/deploy"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// Every component runs under an identity of its own, as on a kubeadm cluster, and may
// do only what that identity's roles grant (pki.go lists the identities):
//   - kube-controller-manager as system:kube-controller-manager, under upstream's
//     bootstrap role for it (its informers, service accounts and their tokens), and
//     each of its controllers as its own service account,
//     system:serviceaccount:kube-system:<controller>, under that controller's bootstrap
//     role (system:controller:<controller>), as with kubeadm's
//     --use-service-account-credentials; kube-scheduler as system:kube-scheduler,
//     under its bootstrap roles;
//   - each simulated node as system:node:<name> in system:nodes, which the Node
//     authorizer and NodeRestriction admission hold to its own Node, Lease and pods.
//     The simulator's informers read every node's objects through one shared identity
//     (kroll:kubelet, simulatedKubeletRole), which also records events, removes nodes
//     beyond --nodes and may act as each of the cluster's nodes by name
//     (impersonation), but writes no pod or node status itself: one connection for
//     every node's identity, not one per node;
//   - kroll's controllers as kroll:controller-manager, bound to deploy/rbac.yaml's
//     ClusterRole and nothing more, so `kroll up` exercises the role users deploy;
//   - kube-apiserver's client of the nodes' kubelet API under upstream's
//     system:kubelet-api-admin.
// The admin kubeconfig stays in system:masters, as kubeadm's admin.conf.

const (
	// simulatedKubeletRole names the ClusterRole (and binding) of identityKubelet.
	simulatedKubeletRole = "kroll:simulated-kubelet"
	// controllersRole names the ClusterRole (and binding) of identityControllers: a copy
	// of deploy/rbac.yaml's deployedControllersRole.
	controllersRole         = "kroll:controller-manager"
	deployedControllersRole = "kroll-controller-manager"
	// kubeletAPIClientBinding binds identityAPIServerKubeletClient to upstream's role.
	kubeletAPIClientBinding = "kroll:apiserver-kubelet-client"
	kubeletAPIAdminRole     = "system:kubelet-api-admin"
	// nodesGroup is the group of every node identity.
	nodesGroup = "system:nodes"
)

// nodeUser is the user name of node's identity.
func nodeUser(node string) string { return "system:node:" + node }

// simulatedKubeletRules is what the simulator's shared identity may do for nodes
// 0..nodes-1: read what its informers watch, review the kubelet API's callers, record
// events, remove simulated nodes beyond --nodes left by an earlier run (a node may not
// delete even itself), and act as each node, by name.
func simulatedKubeletRules(nodes int) []rbacv1.PolicyRule {
	users := make([]string, nodes)
	for i := range users {
		users[i] = nodeUser(kubelet.NodeName(i))
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "persistentvolumeclaims", "persistentvolumes", "configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: users},
		{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{nodesGroup}},
	}
}

// deployedControllersRules is the rules of deploy/rbac.yaml's ClusterRole for kroll's
// controller manager.
func deployedControllersRules() ([]rbacv1.PolicyRule, error) {
	for _, part := range bytes.Split(deploy.RBAC, []byte("\n---\n")) {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(part, &role); err != nil {
			return nil, fmt.Errorf("deploy/rbac.yaml: %w", err)
		}
		if role.Kind == "ClusterRole" && role.Name == deployedControllersRole {
			return role.Rules, nil
		}
	}
	return nil, fmt.Errorf("deploy/rbac.yaml has no ClusterRole %s", deployedControllersRole)
}

// ensureIdentities gives the components' identities their roles (those of the
// simulated nodes' too, for nodes nodes), and waits until they are in force. kroll's
// roles are brought up to date on every start (a newer kroll may need more, a cluster
// more nodes).
func (c *Cluster) ensureIdentities(ctx context.Context, nodes int) error {
	client := c.Client
	controllers, err := deployedControllersRules()
	if err != nil {
		return err
	}
	if err := ensureClusterRole(ctx, client, controllersRole, controllers); err != nil {
		return err
	}
	if err := removeKCMControllerBindings(ctx, client); err != nil {
		return err
	}
	for _, b := range []struct{ name, role, user string }{
		{simulatedKubeletRole, simulatedKubeletRole, identityKubelet.cn},
		{controllersRole, controllersRole, identityControllers.cn},
		{kubeletAPIClientBinding, kubeletAPIAdminRole, identityAPIServerKubeletClient.cn},
	} {
		if err := ensureClusterRoleBinding(ctx, client, b.name, b.role, b.user); err != nil {
			return err
		}
	}
	// The namespace controller's bootstrap role, one of the last the API server binds.
	finalize := authorizationv1.ResourceAttributes{Verb: "update", Resource: "namespaces", Subresource: "finalize"}
	if err := c.waitFor(ctx, "kube-controller-manager's roles", func(ctx context.Context) bool {
		return allowed(ctx, c.Client, serviceAccountPrefix+"namespace-controller", finalize)
	}); err != nil {
		return err
	}
	return c.ensureNodeIdentities(ctx, nodes)
}

// ensureNodeIdentities lets the simulated kubelets act as each of the first nodes
// nodes, and waits until they may (RBAC's authorizer sees a role change a moment after
// it is written).
func (c *Cluster) ensureNodeIdentities(ctx context.Context, nodes int) error {
	if err := ensureClusterRole(ctx, c.Client, simulatedKubeletRole, simulatedKubeletRules(nodes)); err != nil {
		return err
	}
	if nodes == 0 {
		return nil
	}
	last := kubelet.NodeName(nodes - 1)
	may := authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: nodeUser(last)}
	return c.waitFor(ctx, "the simulated nodes' identities", func(ctx context.Context) bool { return allowed(ctx, c.Client, identityKubelet.cn, may) })
}

// allowed reports whether user may do what attrs say, as the API server's
// authorizers see it now.
func allowed(ctx context.Context, client kubernetes.Interface, user string, attrs authorizationv1.ResourceAttributes) bool {
	review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: &attrs,
	}}, metav1.CreateOptions{})
	return err == nil && review.Status.Allowed
}

// kcmControllerBindingPrefix begins the names of the ClusterRoleBindings an earlier
// kroll made, binding kube-controller-manager's own identity to every controller's
// bootstrap role, when its controllers did not act as their service accounts.
const kcmControllerBindingPrefix = "kroll:kube-controller-manager:"

// removeKCMControllerBindings removes the bindings an earlier kroll left
// (kcmControllerBindingPrefix): kube-controller-manager's own identity holds only its
// own bootstrap role now.
func removeKCMControllerBindings(ctx context.Context, client kubernetes.Interface) error {
	bindings, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("cluster role bindings: %w", err)
	}
	for _, name := range staleKCMControllerBindings(bindings.Items) {
		if err := client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster role binding %s: %w", name, err)
		}
	}
	return nil
}

// staleKCMControllerBindings are the names of the bindings among bindings that an
// earlier kroll made for kube-controller-manager's identity, sorted.
func staleKCMControllerBindings(bindings []rbacv1.ClusterRoleBinding) []string {
	var out []string
	for _, b := range bindings {
		if strings.HasPrefix(b.Name, kcmControllerBindingPrefix) {
			out = append(out, b.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ensureClusterRole creates the ClusterRole name with rules, or sets its rules.
func ensureClusterRole(ctx context.Context, client kubernetes.Interface, name string, rules []rbacv1.PolicyRule) error {
	roles := client.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	case err == nil:
		role.Rules = rules
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster role %s: %w", name, err)
	}
	return nil
}

// ensureClusterRoleBinding binds user to the ClusterRole role, as name.
func ensureClusterRoleBinding(ctx context.Context, client kubernetes.Interface, name, role, user string) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster role binding %s: %w", name, err)
	}
	return nil
}

// nodeClients returns, for each node, a clientset acting as that node (impersonating
// system:node:<name> in system:nodes) over base's one HTTP client: one connection for
// every node, where a certificate per node would be one each. Clients are made on
// first use and kept.
func nodeClients(base *rest.Config) (func(node string) kubernetes.Interface, error) {
	shared, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	clients := map[string]kubernetes.Interface{}
	return func(node string) kubernetes.Interface {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := clients[node]; ok {
			return c
		}
		as := transport.ImpersonationConfig{UserName: nodeUser(node), Groups: []string{nodesGroup}}
		hc := &http.Client{Transport: transport.NewImpersonatingRoundTripper(as, shared.Transport), Timeout: shared.Timeout}
		c, err := kubernetes.NewForConfigAndClient(base, hc)
		if err != nil {
			// NewForConfigAndClient fails only on a configuration rest.HTTPClientFor
			// accepted above.
			panic(err)
		}
		clients[node] = c
		return c
	}, nil
}

// ComponentUsers are the user names (or their prefixes) the cluster's components act
// as: a refusal naming one is a component's role falling short.
func ComponentUsers() []string {
	return []string{identityControllerManager.cn, identityScheduler.cn, identityKubelet.cn, identityControllers.cn,
		identityStorage.cn, identityAPIServerKubeletClient.cn, identityPrometheus.cn, "system:node:", "system:serviceaccount:kube-system:"}
}

// ServingCertificate is a serving certificate and its key, in files.
type ServingCertificate struct{ CertFile, KeyFile string }

// IssueServingCertificate has the cluster CA sign a serving certificate for ip, kept in
// the cluster's PKI as name.crt and name.key, so that a server beside the cluster (the
// bench's controller processes) is verified by the cluster's clients.
func (c *Cluster) IssueServingCertificate(name string, ip net.IP) (ServingCertificate, error) {
	ca, caKey, err := loadPair(c.pki.caCert(), c.pki.caKey())
	if err != nil {
		return ServingCertificate{}, err
	}
	out := ServingCertificate{CertFile: c.pki.path(name + ".crt"), KeyFile: c.pki.path(name + ".key")}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{ip},
	}
	return out, c.pki.ensureSigned(out.CertFile, out.KeyFile, tmpl, ca, caKey)
}
