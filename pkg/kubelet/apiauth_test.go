package kubelet

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestRouteOf(t *testing.T) {
	tests := []struct {
		path string
		want apiRoute
	}{
		{"/healthz", apiRoute{kind: "healthz"}},
		{"/containerLogs/ns/web-0/nginx", apiRoute{kind: "containerLogs", namespace: "ns", pod: "web-0", container: "nginx"}},
		{"/exec/ns/web-0/nginx", apiRoute{kind: "exec", namespace: "ns", pod: "web-0", container: "nginx"}},
		{"/exec/ns/web-0/uid-1/nginx", apiRoute{kind: "exec", namespace: "ns", pod: "web-0", uid: "uid-1", container: "nginx"}},
		{"/attach/ns/web-0/nginx", apiRoute{kind: "attach", namespace: "ns", pod: "web-0", container: "nginx"}},
		{"/portForward/ns/web-0", apiRoute{kind: "portForward", namespace: "ns", pod: "web-0"}},
		{"/portForward/ns/web-0/uid-1", apiRoute{kind: "portForward", namespace: "ns", pod: "web-0", uid: "uid-1"}},
		{"/containerLogs/ns/web-0", apiRoute{}},
		{"/exec/ns", apiRoute{}},
		{"/stats/summary", apiRoute{}},
		{"/", apiRoute{}},
	}
	for _, tt := range tests {
		if got := routeOf(tt.path); got != tt.want {
			t.Errorf("routeOf(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

func TestNodeAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "kube-apiserver-kubelet-client"}
	tests := []struct {
		method, path     string
		verb, subresourc string
	}{
		{"GET", "/containerLogs/ns/p/c", "get", "proxy"},
		{"POST", "/exec/ns/p/c", "create", "proxy"},
		{"GET", "/exec/ns/p/c", "get", "proxy"},
		{"POST", "/portForward/ns/p", "create", "proxy"},
		{"GET", "/healthz", "get", "healthz"},
		{"GET", "/logs/", "get", "log"},
		{"GET", "/stats/summary", "get", "stats"},
		{"GET", "/metrics", "get", "metrics"},
		{"PUT", "/run/ns/p/c", "update", "proxy"},
	}
	for _, tt := range tests {
		a := nodeAttributes(u, "kroll-node-1", tt.method, tt.path)
		if a.Verb != tt.verb || a.Subresource != tt.subresourc || a.Resource != "nodes" || a.Name != "kroll-node-1" || !a.ResourceRequest {
			t.Errorf("%s %s: %s nodes/%s %q, want %s nodes/%s", tt.method, tt.path, a.Verb, a.Subresource, a.Name, tt.verb, tt.subresourc)
		}
	}
}
