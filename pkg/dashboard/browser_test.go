package dashboard

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Given the dashboard over a fake cluster and Debian's headless Chromium (which .ci/run
// installs), when the list is open and a Deployment is created, then the new row
// appears without a reload within a second, and the browser reports no
// Content-Security-Policy violation (htmx runs without eval or inline styles).
func TestBrowserListIsLiveUnderTheCSP(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (%v): install it with `apt-get install -y chromium`, as .ci/run does", err)
	}
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	step, stepCancel := context.WithTimeout(ctx, time.Minute)
	defer stepCancel()
	if err := chromedp.Do(step); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	var mu sync.Mutex
	var console []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String())
			mu.Unlock()
		}
	}()
	if err := chromedp.Do(step, chromedp.Navigate(h.http.URL+"/?token=secret-token-123"), chromedp.WaitVisible(`tr[data-workload="web/deployment/front"]`)); err != nil {
		t.Fatal(err)
	}
	// The event stream is open once htmx connected it; give it a moment to.
	time.Sleep(300 * time.Millisecond)
	if _, err := chromedp.Run(step, chromedp.Evaluate[bool](`window.krollMarker = true`)); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if _, err := h.client.AppsV1().Deployments("db").Create(context.Background(), deployment("db", "store", 1, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait, waitCancel := context.WithTimeout(ctx, time.Second)
	defer waitCancel()
	if err := chromedp.Do(wait, chromedp.WaitVisible(`tr[data-workload="db/deployment/store"][data-phase="Paused"]`)); err != nil {
		t.Errorf("the new Deployment did not appear on the open page within 1 s: %v", err)
	} else {
		t.Logf("the new row appeared %s after the create", time.Since(created).Round(time.Millisecond))
	}
	if same, err := chromedp.Run(step, chromedp.Evaluate[bool](`window.krollMarker === true`)); err != nil || !same {
		t.Errorf("the page was reloaded (%v): the row must come by the live stream", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range console {
		if strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Refused to") {
			t.Errorf("the browser reported: %s", line)
		}
	}
}
