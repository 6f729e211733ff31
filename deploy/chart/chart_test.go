package chart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const namespace = "kroll-system"

// dashboardOn is the values of `--set dashboard.enabled=true`.
var dashboardOn = map[string]any{"dashboard": map[string]any{"enabled": true}}

func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	manifests, err := Render(namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	// Strictly: a key twice in one mapping (two templates both setting a label) is
	// an error for kubectl and for Helm's own apply.
	for name, text := range manifests {
		for i, doc := range strings.Split(text, "\n---") {
			var v map[string]any
			if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
				t.Errorf("%s, document %d: %v", name, i+1, err)
			}
		}
	}
	objs, err := Objects(manifests)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find is the rendered object of kind and name; nil when there is none.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// typed converts a rendered object to its API type.
func typed[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %s rendered; rendered: %v", kind, name, names(objs))
	}
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &out, true); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	return &out
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		n := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			n = o.GetKind() + " " + ns + "/" + o.GetName()
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// `helm lint` through the SDK: no message but the INFO that the chart has no icon
// (kroll has no logo), for the default values and with the dashboard on.
func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{"default": nil, "dashboard.enabled=true": dashboardOn} {
		t.Run(name, func(t *testing.T) {
			result := lint.RunAll(Dir, values, namespace)
			for _, m := range result.Messages {
				if m.Severity == support.InfoSev && strings.Contains(m.Err.Error(), "icon is recommended") {
					continue
				}
				t.Errorf("helm lint: %s", m)
			}
			if result.HighestSeverity > support.InfoSev {
				t.Errorf("helm lint fails: highest severity %d", result.HighestSeverity)
			}
		})
	}
}

