package dashboard

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Given the dashboard over a fake cluster and Debian's headless Chromium (which .ci/run
// installs), when the list is open and a Deployment is created, then the new row
// appears without a reload, and the browser reports no
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
	// The second is the acceptance's (TestDashboard and the stream test hold it); a
	// browser beside other packages' tests gets more, the page must not need a reload.
	wait, waitCancel := context.WithTimeout(ctx, 3*time.Second)
	defer waitCancel()
	if err := chromedp.Do(wait, chromedp.WaitVisible(`tr[data-workload="db/deployment/store"][data-phase="Paused"]`)); err != nil {
		t.Errorf("the new Deployment did not appear on the open page within 3 s: %v", err)
	} else {
		t.Logf("the new row appeared %s after the create", time.Since(created).Round(time.Millisecond))
	}
	if same, err := chromedp.Run(step, chromedp.Evaluate[bool](`window.krollMarker === true`)); err != nil || !same {
		t.Errorf("the page was reloaded (%v): the row must come by the live stream", err)
	}

	// The connection drops; what changes meanwhile is on the page once it reconnects.
	h.http.CloseClientConnections()
	if err := h.client.AppsV1().Deployments("db").Delete(context.Background(), "store", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.AppsV1().Deployments("db").Create(context.Background(), deployment("db", "queue", 1, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resync, resyncCancel := context.WithTimeout(ctx, 15*time.Second)
	defer resyncCancel()
	if err := chromedp.Do(resync, chromedp.WaitVisible(`tr[data-workload="db/deployment/queue"]`), chromedp.WaitNotPresent(`tr[data-workload="db/deployment/store"]`)); err != nil {
		t.Errorf("after the connection dropped, the page did not reconnect and resynchronise: %v", err)
	}
	if same, err := chromedp.Run(step, chromedp.Evaluate[bool](`window.krollMarker === true`)); err != nil || !same {
		t.Errorf("the page was reloaded (%v) to resynchronise: the stream must reconnect by itself", err)
	}
	if n := h.streams.Load(); n < 2 {
		t.Errorf("the list's stream was opened %d times, want a reconnect", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range console {
		if strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Refused to") {
			t.Errorf("the browser reported: %s", line)
		}
	}
}

// Given the dashboard over a fake cluster in a browser, when the user promotes a
// workload through its confirmation, then the action is made once, the page shows its
// line, and an event recorded afterwards appears on the open page; the pod's page shows
// its log; a read-only dashboard's page has no action controls.
func TestBrowserActionFlowLogsAndReadOnly(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (%v): install it with `apt-get install -y chromium`, as .ci/run does", err)
	}
	front := deployment("web", "front", 1, false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front-0", UID: "pod-front-0",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "front", UID: front.UID, Controller: ptr(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	browse := func(h *harness) context.Context {
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox)...)
		ctx, cancel := chromedp.NewContext(alloc)
		t.Cleanup(func() { cancel(); cancelAlloc() })
		if err := chromedp.Do(ctx); err != nil { // the first run starts the browser: no timeout on it
			t.Fatal(err)
		}
		do(t, ctx, chromedp.Navigate(h.http.URL+"/?token=secret-token-123"))
		return ctx
	}

	h := newHarness(t, nil, front, pod)
	ctx := browse(h)
	do(t, ctx, chromedp.Navigate(h.http.URL+"/w/web/deployment/front"), chromedp.Click(`#actions a[href$="confirm?verb=promote"]`),
		chromedp.WaitVisible(`#confirm-button`), chromedp.Click(`#confirm-button`), chromedp.WaitVisible(`#result`))
	if got := text(t, ctx, "#result"); got != "deployment.apps/front promote done" {
		t.Errorf("result line %q", got)
	}
	if want := (Action{Verb: VerbPromote, Kind: "deployment", Namespace: "web", Name: "front"}); len(h.actions.asked) != 1 || h.actions.asked[0] != want {
		t.Errorf("actions made %+v, want one %+v", h.actions.asked, want)
	}
	time.Sleep(300 * time.Millisecond) // the page's event stream connects
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front.step"}, Reason: "RolloutStep", Type: "Normal",
		Message: "step 2/3: rolling out to 100%", InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "front", UID: front.UID},
		LastTimestamp: metav1.Now()}
	if _, err := h.client.CoreV1().Events("web").Create(context.Background(), event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := chromedp.Do(wait, chromedp.WaitVisible(chromedp.Search(`//table[@id="events"]//td[contains(., "step 2/3: rolling out to 100%")]`))); err != nil {
		t.Errorf("the event did not reach the open page within 3 s: %v", err)
	}

	do(t, ctx, chromedp.Navigate(h.http.URL+"/w/web/deployment/front/pod/front-0"), chromedp.WaitVisible(`#logs .log-line`))
	if got := text(t, ctx, "#logs"); !strings.Contains(got, "fake logs") {
		t.Errorf("the pod's page shows %q, want its log", got)
	}
	// A dropped log stream reconnects and shows the log once, not its tail twice.
	before := h.streams.Load()
	h.http.CloseClientConnections()
	deadline := time.Now().Add(15 * time.Second)
	for h.streams.Load() == before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if got := text(t, ctx, "#logs"); h.streams.Load() == before || strings.Count(got, "fake logs") != 1 {
		t.Errorf("after a reconnect (%d streams opened) the log reads %q, want it once", h.streams.Load(), got)
	}

	ro := newHarness(t, func(o *Options) { o.ReadOnly = true }, front, pod)
	roCtx := browse(ro)
	do(t, roCtx, chromedp.Navigate(ro.http.URL+"/w/web/deployment/front"), chromedp.WaitVisible(`#live .summary`))
	if n, err := chromedp.Run(roCtx, chromedp.Evaluate[int](`document.querySelectorAll('#actions, a[href*="confirm?verb="], form[action$="/confirm"]').length`)); err != nil || n != 0 {
		t.Errorf("the read-only page has %d action controls (%v)", n, err)
	}
}

func ptr[T any](v T) *T { return &v }

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(step, actions...); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+selector+`').innerText`))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}
