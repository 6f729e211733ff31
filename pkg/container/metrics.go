package container

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MetricsPath is where every HTTP server of the model answers with its request
// metrics in Prometheus' text format, on each HTTP port it serves (an image kroll has
// no model of: on every port).
const MetricsPath = "/metrics"

// MetricsContentType is the content type of the text format (version 0.0.4), as
// client_golang's handler sends it.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// Traffic is the steady synthetic load a container's HTTP server is taken to serve:
// no client sends it, it is counted from how long the server has been serving. It
// feeds http_requests_total and http_request_duration_seconds, so that a rollout can
// be judged by the error ratio and latency of a new version as a real service's would
// be. The zero value is a healthy server under the default load.
type Traffic struct {
	// Rate is requests a second; zero means DefaultRate, negative none at all.
	Rate float64
	// ErrorRatio is the fraction of requests answered 500, 0 to 1: after n requests,
	// floor(n·ErrorRatio) of them failed (counted, not drawn at random: two scrapes at
	// one instant read the same numbers, and a 30 s window at 10/s with 0.2 holds
	// 300 requests and 60 errors, give or take the one being counted).
	ErrorRatio float64
	// Latency is how long every request takes; zero means DefaultLatency.
	Latency time.Duration
}

// The load of a server without a fault: 10 requests a second per pod, answered in
// 5 ms. 10,000 pods cost nothing for it: the counters are computed when read.
const (
	DefaultRate    = 10
	DefaultLatency = 5 * time.Millisecond
)

// DurationBuckets are the upper bounds, in seconds, of the request-duration
// histogram: client_golang's default buckets, which most services keep.
var DurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// RequestCounts is what a server has answered by an instant under its Traffic.
type RequestCounts struct {
	Total, Errors int64
	Latency       time.Duration
}

// Counts is the load's requests after serving for d: Total = floor(d·Rate) and
// Errors = floor(Total·ErrorRatio), the ratio read in millionths so that 0.29 of
// 100 requests is 29, not the 28 of floating point's 28.999….
func (t Traffic) Counts(d time.Duration) RequestCounts {
	rate, lat := t.Rate, t.Latency
	if rate == 0 {
		rate = DefaultRate
	}
	if lat == 0 {
		lat = DefaultLatency
	}
	if rate < 0 || d <= 0 {
		return RequestCounts{Latency: lat}
	}
	total := int64(d.Seconds() * rate)
	ppm := int64(math.Round(min(max(t.ErrorRatio, 0), 1) * 1e6))
	return RequestCounts{Total: total, Errors: total * ppm / 1e6, Latency: lat}
}

// Exposition renders counts in the text format: http_requests_total by code and
// method, and the duration histogram. As client_golang's instrumented handlers do, a
// code no request got is absent rather than zero: a query for the 5xx ratio of a
// healthy server finds no 5xx series (write `or vector(0)`, or say what an empty
// result means).
func (rc RequestCounts) Exposition() string {
	var b strings.Builder
	b.WriteString("# HELP http_requests_total Requests answered, by status code and method (the simulated node's synthetic load).\n")
	b.WriteString("# TYPE http_requests_total counter\n")
	if ok := rc.Total - rc.Errors; ok > 0 {
		fmt.Fprintf(&b, "http_requests_total{code=\"200\",method=\"get\"} %d\n", ok)
	}
	if rc.Errors > 0 {
		fmt.Fprintf(&b, "http_requests_total{code=\"500\",method=\"get\"} %d\n", rc.Errors)
	}
	b.WriteString("# HELP http_request_duration_seconds Time taken to answer requests (the simulated node's synthetic load).\n")
	b.WriteString("# TYPE http_request_duration_seconds histogram\n")
	secs := rc.Latency.Seconds()
	for _, le := range DurationBuckets {
		n := int64(0)
		if secs <= le {
			n = rc.Total
		}
		fmt.Fprintf(&b, "http_request_duration_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(le, 'g', -1, 64), n)
	}
	fmt.Fprintf(&b, "http_request_duration_seconds_bucket{le=\"+Inf\"} %d\n", rc.Total)
	fmt.Fprintf(&b, "http_request_duration_seconds_sum %s\n", strconv.FormatFloat(float64(rc.Total)*secs, 'g', -1, 64))
	fmt.Fprintf(&b, "http_request_duration_seconds_count %d\n", rc.Total)
	return b.String()
}

// ContentType is the content type of what a server of the model answers on path.
func ContentType(p string) string {
	p, _, _ = strings.Cut(p, "?")
	if cleanPath(p) == MetricsPath {
		return MetricsContentType
	}
	return "text/html"
}
