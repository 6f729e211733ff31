package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// A target at an address only Dial can reach (a simulated pod's) is scraped, and its
// samples are answered by the HTTP API as a Prometheus answers them.
func TestRun_scrapesThroughDialAndAnswersQueries(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 42\nhttp_requests_total{code=\"500\"} 7\n")
	}))
	defer target.Close()
	const podAddr = "10.244.0.9:8080"
	dialled := make(chan string, 100)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case dialled <- addr:
		default:
		}
		if addr != podAddr {
			return nil, fmt.Errorf("no route to %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, target.Listener.Addr().String())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer runServer(t, Config{DataDir: t.TempDir(), Listener: l, Dial: dial, YAML: scrapeOne(podAddr)})()

	query := func(q string) (string, []string) { return queryAPI(l.Addr().String(), q) }
	deadline := time.Now().Add(30 * time.Second)
	var status string
	var values []string
	for time.Now().Before(deadline) {
		status, values = query(`sum by (namespace, code) (http_requests_total)`)
		if len(values) == 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status != "success" || len(values) != 2 || values[0] != "shop/200=42" || values[1] != "shop/500=7" {
		t.Fatalf("query: status %q, values %q; want success, [shop/200=42 shop/500=7]", status, values)
	}
	if got := <-dialled; got != podAddr {
		t.Errorf("dialled %q, want the pod's address %q", got, podAddr)
	}
	if status, _ := query(`sum(`); status != "error" {
		t.Errorf("a query that does not parse: status %q, want error", status)
	}
}

func TestRun_aBadConfigurationIsOneError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Config{DataDir: t.TempDir(), Listener: l, YAML: "scrape_configs: [{job_name: a, scrape_interval: nope}]"})
	if err == nil {
		t.Fatal("a configuration that does not parse was accepted")
	}
	t.Log(err)
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Error("the listener was left open")
	}
}

// queryAPI asks the HTTP API at addr for q: its status, and each series as
// "namespace/code=value".
func queryAPI(addr, q string) (status string, values []string) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return err.Error(), nil
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err.Error(), nil
	}
	for _, r := range body.Data.Result {
		values = append(values, fmt.Sprintf("%s/%s=%v", r.Metric["namespace"], r.Metric["code"], r.Value[1]))
	}
	return body.Status, values
}

// Run again on the data directory and address of a Run that ended answers with the
// samples the first one scraped: the TSDB's lock and the listener were given back,
// as a Prometheus stopped and started again (the cluster's StopPrometheus) needs.
func TestRun_againOnTheSameDirectoryAndAddressKeepsTheSamples(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 42\n")
	}))
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	yaml := scrapeOne(target.Listener.Addr().String())
	run := func(l net.Listener) (stop func()) { return runServer(t, Config{DataDir: dir, Listener: l, YAML: yaml}) }
	stop := run(l)
	const q = `max_over_time(http_requests_total[5m])`
	deadline := time.Now().Add(30 * time.Second)
	for _, v := queryAPI(addr, q); len(v) == 0 && time.Now().Before(deadline); _, v = queryAPI(addr, q) {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	target.Close() // nothing more to scrape: what the second run answers, the first kept
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the first run still listens")
	}

	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	defer run(l)()
	var status string
	var values []string
	for deadline = time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status, values = queryAPI(addr, q); status == "success" {
			break
		}
	}
	if status != "success" || len(values) != 1 || values[0] != "shop/200=42" {
		t.Errorf("the second run answered %q %q; want success, [shop/200=42] from the first run's samples", status, values)
	}
}

// scrapeOne is a configuration scraping target every second, as namespace shop's.
func scrapeOne(target string) string {
	return `
global:
  scrape_interval: 1s
scrape_configs:
- job_name: pods
  static_configs:
  - targets: ["` + target + `"]
    labels: {namespace: shop}
`
}

// runServer runs Run(cfg) until the returned stop, which waits for it to return
// and fails t if it returned an error, or did not return within 10 s.
func runServer(t *testing.T, cfg Config) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}
