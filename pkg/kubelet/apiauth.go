package kubelet

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// apiRoute is what a request to a node's kubelet API asks for: the handler it goes to
// and, for the ones about a container, the pod and container.
type apiRoute struct {
	kind      string // "healthz", "containerLogs", "exec", "attach", "portForward"; "" when unknown
	namespace string
	pod       string
	uid       string
	container string
}

// routeOf reads a kubelet API path: /healthz, /containerLogs/{ns}/{pod}/{container},
// /exec|/attach/{ns}/{pod}[/{uid}]/{container}, /portForward/{ns}/{pod}[/{uid}].
func routeOf(path string) apiRoute {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "healthz":
		return apiRoute{kind: "healthz"}
	case len(parts) == 4 && parts[0] == "containerLogs":
		return apiRoute{kind: parts[0], namespace: parts[1], pod: parts[2], container: parts[3]}
	case (parts[0] == "exec" || parts[0] == "attach") && len(parts) == 4:
		return apiRoute{kind: parts[0], namespace: parts[1], pod: parts[2], container: parts[3]}
	case (parts[0] == "exec" || parts[0] == "attach") && len(parts) == 5:
		return apiRoute{kind: parts[0], namespace: parts[1], pod: parts[2], uid: parts[3], container: parts[4]}
	case parts[0] == "portForward" && len(parts) == 3:
		return apiRoute{kind: parts[0], namespace: parts[1], pod: parts[2]}
	case parts[0] == "portForward" && len(parts) == 4:
		return apiRoute{kind: parts[0], namespace: parts[1], pod: parts[2], uid: parts[3]}
	}
	return apiRoute{}
}

// nodeSubresource is the subresource of nodes a kubelet API path is authorized as, as
// the kubelet maps it: /stats → stats, /metrics → metrics, /logs → log, /healthz →
// healthz, /configz → configz, /pods → pods, and everything else (containerLogs, exec,
// attach, portForward, run) → proxy.
func nodeSubresource(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case "stats":
		return "stats"
	case "metrics":
		return "metrics"
	case "logs":
		return "log"
	case "healthz":
		return "healthz"
	case "configz":
		return "configz"
	case "pods":
		return "pods"
	}
	return "proxy"
}

// verbOf is the authorization verb of an HTTP method, as for any API request.
func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}

// nodeAttributes are the authorization attributes of a request by u to node's kubelet
// API: a resource request on nodes/{subresource} named for the node.
func nodeAttributes(u user.Info, node, method, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: u, Verb: verbOf(method), APIGroup: "", APIVersion: "v1", Resource: "nodes",
		Subresource: nodeSubresource(path), Name: node, ResourceRequest: true, Path: path,
	}
}
