package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// dashboardCluster is a cluster populated for the dashboard: three namespaces of
// workloads in every phase the list shows.
type dashboardCluster struct {
	c      *cluster.Cluster
	bin    string
	scenes map[string]*scene
}

// loggerDeployment prints a line at start and more later, so a page following its
// log sees lines arrive.
const loggerDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: logger
spec:
  replicas: 1
  selector:
    matchLabels:
      app: logger
  template:
    metadata:
      labels:
        app: logger
    spec:
      containers:
      - name: app
        image: busybox
        command: ["sh", "-c", "echo started serving; sleep 6; echo second line; sleep 6; echo third line; sleep 3600"]
`

func populateDashboardCluster(t *testing.T) *dashboardCluster {
	t.Helper()
	rules, err := kubelet.NewFaultRules(kubelet.FaultRule{Image: "*:crash", Fault: "CrashLoopBackOff"})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3),
		clustertest.WithKubelet(func(k *kubelet.Config) {
			k.Faults = rules
			k.CrashLoopBackOff = 500 * time.Millisecond
			k.PodStartupDelay = 200 * time.Millisecond
		}))
	stop := startKrollControllers(t, c)
	t.Cleanup(stop)
	d := &dashboardCluster{c: c, bin: krollBinary(t), scenes: map[string]*scene{}}
	for _, ns := range []string{"dash-a", "dash-b", "dash-c"} {
		d.scenes[ns] = newScene(t, c, ns, cluster.WorkloadControllersKroll)
	}
	a, b, cc := d.scenes["dash-a"], d.scenes["dash-b"], d.scenes["dash-c"]
	a.apply(t, stagedDeployment("web", 3))
	a.apply(t, stagedDeployment("held", 2))
	b.apply(t, stagedDeployment("staged", 4, "kroll.dev/rollout-steps=25%, pause, 100%"))
	// 20 replicas, one pod at a time, each available a second after it is ready: a
	// rollout of some 20 states, each lasting long enough to be seen.
	b.apply(t, healDeploymentReadyAfter("big", 20, 1, "1", "0"))
	cc.apply(t, healDeployment("healed", 3, "1", "0", "kroll.dev/on-failure=Rollback"))
	for ns, names := range map[string][]string{"dash-a": {"web", "held"}, "dash-b": {"staged", "big"}, "dash-c": {"healed"}} {
		for _, name := range names {
			d.scenes[ns].kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=3m")
		}
	}
	a.kubectl(t, "rollout", "pause", "deployment/held")
	b.kubectl(t, "set", "image", "deployment/staged", "app=app:2")
	b.waitRecord(t, "staged", "1/3")
	cc.kubectl(t, "set", "image", "deployment/healed", "app=app:crash")
	cc.expectRolledBack(t, "healed", 3, ": CrashLoopBackOff)")
	return d
}

// Given a populated cluster and `kroll dashboard`, when a browser opens it, then the
// list, a live rollout, a promote, a self-healed rollback, a pod's logs, read-only
// mode, in-cluster refusals, the token and the CSRF check all behave as a user needs.
func TestDashboard(t *testing.T) {
	d := populateDashboardCluster(t)
	dash := startDashboard(t, d.bin, "--kubeconfig", d.c.KubeconfigPath)
	browser := newBrowser(t)

	t.Run("the list shows every workload of three namespaces with its phase, failing first", func(t *testing.T) {
		run(t, browser, time.Minute, "opening the list", chromedp.Navigate(dash.url), chromedp.WaitVisible(`table.rollouts`))
		want := map[string]string{
			"dash-a/deployment/web": "Complete", "dash-a/deployment/held": "Paused",
			"dash-b/deployment/staged": "Staged at step 1/3", "dash-b/deployment/big": "Complete",
			"dash-c/deployment/healed": "RolledBack",
		}
		// The page is live: wait for it to show what the cluster settles on.
		var rows []string
		got := map[string]string{}
		deadline := time.Now().Add(time.Minute)
		for fmt.Sprint(got) != fmt.Sprint(want) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			rows = eval[[]string](t, browser, "reading the rows",
				`[...document.querySelectorAll('tr[data-workload^="dash-"]')].map(r => r.dataset.workload + '=' + r.dataset.phase + '=' + r.className)`)
			got = map[string]string{}
			for _, r := range rows {
				parts := strings.Split(r, "=")
				got[parts[0]] = parts[1]
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("list rows\n got %v\nwant %v", got, want)
		}
		// Failing first: no failing row after one that is not.
		seenOK := false
		for _, r := range rows {
			failing := strings.HasSuffix(r, "=failing")
			if failing && seenOK {
				t.Errorf("rows %v: a failing row after one that is not", rows)
			}
			seenOK = seenOK || !failing
		}
		screenshot(t, browser, "dashboard-list.png")
	})

	t.Run("a request without the token gets 401; an action without the CSRF token is refused", func(t *testing.T) {
		resp, err := http.Get(dash.base() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without the token = %d, want 401", resp.StatusCode)
		}
		jar, _ := cookiejar.New(nil)
		client := &http.Client{Jar: jar}
		if resp, err = client.Get(dash.url); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET with the token: %v %v", resp, err)
		}
		resp.Body.Close()
		resp, err = client.PostForm(dash.base()+"/w/dash-a/deployment/web/action", url.Values{"verb": {"pause"}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "CSRF") {
			t.Errorf("action without the CSRF token = %d %q, want 403 naming the CSRF token", resp.StatusCode, body)
		}
		if d.scenes["dash-a"].deployment(t, "web").Spec.Paused {
			t.Errorf("deployment/web was paused by a request without the CSRF token")
		}
		if strings.Contains(dash.log(), strings.SplitN(dash.url, "token=", 2)[1]) {
			t.Errorf("the dashboard's log holds the token:\n%s", dash.log())
		}
	})

	t.Run("a workload page follows a 20-replica rollout live, as kroll rollout status reports it", func(t *testing.T) {
		followRollout(t, d, dash, browser)
	})

	t.Run("promote a staged Deployment paused at step 1: it moves to step 2 and the event shows", func(t *testing.T) {
		run(t, browser, time.Minute, "opening deployment/staged", chromedp.Navigate(dash.base()+"/w/dash-b/deployment/staged"), chromedp.WaitVisible(`#staged`))
		if got := textOf(t, browser, "#staged"); !strings.Contains(got, "step 1/3") {
			t.Errorf("staged line %q, want step 1/3", got)
		}
		run(t, browser, time.Minute, "promote, then confirm",
			chromedp.Click(`#actions a[href$="confirm?verb=promote"]`), chromedp.WaitVisible(`#confirm-button`))
		if got := textOf(t, browser, "main"); !strings.Contains(got, "the step record "+staging.StepAnnotation+" of deployment/staged in namespace dash-b, one step on") {
			t.Errorf("the confirmation does not name what it writes:\n%s", got)
		}
		run(t, browser, time.Minute, "confirming", chromedp.Click(`#confirm-button`), chromedp.WaitVisible(`#result`))
		if got := textOf(t, browser, "#result"); got != "deployment.apps/staged promoted to step 2/3" {
			t.Errorf("result line %q", got)
		}
		if got := d.scenes["dash-b"].deployment(t, "staged").Annotations[staging.StepAnnotation]; got != "2/3" && got != "3/3" {
			t.Errorf("%s = %q after promote, want 2/3 (or 3/3 once the last step is reached)", staging.StepAnnotation, got)
		}
		browserEventually(t, browser, 30*time.Second, "the RolloutStep event of step 2/3 on the page", "#events", func(s string) bool {
			return strings.Contains(s, "RolloutStep") && strings.Contains(s, "step 2/3")
		})
	})

	t.Run("a crash-looping revision rolled back by self-healing shows RolloutFailed and the rollback", func(t *testing.T) {
		run(t, browser, time.Minute, "opening deployment/healed", chromedp.Navigate(dash.base()+"/w/dash-c/deployment/healed"), chromedp.WaitVisible(`#failure`))
		got := textOf(t, browser, "#failure")
		for _, want := range []string{"RolloutFailed (PodsFailing): 1 of 1 new pods failed, threshold 1 (healed-", "CrashLoopBackOff", "rolled back from revision 2 to 1", "RolledBack"} {
			if !strings.Contains(got, want) {
				t.Errorf("failure section lacks %q:\n%s", want, got)
			}
		}
		screenshot(t, browser, "dashboard-healed.png")
	})

	t.Run("a pod's logs follow on the page", func(t *testing.T) {
		// Started now, so that its later lines come while the page is open.
		d.scenes["dash-c"].apply(t, loggerDeployment)
		// Its log needs the container running, not the pod available.
		var pod string
		eventually(t, 2*time.Minute, "the logger's pod running", func(ctx context.Context) (bool, string) {
			pods, err := d.c.Client.CoreV1().Pods("dash-c").List(ctx, metav1.ListOptions{LabelSelector: "app=logger"})
			if err != nil || len(pods.Items) != 1 {
				return false, fmt.Sprint(len(pods.Items), " pods, ", err)
			}
			pod = pods.Items[0].Name
			return pods.Items[0].Status.Phase == corev1.PodRunning, podState(&pods.Items[0])
		})
		// Through the token's URL, so that this check also runs alone (-run …/a_pod).
		run(t, browser, time.Minute, "opening the logger's page", chromedp.Navigate(dash.url), chromedp.WaitVisible(`table.rollouts`),
			chromedp.Navigate(dash.base()+"/w/dash-c/deployment/logger"), chromedp.WaitVisible(`#live`))
		browserEventually(t, browser, time.Minute, "the logger's pod "+pod+" listed on its page", "#live", func(s string) bool { return strings.Contains(s, pod) })
		run(t, browser, time.Minute, "opening the pod's page", chromedp.Click(`tr[data-pod="`+pod+`"] a`), chromedp.WaitVisible(`#logs`))
		eval[bool](t, browser, "marking the page", `window.krollMarker = true`)
		first := browserEventually(t, browser, 30*time.Second, "the first line", "#logs", func(s string) bool { return strings.Contains(s, "started serving") })
		if strings.Contains(first, "third line") {
			t.Fatalf("the page opened after the container printed its last line (12 s after it started): nothing left to follow:\n%s", first)
		}
		browserEventually(t, browser, 40*time.Second, "the third line, followed", "#logs", func(s string) bool { return strings.Contains(s, "third line") })
		if !eval[bool](t, browser, "checking the page was not reloaded", `window.krollMarker === true`) {
			t.Errorf("the page was reloaded: the log was not followed")
		}
	})

	t.Run("a view user: no actions in --read-only; in-cluster, the API server's refusal", func(t *testing.T) {
		viewerAndRefusals(t, d, browser)
	})
}

