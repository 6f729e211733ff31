package metrics

import (
	"net/url"
	"testing"
)

func TestRequestOf(t *testing.T) {
	tests := []struct {
		method, url string
		want        Request
	}{
		{"GET", "/api/v1/namespaces/ns/pods/web-0", Request{"get", "", "pods", ""}},
		{"GET", "/api/v1/pods?limit=500", Request{"list", "", "pods", ""}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true&sendInitialEvents=true", Request{"watch", "", "pods", ""}},
		{"POST", "/apis/apps/v1/namespaces/ns/replicasets", Request{"create", "apps", "replicasets", ""}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/web/status", Request{"update", "apps", "deployments", "status"}},
		{"PATCH", "/api/v1/namespaces/ns/pods/web-0/status", Request{"patch", "", "pods", "status"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/controllerrevisions/web-1", Request{"delete", "apps", "controllerrevisions", ""}},
		{"DELETE", "/api/v1/namespaces/ns/pods", Request{"deletecollection", "", "pods", ""}},
		{"GET", "/api/v1/nodes", Request{"list", "", "nodes", ""}},
		{"GET", "/api/v1/namespaces/kube-system", Request{"get", "", "namespaces", ""}},
		{"PUT", "/api/v1/namespaces/old/finalize", Request{"update", "", "namespaces", "finalize"}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kroll-controller-manager", Request{"update", "coordination.k8s.io", "leases", ""}},
		{"GET", "/version", Request{"get", "", "/version", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := RequestOf(tt.method, u); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
