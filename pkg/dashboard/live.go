package dashboard

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Live regions are sent as server-sent events: on connecting, the region as it is now
// (so a reconnecting page is in step again at once), then again after each change the
// informers see, when it renders differently.
const (
	// minInterval spaces a region's renders: a burst of informer events (a 20-pod
	// scale-up) costs a few renders, not one per event, and still reaches the page
	// well within a second.
	minInterval = 150 * time.Millisecond
	// keepAlive is how often an idle stream sends a comment, so proxies keep it open.
	keepAlive = 15 * time.Second
)

func (s *Server) listStream(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r)
	s.stream(w, r, "list", func() string { return s.sharedList(f) })
}

// shownID is the id of a live region's HTML: each event carries the id of its HTML,
// and a stream that opens on a page which shows that HTML already (the list page
// names its own in the stream's address, seen=; a browser reconnecting names the last
// event's in Last-Event-ID) does not send it again. At 1,000 Deployments the list is
// 280 KB: sent again as the page opens, the browser parsed, swapped and laid out the
// whole table a second time right after the first (some 0.4 s of its main thread).
func shownID(html string) string {
	h := fnv.New64a()
	_, _ = io.WriteString(h, html)
	return strconv.FormatUint(h.Sum64(), 36)
}

// renderedList is the list's live region as rendered for one filter at one version of
// the cache.
type renderedList struct {
	version uint64
	html    string
}

// sharedList renders the list's live region once per change for every open tab with
// the same filter: the list of a thousand workloads is the costly render, and a busy
// cluster changes many times a second.
func (s *Server) sharedList(f Filter) string {
	v := s.opts.Cache.ListVersion()
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if r, ok := s.lists[f]; ok && r.version == v {
		return r.html
	}
	html := s.renderString("list-live", s.list(f))
	if len(s.lists) > 100 {
		s.lists = nil
	}
	if s.lists == nil {
		s.lists = map[Filter]renderedList{}
	}
	s.lists[f] = renderedList{version: v, html: html}
	return html
}

func (s *Server) workloadStream(w http.ResponseWriter, r *http.Request) {
	kind, ns, name := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name")
	s.stream(w, r, "workload", func() string { return s.renderString("workload-live", s.workload(kind, ns, name)) })
}

func (s *Server) renderString(name string, data any) string {
	var b strings.Builder
	s.render(&b, name, data)
	return b.String()
}

// stream sends render's HTML as event until the client leaves.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, event string, render func() string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changes, stop := s.opts.Cache.Subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// What the page shows already, when it says so: its first event is sent only if
	// the region differs.
	shown := r.Header.Get("Last-Event-ID")
	if shown == "" {
		shown = r.URL.Query().Get("seen")
	}
	last := ""
	send := func() {
		html := render()
		if html == last {
			flusher.Flush()
			return
		}
		last = html
		id := shownID(html)
		if id != shown {
			writeEvent(w, event, id, html)
		}
		shown = ""
		flusher.Flush()
	}
	send()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		case <-changes:
			send()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(minInterval):
			}
		}
	}
}

// writeEvent writes one server-sent event: each line of data its own data: line; id
// (none when empty) is what the browser names in Last-Event-ID when it reconnects.
func writeEvent(w io.Writer, event, id, data string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", event)
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	for _, line := range strings.Split(data, "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	_, _ = w.Write(b.Bytes())
}

// logTail is how many earlier lines a log stream starts with.
const logTail = 200

// logStream follows a pod's container log through the API server (pods/log), under
// the user's RBAC (logClient): each line an event the page appends. A refusal or a log that cannot be read
// is one line too.
func (s *Server) logStream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// Each connection starts with the log's tail again: the page empties the log as
	// the stream opens (static/dashboard.js), so a reconnect does not show it twice.
	line := func(class, text string) {
		writeEvent(w, "line", "", fmt.Sprintf(`<div class="%s">%s</div>`, class, template.HTMLEscapeString(text)))
		flusher.Flush()
	}
	client, err := s.logClient(r, r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		line("log-error", err.Error())
		<-r.Context().Done()
		return
	}
	tail := int64(logTail)
	opts := &corev1.PodLogOptions{Follow: true, TailLines: &tail, Container: r.URL.Query().Get("container")}
	logs, err := client.CoreV1().Pods(r.PathValue("ns")).GetLogs(r.PathValue("pod"), opts).Stream(r.Context())
	if err != nil {
		line("log-error", err.Error())
		<-r.Context().Done()
		return
	}
	defer logs.Close()
	scanner := bufio.NewScanner(logs)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		line("log-line", scanner.Text())
	}
	line("log-end", "— the log ended (the container stopped) —")
	// Stay connected: a closed stream would make the browser reconnect and read the
	// log again from its tail.
	<-r.Context().Done()
}
