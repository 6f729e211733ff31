package dashboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// fakeActions records the actions asked for and answers with err.
type fakeActions struct {
	mu    sync.Mutex
	asked []Action
	users []kubernetes.Interface
	err   error
}

var _ Actions = &fakeActions{}

func (f *fakeActions) Do(_ context.Context, client kubernetes.Interface, a Action) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, a)
	f.users = append(f.users, client)
	if f.err != nil {
		return "", f.err
	}
	return a.Kind + ".apps/" + a.Name + " " + a.Verb + " done", nil
}

func deployment(ns, name string, replicas int32, paused bool) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Paused: paused,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1},
	}
}

// harness is a Server over a fake cluster, and the browser that talks to it.
type harness struct {
	t       testing.TB
	client  *fake.Clientset
	actions *fakeActions
	server  *Server
	http    *httptest.Server
	log     *strings.Builder
	logMu   *lockedBuilder
	browser *http.Client
	// streams counts the live streams opened.
	streams atomic.Int32
}

func newHarness(t testing.TB, tune func(*Options), objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cache := NewCache(client, nil)
	if err := cache.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, actions: &fakeActions{}, log: &strings.Builder{}}
	h.logMu = &lockedBuilder{b: h.log}
	opts := Options{Cache: cache, Client: client, Actions: h.actions, Token: "secret-token-123", Log: h.logMu}
	if tune != nil {
		tune(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.server = s
	h.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/live/") {
			h.streams.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(h.http.Close)
	jar, _ := cookiejar.New(nil)
	h.browser = &http.Client{Jar: jar, Timeout: 10 * time.Second}
	return h
}

// logged is the request log so far.
func (h *harness) logged() string {
	h.logMu.mu.Lock()
	defer h.logMu.mu.Unlock()
	return h.log.String()
}

type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	resp, err := h.browser.Get(h.http.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, readBody(resp)
}

func readBody(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

func (h *harness) post(path string, form url.Values) (int, string) {
	h.t.Helper()
	h.browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	defer func() { h.browser.CheckRedirect = nil }()
	resp, err := h.browser.PostForm(h.http.URL+path, form)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, readBody(resp) + resp.Header.Get("Location")
}

func (h *harness) login() {
	h.t.Helper()
	if code, _ := h.get("/?token=secret-token-123"); code != http.StatusOK {
		h.t.Fatalf("login with the URL token: %d", code)
	}
}

func TestLocalModeNeedsTheTokenAndKeepsItOutOfLogsAndAddressBar(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	if code, _ := h.get("/"); code != http.StatusUnauthorized {
		t.Errorf("GET / without token = %d, want 401", code)
	}
	if code, _ := h.get("/live/list"); code != http.StatusUnauthorized {
		t.Errorf("GET /live/list without token = %d, want 401", code)
	}
	if code, _ := h.get("/?token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /?token=wrong = %d, want 401", code)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(h.http.URL + "/?token=secret-token-123&ns=web")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/?ns=web" {
		t.Errorf("token login = %d to %q, want 303 to /?ns=web (the token out of the address bar)", resp.StatusCode, loc)
	}
	cookie := resp.Header.Get("Set-Cookie")
	port := h.http.URL[strings.LastIndex(h.http.URL, ":")+1:]
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "kroll-dashboard-" + port + "="} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "secret-token-123") {
		t.Errorf("the session cookie carries the URL token: %q", cookie)
	}
	h.login()
	if code, body := h.get("/"); code != http.StatusOK || !strings.Contains(body, "deployment/front") {
		t.Errorf("GET / with the session = %d, want 200 listing deployment/front:\n%s", code, body)
	}
	if strings.Contains(h.logged(), "secret-token-123") || !strings.Contains(h.logged(), "GET / 303") {
		t.Errorf("request log = %q: want its lines, without the token", h.logged())
	}
}