// The default values install the controller manager, its RBAC, its disruption budget
// and the admission policy, and nothing of the dashboard.
func TestRenderDefault(t *testing.T) {
	objs := render(t, nil)
	want := []string{
		"ClusterRole kroll-controller-manager", "ClusterRole kroll-metrics-reader",
		"ClusterRoleBinding kroll-controller-manager",
		"Deployment kroll-system/kroll-controller-manager",
		"PodDisruptionBudget kroll-system/kroll-controller-manager",
		"Role kroll-system/kroll-controller-manager-leader-election",
		"RoleBinding kroll-system/kroll-controller-manager-leader-election",
		"RoleBinding kube-system/kroll-controller-manager-authentication-reader",
		"ServiceAccount kroll-system/kroll-controller-manager",
		"ValidatingAdmissionPolicy kroll-settings", "ValidatingAdmissionPolicyBinding kroll-settings",
	}
	if got := names(objs); !slices.Equal(got, want) {
		t.Errorf("rendered\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	d := typed[appsv1.Deployment](t, objs, "Deployment", "kroll-controller-manager")
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "kroll-controller-manager" {
		t.Errorf("replicas %d, service account %q; want 2 and kroll-controller-manager", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
	}
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"controller-manager", "--controllers=*", "--leader-elect=true",
		"--leader-elect-resource-namespace=kroll-system", "--leader-elect-resource-name=kroll-controller-manager",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
		"--kube-api-qps=20", "--kube-api-burst=30", "--secure-port=10270"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	if c.Image != "ghcr.io/kroll-dev/kroll:latest" || c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("image %s, resources %v", c.Image, c.Resources)
	}
	if a := d.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "10270" || a["prometheus.io/scheme"] != "https" {
		t.Errorf("pod annotations %v, want prometheus.io scrape, port 10270 and scheme https", a)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes %v %v", c.ReadinessProbe, c.LivenessProbe)
	}
}

// The values people change reach the manager's flags and pod.
func TestRenderManagerValues(t *testing.T) {
	objs := render(t, map[string]any{
		"controllerManager": map[string]any{
			"replicas": 1, "controllers": []any{"deployment", "replicaset"},
			"leaderElection": map[string]any{"enabled": false},
			"resources":      map[string]any{"limits": map[string]any{"memory": "2Gi"}},
			"tlsSecretName":  "kroll-tls", "extraArgs": []any{"--v=2"},
		},
		"image":   map[string]any{"tag": "v1.2.3"},
		"metrics": map[string]any{"service": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
	})
	d := typed[appsv1.Deployment](t, objs, "Deployment", "kroll-controller-manager")
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"controller-manager", "--controllers=deployment,replicaset", "--leader-elect=false",
		"--kube-api-qps=20", "--kube-api-burst=30", "--secure-port=10270",
		"--tls-cert-file=/etc/kroll/tls/tls.crt", "--tls-private-key-file=/etc/kroll/tls/tls.key", "--v=2"}
	if !slices.Equal(c.Args, wantArgs) || *d.Spec.Replicas != 1 || c.Image != "ghcr.io/kroll-dev/kroll:v1.2.3" {
		t.Errorf("args %q, replicas %d, image %s; want %q, 1, the v1.2.3 tag", c.Args, *d.Spec.Replicas, c.Image, wantArgs)
	}
	if c.Resources.Limits.Memory().String() != "2Gi" || len(d.Spec.Template.Spec.Volumes) != 1 || d.Spec.Template.Spec.Volumes[0].Secret.SecretName != "kroll-tls" {
		t.Errorf("limits %v, volumes %v", c.Resources.Limits, d.Spec.Template.Spec.Volumes)
	}
	if find(objs, "PodDisruptionBudget", "kroll-controller-manager") != nil {
		t.Errorf("one replica got a disruption budget of minAvailable 1: it could never be drained")
	}
	sm := find(objs, "ServiceMonitor", "kroll-controller-manager")
	svc := find(objs, "Service", "kroll-controller-manager-metrics")
	if sm == nil || svc == nil || sm.GetLabels()["release"] != "prom" {
		t.Fatalf("ServiceMonitor %v, Service %v", sm, svc)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "https-metrics" || eps[0].(map[string]any)["scheme"] != "https" {
		t.Errorf("ServiceMonitor endpoints %v, want https on port https-metrics", eps)
	}
}

// Values that cannot work are refused with a line saying why.
func TestRenderRefuses(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"two replicas without leader election", map[string]any{"controllerManager": map[string]any{"leaderElection": map[string]any{"enabled": false}}}, "needs controllerManager.leaderElection.enabled"},
		{"a ServiceMonitor without its Service", map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}, "needs metrics.service.enabled"},
		{"the dashboard without TLS", map[string]any{"dashboard": map[string]any{"enabled": true, "tlsSecretName": ""}}, "dashboard.tlsSecretName is required"},
		{"request headers without their CA", map[string]any{"dashboard": map[string]any{"enabled": true, "requestHeader": map[string]any{"enabled": true}}}, "needs dashboard.requestHeader.clientCAConfigMap"},
		// values.schema.json: typos and wrong types are refused, not silently ignored.
		{"a misspelt key", map[string]any{"dashboard": map[string]any{"enable": true}}, "additional properties 'enable' not allowed"},
		{"a controller kroll does not have", map[string]any{"controllerManager": map[string]any{"controllers": []any{"deploy"}}}, "'deploy' does not match pattern"},
		{"replicas as words", map[string]any{"controllerManager": map[string]any{"replicas": "two"}}, "/controllerManager/replicas': got string, want integer"},
		{"a lease duration without its unit", map[string]any{"controllerManager": map[string]any{"leaderElection": map[string]any{"leaseDuration": "15"}}}, "leaseDuration"},
	}
	for _, tt := range tests {
		if _, err := Render(namespace, tt.values); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

// rbacFile is deploy/rbac.yaml's objects.
func rbacFile(t *testing.T) []*unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join("..", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(map[string]string{"rbac.yaml": string(data)})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The chart grants exactly what deploy/rbac.yaml grants (which e2e/manager_test.go
// proves minimal and sufficient): the same rules in the ClusterRole, the leader
// Role and the metrics reader, bound the same way.
func TestRBACEqualsDeployRBAC(t *testing.T) {
	chart, raw := render(t, nil), rbacFile(t)
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, name := range []string{"kroll-controller-manager", "kroll-controller-manager-leader-election", "kroll-metrics-reader"} {
			if find(raw, kind, name) == nil {
				continue
			}
			var got, want []rbacv1.PolicyRule
			if kind == "ClusterRole" {
				got, want = typed[rbacv1.ClusterRole](t, chart, kind, name).Rules, typed[rbacv1.ClusterRole](t, raw, kind, name).Rules
			} else {
				got, want = typed[rbacv1.Role](t, chart, kind, name).Rules, typed[rbacv1.Role](t, raw, kind, name).Rules
			}
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: the chart's rules differ from deploy/rbac.yaml's:\nchart: %v\nfile:  %v", kind, name, got, want)
			}
		}
	}
	for _, b := range []struct{ kind, name string }{
		{"ClusterRoleBinding", "kroll-controller-manager"},
		{"RoleBinding", "kroll-controller-manager-leader-election"},
		{"RoleBinding", "kroll-controller-manager-authentication-reader"},
	} {
		got, want := typed[rbacv1.RoleBinding](t, chart, b.kind, b.name), typed[rbacv1.RoleBinding](t, raw, b.kind, b.name)
		if got.Namespace != want.Namespace || !reflect.DeepEqual(got.RoleRef, want.RoleRef) || !reflect.DeepEqual(got.Subjects, want.Subjects) {
			t.Errorf("%s %s: chart binds %v to %v in %q, deploy/rbac.yaml %v to %v in %q", b.kind, b.name, got.RoleRef, got.Subjects, got.Namespace, want.RoleRef, want.Subjects, want.Namespace)
		}
	}
}

// The admission policy the chart installs is deploy/admission-policy.yaml, byte for byte.
func TestAdmissionPolicyIsDeployFile(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := files.ReadFile(Dir + "/files/admission-policy.yaml")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("deploy/chart/kroll/files/admission-policy.yaml differs from deploy/admission-policy.yaml (%v): copy it again", err)
	}
	if objs := render(t, map[string]any{"admissionPolicy": map[string]any{"enabled": false}}); find(objs, "ValidatingAdmissionPolicy", "kroll-settings") != nil {
		t.Errorf("admissionPolicy.enabled=false still installs the policy")
	}
}

// dashboardRules is the dashboard's ClusterRole rules as "verb group/resource" lines.
func dashboardRules(t *testing.T, objs []*unstructured.Unstructured) []string {
	var out []string
	for _, r := range typed[rbacv1.ClusterRole](t, objs, "ClusterRole", "kroll-dashboard").Rules {
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					out = append(out, v+" "+g+"/"+res)
				}
			}
		}
	}
	return out
}

