package container

import (
	"strings"
	"testing"
	"time"
)

func TestTrafficCounts(t *testing.T) {
	cases := []struct {
		name    string
		traffic Traffic
		after   time.Duration
		want    RequestCounts
	}{
		{"a healthy server: 10/s for 30s is 300 requests, none failed, 5ms each", Traffic{}, 30 * time.Second, RequestCounts{Total: 300, Latency: 5 * time.Millisecond}},
		{"ErrorRate(0.2) for 30s: 60 of 300 failed", Traffic{ErrorRatio: 0.2}, 30 * time.Second, RequestCounts{Total: 300, Errors: 60, Latency: 5 * time.Millisecond}},
		{"0.29 of 100 requests is 29, not floating point's 28", Traffic{ErrorRatio: 0.29}, 10 * time.Second, RequestCounts{Total: 100, Errors: 29, Latency: 5 * time.Millisecond}},
		{"a request not yet complete is not counted: 10/s for 1.29s is 12", Traffic{}, 1290 * time.Millisecond, RequestCounts{Total: 12, Latency: 5 * time.Millisecond}},
		{"errors are floored: 0.2 of 12 is 2", Traffic{ErrorRatio: 0.2}, 1290 * time.Millisecond, RequestCounts{Total: 12, Errors: 2, Latency: 5 * time.Millisecond}},
		{"Latency(300ms) at 2/s for a minute", Traffic{Rate: 2, Latency: 300 * time.Millisecond}, time.Minute, RequestCounts{Total: 120, Latency: 300 * time.Millisecond}},
		{"every request fails at 1", Traffic{ErrorRatio: 1}, 3 * time.Second, RequestCounts{Total: 30, Errors: 30, Latency: 5 * time.Millisecond}},
		{"a negative rate is no load", Traffic{Rate: -1, ErrorRatio: 0.5}, time.Hour, RequestCounts{Latency: 5 * time.Millisecond}},
		{"not serving yet", Traffic{}, -time.Second, RequestCounts{Latency: 5 * time.Millisecond}},
	}
	for _, tc := range cases {
		if got := tc.traffic.Counts(tc.after); got != tc.want {
			t.Errorf("%s: Counts = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestExposition(t *testing.T) {
	got := RequestCounts{Total: 300, Errors: 60, Latency: 300 * time.Millisecond}.Exposition()
	for _, line := range []string{
		"# TYPE http_requests_total counter",
		`http_requests_total{code="200",method="get"} 240`,
		`http_requests_total{code="500",method="get"} 60`,
		"# TYPE http_request_duration_seconds histogram",
		`http_request_duration_seconds_bucket{le="0.25"} 0`,
		`http_request_duration_seconds_bucket{le="0.5"} 300`,
		`http_request_duration_seconds_bucket{le="10"} 300`,
		`http_request_duration_seconds_bucket{le="+Inf"} 300`,
		"http_request_duration_seconds_sum 90",
		"http_request_duration_seconds_count 300",
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("exposition lacks %q:\n%s", line, got)
		}
	}
	// A bound equal to the latency holds it (le is "less than or equal").
	if got := (RequestCounts{Total: 7, Latency: 5 * time.Millisecond}).Exposition(); !strings.Contains(got, `_bucket{le="0.005"} 7`+"\n") {
		t.Errorf("5ms is not in the 0.005 bucket:\n%s", got)
	}
	// A healthy server has no 500 series, as client_golang's handlers have none.
	if got := (RequestCounts{Total: 10, Latency: time.Millisecond}).Exposition(); strings.Contains(got, `code="500"`) {
		t.Errorf("a server without errors shows a 500 series:\n%s", got)
	}
}

// /metrics is answered on each HTTP port of a server, from when it began serving,
// and on nothing else.
func TestInstanceMetrics(t *testing.T) {
	cases := []struct {
		name    string
		spec    Spec
		port    int32
		at      time.Duration
		want    string // a line of the answer; "" when the request fails with err
		wantErr error
	}{
		{"nginx on 80 after 30s", Spec{Image: "nginx:1.27"}, 80, 30 * time.Second, `http_requests_total{code="200",method="get"} 300`, nil},
		{"nginx with ErrorRate(0.2)", Spec{Image: "nginx:1.27", Traffic: Traffic{ErrorRatio: 0.2}}, 80, 30 * time.Second, `http_requests_total{code="500",method="get"} 60`, nil},
		{"agnhost netexec on its --http-port", Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec", "--http-port=8080"}}, 8080, 10 * time.Second, "http_request_duration_seconds_count 100", nil},
		{"an image without a model, on any port", Spec{Image: "example.com/team/app:v2", Traffic: Traffic{Latency: 300 * time.Millisecond}}, 9090, 10 * time.Second, `http_request_duration_seconds_bucket{le="0.25"} 0`, nil},
		{"a server that starts after a 5s sleep counts from then", Spec{Image: "nginx:1.27", Command: []string{"sh", "-c", "sleep 5; nginx -g 'daemon off;'"}}, 80, 8 * time.Second, "http_request_duration_seconds_count 30", nil},
		{"redis speaks no HTTP", Spec{Image: "redis:7"}, 6379, time.Minute, "", ErrNotHTTP},
		{"nothing on 81", Spec{Image: "nginx:1.27"}, 81, time.Minute, "", ErrRefused},
	}
	for _, tc := range cases {
		c := Start(tc.spec, t0)
		code, body, err := c.Request(t0.Add(tc.at), "http", tc.port, "/metrics", Client{Addr: "10.244.0.1", Agent: "Prometheus/3.0"})
		if err != tc.wantErr {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.wantErr == nil && (code != 200 || !strings.Contains(body, tc.want+"\n")) {
			t.Errorf("%s: %d, want 200 with %q:\n%s", tc.name, code, tc.want, body)
		}
		// Scraped again at the same instant: the same answer.
		if _, again, _ := c.Request(t0.Add(tc.at), "http", tc.port, "/metrics", Client{}); again != body {
			t.Errorf("%s: a second scrape at the same instant differs:\n%s\n---\n%s", tc.name, body, again)
		}
	}
	if got := ContentType("/metrics?x=1"); got != MetricsContentType {
		t.Errorf("ContentType(/metrics) = %q", got)
	}
	if got := ContentType("/"); got != "text/html" {
		t.Errorf("ContentType(/) = %q", got)
	}
}