func TestPagesCarryTheCSPAndNoInlineScriptOrStyle(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	h.login()
	resp, err := h.browser.Get(h.http.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP = %q, want script-src 'self' and nothing unsafe", csp)
	}
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\sstyle=|\son[a-z]+=`)
	for _, path := range []string{"/", "/w/web/deployment/front", "/w/web/deployment/front/confirm?verb=pause", "/w/web/deployment/front/pod/x"} {
		_, body := h.get(path)
		if m := inline.FindString(body); m != "" {
			t.Errorf("%s has inline script or style %q", path, m)
		}
	}
}

func TestActionsNeedConfirmationAndCSRF(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	h.login()
	_, page := h.get("/w/web/deployment/front")
	if !strings.Contains(page, "/w/web/deployment/front/confirm?verb=promote") {
		t.Fatalf("the workload page has no promote action:\n%s", page)
	}
	_, confirm := h.get("/w/web/deployment/front/confirm?verb=pause")
	if !strings.Contains(confirm, "spec.paused: true on deployment/front in namespace web") {
		t.Errorf("the confirmation does not name what it writes:\n%s", confirm)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(confirm)
	if csrf == nil {
		t.Fatalf("the confirmation has no CSRF token:\n%s", confirm)
	}
	if code, _ := h.post("/w/web/deployment/front/action", url.Values{"verb": {"pause"}}); code != http.StatusForbidden {
		t.Errorf("action without the CSRF token = %d, want 403", code)
	}
	if code, _ := h.post("/w/web/deployment/front/action", url.Values{"verb": {"pause"}, "csrf": {strings.Repeat("0", 64)}}); code != http.StatusForbidden {
		t.Errorf("action with a wrong CSRF token = %d, want 403", code)
	}
	if len(h.actions.asked) != 0 {
		t.Fatalf("refused requests made actions: %v", h.actions.asked)
	}
	code, loc := h.post("/w/web/deployment/front/action", url.Values{"verb": {"pause"}, "csrf": {csrf[1]}})
	if code != http.StatusSeeOther || !strings.Contains(loc, "/w/web/deployment/front?result=deployment.apps%2Ffront+pause+done") {
		t.Errorf("confirmed action = %d %q, want 303 back to the page with its line", code, loc)
	}
	if want := (Action{Verb: VerbPause, Kind: "deployment", Namespace: "web", Name: "front"}); len(h.actions.asked) != 1 || h.actions.asked[0] != want {
		t.Errorf("actions made = %+v, want %+v", h.actions.asked, want)
	}
	_, after := h.get("/w/web/deployment/front?result=deployment.apps%2Ffront+pause+done")
	if !strings.Contains(after, `<p class="result" id="result">deployment.apps/front pause done</p>`) {
		t.Errorf("the page does not show the action's line:\n%s", after)
	}
}

func TestReadOnlyShowsAndAcceptsNoAction(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ReadOnly = true }, deployment("web", "front", 2, false))
	h.login()
	_, page := h.get("/w/web/deployment/front")
	if strings.Contains(page, "confirm?verb=") || strings.Contains(page, `id="actions"`) {
		t.Errorf("a read-only page shows actions:\n%s", page)
	}
	if code, _ := h.get("/w/web/deployment/front/confirm?verb=pause"); code != http.StatusForbidden {
		t.Errorf("read-only confirmation = %d, want 403", code)
	}
	if code, _ := h.post("/w/web/deployment/front/action", url.Values{"verb": {"pause"}}); code != http.StatusForbidden {
		t.Errorf("read-only action = %d, want 403", code)
	}
	if len(h.actions.asked) != 0 {
		t.Errorf("a read-only dashboard made actions: %v", h.actions.asked)
	}
}

func TestInClusterBearerTokenImpersonatesAndShowsTheRefusal(t *testing.T) {
	var asUser []User
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "front", errors.New(`User "dev" cannot patch resource "deployments" in API group "apps" in the namespace "web"`))
	h := newHarness(t, func(o *Options) {
		o.InCluster, o.Token = true, ""
		o.ClientFor = func(u User) (kubernetes.Interface, error) {
			asUser = append(asUser, u)
			return fake.NewClientset(), nil
		}
	}, deployment("web", "front", 2, false))
	h.actions.err = forbidden
	h.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if review.Spec.Token != "dev-token" {
			return true, &authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: false}}, nil
		}
		return true, &authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: true,
			User: authnv1.UserInfo{Username: "dev", Groups: []string{"devs", "system:authenticated"}}}}, nil
	})
	do := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/w/web/deployment/front/action", strings.NewReader("verb=pause"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, strings.ReplaceAll(readBody(resp), "\n", "")
	}
	if code, _ := do(""); code != http.StatusUnauthorized {
		t.Errorf("no token = %d, want 401", code)
	}
	if code, _ := do("stolen"); code != http.StatusUnauthorized {
		t.Errorf("a token the API server rejects = %d, want 401", code)
	}
	code, body := do("dev-token")
	if code != http.StatusForbidden || !strings.Contains(body, `deployments.apps &#34;front&#34; is forbidden: User &#34;dev&#34; cannot patch`) {
		t.Errorf("forbidden action = %d, want 403 with the API server's message:\n%s", code, body)
	}
	if len(asUser) != 1 || asUser[0].Name != "dev" || strings.Join(asUser[0].Groups, ",") != "devs,system:authenticated" {
		t.Errorf("the action was made as %+v, want as dev (devs, system:authenticated)", asUser)
	}

	// A browser signs in with the token once; its session then needs the CSRF token.
	if code, body := h.get("/"); code != http.StatusUnauthorized || !strings.Contains(body, `action="/login"`) {
		t.Errorf("in-cluster GET / without a session = %d, want 401 with the sign-in form:\n%s", code, body)
	}
	if code, _ := h.post("/login", url.Values{"token": {"stolen"}}); code != http.StatusUnauthorized {
		t.Errorf("sign-in with a rejected token = %d, want 401", code)
	}
	if code, _ := h.post("/login", url.Values{"token": {"dev-token"}}); code != http.StatusSeeOther {
		t.Errorf("sign-in with dev's token = %d, want 303", code)
	}
	if code, _ := h.get("/"); code != http.StatusOK {
		t.Errorf("GET / in dev's session = %d, want 200", code)
	}
	if code, _ := h.post("/w/web/deployment/front/action", url.Values{"verb": {"pause"}}); code != http.StatusForbidden || len(asUser) != 1 {
		t.Errorf("a session's action without the CSRF token = %d (%d actions made), want 403 and none", code, len(asUser)-1)
	}
}

