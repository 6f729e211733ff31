package metrics

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Request is what an API request does, in RBAC's terms: the verb, API group, resource
// and subresource an authorizer checks it against.
type Request struct {
	Verb, Group, Resource, Subresource string
}

// RequestOf reads an API request's method and URL the way the API server does:
// /api/v1/namespaces/NS/pods/NAME/status is an update of pods/status in group "".
// Paths outside /api and /apis are non-resource requests: verb is the lower-case
// method, Resource the path.
func RequestOf(method string, u *url.URL) Request {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var r Request
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		r.Group, parts = parts[1], parts[3:]
	default:
		return Request{Verb: strings.ToLower(method), Resource: u.Path}
	}
	// namespaces/NS/RESOURCE... is a namespaced request; namespaces[/NAME[/SUB]] is one
	// on namespaces themselves, status and finalize being a namespace's subresources.
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		parts = parts[2:]
	}
	named := len(parts) >= 2
	if len(parts) >= 1 {
		r.Resource = parts[0]
	}
	if len(parts) >= 3 {
		r.Subresource = parts[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case named:
			r.Verb = "get"
		case u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1":
			r.Verb = "watch"
		default:
			r.Verb = "list"
		}
	case http.MethodPost:
		r.Verb = "create"
	case http.MethodPut:
		r.Verb = "update"
	case http.MethodPatch:
		r.Verb = "patch"
	case http.MethodDelete:
		if named {
			r.Verb = "delete"
		} else {
			r.Verb = "deletecollection"
		}
	default:
		r.Verb = strings.ToLower(method)
	}
	return r
}

// InstrumentTransport returns a wrapper (for rest.Config.Wrap) that counts each request
// of client in APIRequests and times it in APIRequestDuration.
func InstrumentTransport(client string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			r := RequestOf(req.Method, req.URL)
			start := time.Now()
			resp, err := next.RoundTrip(req)
			code := "<error>"
			if err == nil {
				code = strconv.Itoa(resp.StatusCode)
			}
			APIRequests.WithLabelValues(client, r.Verb, r.Group, r.Resource, r.Subresource, code).Inc()
			if r.Verb != "watch" {
				APIRequestDuration.WithLabelValues(client, r.Verb).Observe(time.Since(start).Seconds())
			}
			return resp, err
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
