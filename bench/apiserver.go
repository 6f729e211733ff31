package bench

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// requestCounts are API requests served, by verb as the API server counts them
// (apiserver_request_total: GET, LIST, WATCH, POST, PUT, PATCH, DELETE, ...).
type requestCounts map[string]float64

var (
	verbLabel        = regexp.MustCompile(`verb="([A-Z]+)"`)
	resourceLabel    = regexp.MustCompile(`resource="([^"]*)"`)
	subresourceLabel = regexp.MustCompile(`subresource="([^"]*)"`)
)

// countRequests reads the API server's request counters: by verb, and the writes by
// verb and resource ("PUT replicasets/status"), which say whose writes they are. The
// kubelets' node status reports (a GET and a PUT per node every minute), node Leases
// and leader-election Leases are left out: they tick with time, not with work, and no
// controller writes them.
func countRequests(ctx context.Context, client kubernetes.Interface) (byVerb, writes requestCounts, err error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, nil, err
	}
	byVerb, writes = requestCounts{}, requestCounts{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		verb, resource := verbLabel.FindStringSubmatch(line), resourceLabel.FindStringSubmatch(line)
		if verb == nil || (resource != nil && (resource[1] == "leases" || resource[1] == "nodes")) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		byVerb[verb[1]] += n
		if isWrite(verb[1]) && resource != nil {
			key := verb[1] + " " + resource[1]
			if sub := subresourceLabel.FindStringSubmatch(line); sub != nil && sub[1] != "" {
				key += "/" + sub[1]
			}
			writes[key] += n
		}
	}
	return byVerb, writes, nil
}

// isWrite reports whether verb, as the API server counts it, changes something.
func isWrite(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		return true
	}
	return false
}

// since is the requests served between before and c.
func (c requestCounts) since(before requestCounts) requestCounts {
	d := requestCounts{}
	for verb, n := range c {
		if n -= before[verb]; n > 0 {
			d[verb] = n
		}
	}
	return d
}

// writes sums the write verbs.
func (c requestCounts) writes() float64 {
	return c["POST"] + c["PUT"] + c["PATCH"] + c["DELETE"] + c["APPLY"]
}