func TestListStreamSendsTheListAndEachChange(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	h.login()
	next, _ := h.stream(t, "/live/list", "")
	if first := next("the list on connecting"); !strings.HasPrefix(first, "event: list\n") || !strings.Contains(first, "deployment/front") {
		t.Fatalf("first event = %q, want the list with deployment/front", first)
	}
	start := time.Now()
	if _, err := h.client.AppsV1().Deployments("db").Create(context.Background(), deployment("db", "store", 1, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := next("the list after a Deployment is created"); !strings.Contains(e, "deployment/store") || !strings.Contains(e, `data-phase="Paused"`) {
		t.Errorf("event after the create = %q, want deployment/store, Paused", e)
	}
	t.Logf("the change reached the stream in %s", time.Since(start))
}

// Given 1,000 Deployments, when the list is read page by page through its Next links,
// then each page shows 100 rows and says which, the pages together show every
// workload once, and the stream of a page sends that page.
func TestListIsPagedAndThePagesHoldEveryWorkload(t *testing.T) {
	h := newHarness(t, nil, thousandDeployments()...)
	h.login()
	rowRE := regexp.MustCompile(`data-workload="([^"]+)"`)
	nextRE := regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	seen := map[string]bool{}
	path := "/"
	for page := 1; page <= 10; page++ {
		_, body := h.get(path)
		rows := rowRE.FindAllStringSubmatch(body, -1)
		if len(rows) != ListPageSize {
			t.Fatalf("page %d (%s) has %d rows, want %d", page, path, len(rows), ListPageSize)
		}
		for _, r := range rows {
			if seen[r[1]] {
				t.Errorf("%s is on page %d and an earlier one", r[1], page)
			}
			seen[r[1]] = true
		}
		want := fmt.Sprintf("%d–%d of 1000 workloads; failing first", (page-1)*100+1, page*100)
		if !strings.Contains(body, want) || !strings.Contains(body, fmt.Sprintf("page %d of 10", page)) {
			t.Errorf("page %d does not say %q and \"page %d of 10\"", page, want, page)
		}
		next := nextRE.FindStringSubmatch(body)
		if page == 10 {
			if next != nil {
				t.Errorf("the last page links to a next one: %s", next[1])
			}
			break
		}
		if next == nil {
			t.Fatalf("page %d has no Next link", page)
		}
		path = html.UnescapeString(next[1])
	}
	if len(seen) != 1000 {
		t.Errorf("the pages show %d workloads, want 1000", len(seen))
	}
	next, _ := h.stream(t, "/live/list?ns=&q=&page=10", "")
	if e := next("page 10 on connecting"); !strings.Contains(e, "scale-9/deployment/app-099") || strings.Contains(e, "scale-0/deployment/app-000") {
		t.Errorf("the stream of page 10 does not send page 10")
	}
}

func TestListShowsControllersInARollingUpdate(t *testing.T) {
	three, one := int32(3), int32(1)
	moving := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "legacy", Name: "frontend",
		Annotations: map[string]string{"kubectl.kubernetes.io/next-controller-id": "frontend-v2"}},
		Spec: corev1.ReplicationControllerSpec{Replicas: &three}, Status: corev1.ReplicationControllerStatus{AvailableReplicas: 2}}
	still := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "legacy", Name: "backend"},
		Spec: corev1.ReplicationControllerSpec{Replicas: &one}}
	h := newHarness(t, nil, moving, still)
	h.login()
	_, body := h.get("/")
	if !strings.Contains(body, `data-workload="legacy/replicationcontroller/frontend" data-phase="Progressing"`) || !strings.Contains(body, "rolling-update to frontend-v2") {
		t.Errorf("the list lacks the RC in a rolling update:\n%s", body)
	}
	if strings.Contains(body, "replicationcontroller/backend") {
		t.Errorf("the list shows an RC with no rolling update in flight")
	}
}