// viewerAndRefusals binds a service account to the `view` ClusterRole, serves it a
// read-only dashboard (no actions shown or accepted) and an in-cluster one (an action
// forced through the HTTP API is refused by the API server, whose message comes back).
func viewerAndRefusals(t *testing.T, d *dashboardCluster, browser context.Context) {
	a := d.scenes["dash-a"]
	a.kubectl(t, "create", "serviceaccount", "viewer")
	a.kubectl(t, "create", "clusterrolebinding", "dash-viewer", "--clusterrole=view", "--serviceaccount=dash-a:viewer")
	token := strings.TrimSpace(a.kubectl(t, "create", "token", "viewer"))
	ro := startDashboard(t, d.bin, "--read-only", "--kubeconfig", viewerKubeconfig(t, d.c, token))
	run(t, browser, time.Minute, "opening the read-only list", chromedp.Navigate(ro.url), chromedp.WaitVisible(`tr[data-workload="dash-a/deployment/web"]`))
	run(t, browser, time.Minute, "opening a read-only workload page", chromedp.Navigate(ro.base()+"/w/dash-a/deployment/web"), chromedp.WaitVisible(`#live .summary`))
	actions := eval[int](t, browser, "counting actions", `document.querySelectorAll('#actions, a[href*="confirm?verb="], form[action$="/confirm"]').length`)
	if actions != 0 {
		t.Errorf("the read-only page shows %d action controls", actions)
	}

	certFile, keyFile, pool := servingCert(t)
	ic := startDashboard(t, d.bin, "--in-cluster", "--address", "127.0.0.1", "--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--kubeconfig", d.c.KubeconfigPath)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	post := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ic.base()+"/w/dash-a/deployment/web/action", strings.NewReader("verb=pause"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if !strings.HasPrefix(ic.url, "https://") {
		t.Errorf("in-cluster URL %q, want https", ic.url)
	}
	if code, _ := post(""); code != http.StatusUnauthorized {
		t.Errorf("in-cluster action without a token = %d, want 401", code)
	}
	code, body := post(token)
	want := `deployments.apps &#34;web&#34; is forbidden: User &#34;system:serviceaccount:dash-a:viewer&#34; cannot patch resource &#34;deployments&#34;`
	if code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("the viewer's forced action = %d, want 403 with the API server's message %q:\n%s", code, want, body)
	}
	if a.deployment(t, "web").Spec.Paused {
		t.Errorf("the viewer's action paused deployment/web")
	}
}

