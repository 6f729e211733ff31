package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kroll-dev/kroll/deploy/chart"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
)

// Given a `kroll up` cluster (without its admission policy) and the release's namespace, when the Helm chart's
// manifests (rendered by Helm's own engine, as `helm install` would send them) are
// applied with server-side apply in dry run — for the default values, for
// dashboard.enabled=true, and for the dashboard with actions, its request-header
// authentication and the metrics Service — then the API server accepts every object.
// And with the dashboard's read-only RBAC applied for real, its service account may
// read workloads, pods and their logs, and may neither write nor impersonate.
func TestHelmChartAppliesServerSide(t *testing.T) {
	t.Parallel()
	// Without kroll up's own admission policy: the chart installs it, as on a real cluster.
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(1),
		func(c *cluster.Config) { c.NoAdmissionPolicy = true })
	const ns = "kroll-system"
	mustKubectl(t, c.KubeconfigPath, "create", "namespace", ns)
	renderings := []struct {
		name   string
		values map[string]any
	}{
		{"default", nil},
		{"dashboard.enabled=true", map[string]any{"dashboard": map[string]any{"enabled": true}}},
		{"dashboard with actions, request headers, metrics Service", map[string]any{
			"dashboard": map[string]any{"enabled": true, "readOnly": false,
				"requestHeader": map[string]any{"enabled": true, "clientCAConfigMap": "front-proxy-ca"}},
			"metrics": map[string]any{"service": map[string]any{"enabled": true}},
		}},
	}
	for _, r := range renderings {
		manifests := must(chart.Render(ns, r.values))
		objs := must(chart.Objects(manifests))
		path := filepath.Join(t.TempDir(), "chart.yaml")
		if err := os.WriteFile(path, []byte(chart.YAML(manifests)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := mustKubectl(t, c.KubeconfigPath, "apply", "--server-side", "--field-manager=helm", "--dry-run=server", "-f", path)
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			line := resourceName(gvk.GroupKind()) + "/" + o.GetName() + " serverside-applied (server dry run)"
			if !strings.Contains(out, line) {
				t.Errorf("%s: %s %s was not accepted (no line %q)", r.name, gvk.Kind, o.GetName(), line)
			}
		}
		if n := strings.Count(out, "serverside-applied (server dry run)"); n != len(objs) || len(objs) < 10 {
			t.Errorf("%s: %d objects applied of %d rendered", r.name, n, len(objs))
		}
	}

	// The read-only dashboard's RBAC, for real, and what its account may do.
	applyDashboardRBAC(t, c, true)
	as := "--as=system:serviceaccount:" + ns + ":kroll-dashboard"
	for _, check := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "deployments.apps", "-A"}, "yes"},
		{[]string{"watch", "statefulsets.apps", "-A"}, "yes"},
		{[]string{"get", "pods", "--subresource=log", "-n", "default"}, "yes"},
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, "yes"},
		{[]string{"patch", "deployments.apps", "-n", "default"}, "no"},
		{[]string{"update", "deployments.apps", "-n", "default", "--subresource=scale"}, "no"},
		{[]string{"delete", "pods", "-n", "default"}, "no"},
		{[]string{"create", "events", "-n", "default"}, "no"},
		{[]string{"impersonate", "users"}, "no"},
		{[]string{"get", "secrets", "-n", ns}, "no"},
	} {
		// The answer is the last line; kubectl may warn above it ("the server doesn't
		// have a resource type users": impersonation's resources are not served).
		out, _ := kubectl(t, c.KubeconfigPath, append([]string{"auth", "can-i", as}, check.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := lines[len(lines)-1]; got != check.want {
			t.Errorf("kroll-dashboard (read-only) may %s: %q, want %s", strings.Join(check.args, " "), got, check.want)
		}
	}
}

// resourceName is how kubectl names objects of gk in its output ("deployment.apps",
// "serviceaccount").
func resourceName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return strings.ToLower(gk.Kind)
	}
	return strings.ToLower(gk.Kind) + "." + gk.Group
}