func TestWorkloadPageDiffAndTimeline(t *testing.T) {
	d := deployment("web", "front", 2, false)
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2" // revision 2's template
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2",
		timeline.Annotation: timeline.Timeline{Revision: "2", Start: time.Now().Add(-time.Minute), Desired: 2,
			Samples: []timeline.Sample{{At: 0, Counts: timeline.Counts{Old: 2, Available: 2}}, {At: 10 * time.Second, Counts: timeline.Counts{New: 2, Available: 2}}}}.String()}
	yes := true
	var objs []runtime.Object
	objs = append(objs, d)
	for i, image := range []string{"nginx:1", "nginx:2"} {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: fmt.Sprintf("front-%d", i+1), UID: types.UID(fmt.Sprintf("rs-%d", i+1)),
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(i + 1)},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "front", UID: d.UID, Controller: &yes}}},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "front"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}}}
		if i == 1 {
			rs.Annotations["kubernetes.io/change-cause"] = "configmap/front-config changed"
		}
		objs = append(objs, rs)
	}
	h := newHarness(t, nil, objs...)
	h.login()
	_, page := h.get("/w/web/deployment/front")
	if !strings.Contains(page, `action="/w/web/deployment/front/diff"`) || !strings.Contains(page, `src="/w/web/deployment/front/timeline.svg?v=`) {
		t.Errorf("the workload page lacks the diff form or the timeline:\n%s", page)
	}
	if _, diff := h.get("/w/web/deployment/front/diff?a=1&b=2"); !strings.Contains(diff, `<span class="del">-  - image: nginx:1</span>`) || !strings.Contains(diff, `<span class="add">&#43;  - image: nginx:2</span>`) {
		t.Errorf("diff of revisions 1 and 2:\n%s", diff)
	}
	if _, diff := h.get("/w/web/deployment/front/diff?a=1&b=7"); !strings.Contains(diff, "has no revision 1 or 7") {
		t.Errorf("diff with a revision that does not exist:\n%s", diff)
	}
	resp, err := h.browser.Get(h.http.URL + "/w/web/deployment/front/timeline.svg")
	if err != nil {
		t.Fatal(err)
	}
	svg := readBody(resp)
	if resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(svg, "<svg") || !strings.Contains(svg, "deployment/front → revision 2 (configmap/front-config changed)") {
		t.Errorf("timeline = %s %.200q, want the chart of revision 2 with its change-cause", resp.Header.Get("Content-Type"), svg)
	}
}