// pageState is what the workload page shows at one moment: "updated/target
// available/desired".
type pageState struct {
	at    time.Time
	state string
}

// followRollout sets a new image on the 20-replica Deployment while its page is open
// and while `kroll rollout status -o json` reports it, then checks that every state
// the CLI reported (that lasted a second) reached the page within a second.
func followRollout(t *testing.T, d *dashboardCluster, dash *dashboardProcess, browser context.Context) {
	b := d.scenes["dash-b"]
	run(t, browser, time.Minute, "opening deployment/big", chromedp.Navigate(dash.base()+"/w/dash-b/deployment/big"), chromedp.WaitVisible(`#updated`))
	b.kubectl(t, "set", "image", "deployment/big", "app=app:2")
	status := startStatusJSON(t, d.bin, d.c.KubeconfigPath, "dash-b", "deployment/big")
	var page []pageState
	shot := false
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		s := eval[string](t, browser, "reading the page",
			`document.querySelector('#updated').innerText + ' ' + document.querySelector('#available').innerText`)
		if len(page) == 0 || page[len(page)-1].state != s {
			page = append(page, pageState{time.Now(), s})
		}
		if !shot && strings.HasPrefix(s, "10/20") {
			screenshot(t, browser, "dashboard-workload.png")
			shot = true
		}
		if status.done() && s == "20/20 20/20" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cli := status.states()
	if len(cli) < 10 {
		t.Fatalf("kroll rollout status reported %d states, want the rollout's many: %v", len(cli), cli)
	}
	distinct := map[string]bool{}
	for _, p := range page {
		distinct[p.state] = true
	}
	if len(distinct) < 10 {
		t.Errorf("the page showed %d states, want the bars moving through the rollout: %v", len(distinct), page)
	}
	missed := 0
	for i, c := range cli {
		last := i == len(cli)-1
		if !last && cli[i+1].at.Sub(c.at) < time.Second {
			continue // gone again within the second: the page may skip it
		}
		if !shownWithin(page, c, time.Second) {
			missed++
			t.Errorf("kroll rollout status reported %q at %s; the page did not show it within 1 s", c.state, c.at.Format("15:04:05.000"))
		}
	}
	t.Logf("%d states reported by kroll rollout status, %d shown by the page, %d missed", len(cli), len(distinct), missed)
}

// shownWithin: the page showed c's state from c.at-200ms (the informers may see it a
// moment before the CLI's watch does) to c.at+limit.
func shownWithin(page []pageState, c pageState, limit time.Duration) bool {
	for i, p := range page {
		end := time.Now()
		if i+1 < len(page) {
			end = page[i+1].at
		}
		if p.state == c.state && p.at.Before(c.at.Add(limit)) && end.After(c.at.Add(-200*time.Millisecond)) {
			return true
		}
	}
	return false
}