// dashboard.enabled=true adds `kroll dashboard --in-cluster --read-only` over HTTPS,
// its Service, and a role that reads and reviews tokens and access only; with actions on
// (readOnly false) it may impersonate as well, and still writes nothing itself.
func TestRenderDashboard(t *testing.T) {
	objs := render(t, dashboardOn)
	d := typed[appsv1.Deployment](t, objs, "Deployment", "kroll-dashboard")
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"dashboard", "--in-cluster", "--port=8443", "--read-only",
		"--tls-cert-file=/etc/kroll/tls/tls.crt", "--tls-private-key-file=/etc/kroll/tls/tls.key"}
	if !slices.Equal(c.Args, wantArgs) || d.Spec.Template.Spec.ServiceAccountName != "kroll-dashboard" {
		t.Errorf("args %q (service account %s), want %q", c.Args, d.Spec.Template.Spec.ServiceAccountName, wantArgs)
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret.SecretName != "kroll-dashboard-tls" {
		t.Errorf("volumes %v, want the kroll-dashboard-tls Secret", v)
	}
	svc := find(objs, "Service", "kroll-dashboard")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "443" || ports[0].(map[string]any)["targetPort"] != "https" {
		t.Errorf("dashboard Service ports %v, want 443 → https", ports)
	}
	readOnly := dashboardRules(t, objs)
	actions := dashboardRules(t, render(t, map[string]any{"dashboard": map[string]any{"enabled": true, "readOnly": false}}))
	for mode, rules := range map[string][]string{"read-only": readOnly, "with actions": actions} {
		for _, r := range rules {
			verb, _, _ := strings.Cut(r, " ")
			if !slices.Contains([]string{"get", "list", "watch", "impersonate"}, verb) &&
				r != "create authentication.k8s.io/tokenreviews" && r != "create authorization.k8s.io/subjectaccessreviews" {
				t.Errorf("%s: the dashboard's role grants %q: it may only read and impersonate", mode, r)
			}
			if verb == "impersonate" && mode == "read-only" {
				t.Errorf("read-only: the dashboard's role grants %q", r)
			}
		}
	}
	for _, r := range []string{"watch apps/deployments", "get /pods/log", "impersonate /users", "impersonate /groups"} {
		if !slices.Contains(actions, r) {
			t.Errorf("with actions: the dashboard's role lacks %q: %v", r, actions)
		}
	}
	if slices.Contains(readOnly, "impersonate /users") || !slices.Contains(readOnly, "list /pods") {
		t.Errorf("read-only rules %v", readOnly)
	}
	withProxy := render(t, map[string]any{"dashboard": map[string]any{"enabled": true, "requestHeader": map[string]any{"enabled": true, "clientCAConfigMap": "front-proxy-ca", "allowedNames": []any{"front-proxy"}}}})
	args := typed[appsv1.Deployment](t, withProxy, "Deployment", "kroll-dashboard").Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--requestheader-client-ca-file=/etc/kroll/requestheader/ca.crt", "--requestheader-allowed-names=front-proxy",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-"} {
		if !slices.Contains(args, a) {
			t.Errorf("with requestHeader: args %q lack %s", args, a)
		}
	}
}

// values.yaml parses, and every top-level key is documented by a comment.
func TestValuesFile(t *testing.T) {
	data, err := files.ReadFile(Dir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"image", "controllerManager", "serviceAccount", "rbac", "metrics", "admissionPolicy", "dashboard"} {
		if _, ok := v[key]; !ok {
			t.Errorf("values.yaml has no %s", key)
		}
	}
}