func TestCacheNamesWhatItCannotListAndDoesWithoutNodes(t *testing.T) {
	forbid := func(resource string) *fake.Clientset {
		c := fake.NewClientset(deployment("web", "front", 1, false))
		c.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC"))
		})
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := NewCache(forbid("pods"), nil).Start(ctx, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "could not list and watch pods") {
		t.Errorf("Start without pods = %v, want an error naming pods", err)
	}
	c := NewCache(forbid("nodes"), nil)
	if err := c.Start(ctx, 5*time.Second); err != nil {
		t.Errorf("Start without nodes = %v, want the cache without them (a view user may not list nodes)", err)
	}
	if got := len(c.Workloads(time.Now())); got != 1 {
		t.Errorf("workloads without nodes: %d, want 1", got)
	}
}

// Given a started cache, then it has been told of every object listed (its list
// version stays), an event wakes its subscribers but leaves the list's version (the
// rows read no event), and a Deployment changes both.
func TestCacheListVersionLeavesEventsOut(t *testing.T) {
	client := fake.NewClientset(deployment("web", "front", 1, false),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front.1"}, Reason: "ScalingReplicaSet"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewCache(client, nil)
	if err := c.Start(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if lv := c.ListVersion(); lv != 1 {
		t.Fatalf("after the first lists: list version %d, want 1 (the Deployment)", lv)
	}
	changes, stop := c.Subscribe()
	defer stop()
	woken := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no subscriber told within 5s", what)
		}
	}
	if _, err := client.CoreV1().Events("web").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "front.2"}, Reason: "Pulled"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	woken("an event")
	if lv := c.ListVersion(); lv != 1 {
		t.Errorf("after an event: list version %d, want 1", lv)
	}
	if _, err := client.AppsV1().Deployments("db").Create(ctx, deployment("db", "store", 1, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	woken("a Deployment")
	if lv := c.ListVersion(); lv != 2 {
		t.Errorf("after a Deployment: list version %d, want 2", lv)
	}
}

func TestWorkloadPageShowsTheAnalysis(t *testing.T) {
	d := deployment("web", "front", 2, false)
	d.Annotations = map[string]string{analysis.StatusAnnotation: `{"revision":"6d5f7c9b8","step":1,"spec":"f2ef9dc25cd99618","started":"2026-12-07T16:00:00Z",` +
		`"checks":[{"name":"error-ratio","query":"sum(rate(http_requests_total{code=~\"5..\"}[30s]))","successCondition":"< 0.01","count":3,` +
		`"successful":2,"taken":2,"last":"2026-12-07T16:00:40Z","recent":[{"at":"2026-12-07T16:00:30Z","value":"0.002","outcome":"Successful"},` +
		`{"at":"2026-12-07T16:00:40Z","value":"0.004","outcome":"Successful"}]}]}`}
	h := newHarness(t, nil, d)
	h.login()
	_, page := h.get("/w/web/deployment/front")
	for _, want := range []string{`id="analysis"`, `data-check="error-ratio"`, "2 of 3 measured", "want &lt; 0.01", "16:00:40Z", "0.004",
		`sum(rate(http_requests_total{code=~&#34;5..&#34;}[30s]))`} {
		if !strings.Contains(page, want) {
			t.Errorf("the workload page lacks %q:\n%s", want, page)
		}
	}
	h2 := newHarness(t, nil, deployment("web", "plain", 2, false))
	h2.login()
	if _, page := h2.get("/w/web/deployment/plain"); strings.Contains(page, `id="analysis"`) {
		t.Errorf("a workload without analysis shows one:\n%s", page)
	}
}
