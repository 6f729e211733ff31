package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stream opens the live stream at path (with Last-Event-ID lastID, when not empty)
// and returns next, which waits up to a second for its next event and fails the test
// without one, and quiet, which tells whether no event comes within d.
func (h *harness) stream(t *testing.T, path, lastID string) (next func(what string) string, quiet func(d time.Duration) bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := h.browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev strings.Builder
		for sc.Scan() {
			if sc.Text() == "" {
				events <- ev.String()
				ev.Reset()
				continue
			}
			ev.WriteString(sc.Text() + "\n")
		}
		close(events)
	}()
	next = func(what string) string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(time.Second):
			t.Fatalf("no event within 1 s: %s", what)
		}
		return ""
	}
	quiet = func(d time.Duration) bool {
		select {
		case e := <-events:
			t.Logf("event: %.200q", e)
			return false
		case <-time.After(d):
			return true
		}
	}
	return next, quiet
}

var seenParam = regexp.MustCompile(`sse-connect="/live/list\?[^"]*seen=([0-9a-z]+)"`)

// Given the list page, when its stream opens naming what the page shows (seen=, or
// Last-Event-ID as a browser reconnecting names the last event it got), then the
// stream sends nothing until the list changes; a stream that names other HTML, or
// none, gets the list at once.
func TestListStreamSendsNotWhatThePageShows(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	h.login()
	_, page := h.get("/")
	m := seenParam.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the list page names no seen= in its stream's address:\n%s", page)
	}
	next, quiet := h.stream(t, "/live/list?ns=&q=&seen="+m[1], "")
	if !quiet(500 * time.Millisecond) {
		t.Errorf("the stream of a page that shows the list sent it again")
	}
	if _, err := h.client.AppsV1().Deployments("db").Create(context.Background(), deployment("db", "store", 1, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := next("the list after a Deployment is created")
	id, _, _ := strings.Cut(strings.TrimPrefix(changed[strings.Index(changed, "id: "):], "id: "), "\n")
	if !strings.Contains(changed, "deployment/store") || id == "" || id == m[1] {
		t.Fatalf("event after the create = %.300q, want deployment/store and a new id", changed)
	}

	_, quietAgain := h.stream(t, "/live/list?ns=&q=&seen="+m[1], id)
	if !quietAgain(500 * time.Millisecond) {
		t.Errorf("a stream reconnecting with Last-Event-ID %s (the list as it is) sent the list again", id)
	}
	nextStale, _ := h.stream(t, "/live/list?ns=&q=&seen="+m[1], "")
	if e := nextStale("a stream named the list before the create"); !strings.Contains(e, "deployment/store") {
		t.Errorf("a stream of a page showing the list before the create got %.300q, want the list with deployment/store", e)
	}
}
