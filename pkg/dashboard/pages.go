package dashboard

import (
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/rolloutview/chart"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

var funcs = template.FuncMap{
	"lower": strings.ToLower,
	// diffClass colours a unified diff's line: added, removed, or a hunk header.
	"diffClass": func(line string) string {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			return "file"
		case strings.HasPrefix(line, "+"):
			return "add"
		case strings.HasPrefix(line, "-"):
			return "del"
		case strings.HasPrefix(line, "@@"):
			return "hunk"
		}
		return ""
	},
	"lines": func(text string) []string { return strings.Split(strings.TrimSuffix(text, "\n"), "\n") },
	"inc":   func(i int) int { return i + 1 },
	"eta": func(seconds *float64) string {
		return (time.Duration(*seconds*10) * time.Second / 10).Round(time.Second).String()
	},
	"phaseClass": func(phase string) string {
		return strings.ToLower(strings.Fields(phase + " x")[0])
	},
}

// listData is the list page.
type listData struct {
	Filter     Filter
	Namespaces []string
	// Pagination is the page of the rows that match Filter; Total counts every row.
	Pagination
	Total int
	// Query is the address's query of this page; PrevLink and NextLink are the
	// addresses of the pages beside it (empty at either end).
	Query, PrevLink, NextLink string
	// Live is the live region as the list's stream renders it (sharedList), and Seen
	// its id: the stream opens without sending it again (shownID).
	Live template.HTML
	Seen string
}

// list reads the rows of f from the cache.
func (s *Server) list(f Filter) listData {
	rows := s.allRows()
	nsSet := map[string]bool{}
	for _, r := range rows {
		nsSet[r.Namespace] = true
	}
	d := listData{Filter: f, Pagination: PageOf(ListRows(rows, f), f.Page, ListPageSize), Total: len(rows)}
	for ns := range nsSet {
		d.Namespaces = append(d.Namespaces, ns)
	}
	sort.Strings(d.Namespaces)
	d.Query = listQuery(f, d.Page)
	if d.Page > 1 {
		d.PrevLink = "/?" + listQuery(f, d.Page-1)
	}
	if d.Page < d.Pages {
		d.NextLink = "/?" + listQuery(f, d.Page+1)
	}
	return d
}

// listQuery is the list's address query for page of f's rows.
func listQuery(f Filter, page int) string {
	q := "ns=" + template.URLQueryEscaper(f.Namespace) + "&q=" + template.URLQueryEscaper(f.Search)
	if page > 1 {
		q += "&page=" + strconv.Itoa(page)
	}
	return q
}

// allRows are every workload's row, computed once per change of the cache for every
// page and stream that asks: the rollout views of a thousand workloads are the
// costly part of the list.
func (s *Server) allRows() []Row {
	v := s.opts.Cache.ListVersion()
	s.rowsMu.Lock()
	defer s.rowsMu.Unlock()
	if s.rows != nil && s.rowsVersion == v {
		return s.rows
	}
	now := s.opts.Now()
	rows := []Row{}
	for _, snap := range s.opts.Cache.Workloads(now) {
		p, err := rolloutview.ProgressOf(snap)
		if err != nil {
			m := snap.Object.(metav1.Object)
			kind := strings.ToLower(fmt.Sprintf("%T", snap.Object)[len("*v1."):])
			rows = append(rows, Row{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), Phase: "Unknown", Detail: err.Error(),
				Link: fmt.Sprintf("/w/%s/%s/%s", m.GetNamespace(), kind, m.GetName())})
			continue
		}
		rows = append(rows, RowOf(p))
	}
	for _, m := range s.opts.Cache.Controllers() {
		switch c := m.(type) {
		case *corev1.ReplicationController:
			rows = append(rows, controllerRow(c, "replicationcontroller", ptrValue(c.Spec.Replicas), c.Status.AvailableReplicas))
		case *appsv1.ReplicaSet:
			rows = append(rows, controllerRow(c, "replicaset", ptrValue(c.Spec.Replicas), c.Status.AvailableReplicas))
		}
	}
	s.rows, s.rowsVersion = rows, v
	return rows
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// filterOf is the list's filter in r's address; a page that is not a number is the
// first.
func filterOf(r *http.Request) Filter {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	return Filter{Namespace: q.Get("ns"), Search: q.Get("q"), Page: max(page, 1)}
}

func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.render(w, "list", s.listPageData(filterOf(r)))
}

// listPageData is the list page of f: its live region the one the streams share.
func (s *Server) listPageData(f Filter) listData {
	d := s.list(f)
	live := s.sharedList(f)
	d.Live, d.Seen = template.HTML(live), shownID(live)
	return d
}

// workloadData is the workload page and its live region.
type workloadData struct {
	Kind, Namespace, Name string
	Path                  string
	Found                 bool
	P                     rolloutview.Progress
	Row                   Row
	Segments              []Segment
	Groups                []rolloutview.PodGroup
	Events, Healing       []EventRow
	Steps                 []StepRow
	// Analysis is the last analysis of the workload's rollout, nil without one.
	Analysis *AnalysisBox
	// BlockingEvents are the events of the pod the rollout waits on.
	BlockingEvents []EventRow
	Revisions      []int64
	Containers     []string
	// Version changes with the workload: the timeline image's address carries it.
	Version     string
	HasTimeline bool
	CanAct      bool
	CSRF        string
	// Result is the line of the action just made.
	Result string
}

// workload reads kind/ns/name's page from the cache.
func (s *Server) workload(kind, ns, name string) workloadData {
	d := workloadData{Kind: kind, Namespace: ns, Name: name, Path: fmt.Sprintf("/w/%s/%s/%s", ns, kind, name), CanAct: s.canAct()}
	snap, ok := s.opts.Cache.Workload(kind, ns, name, s.opts.Now())
	if !ok {
		return d
	}
	p, err := rolloutview.ProgressOf(snap)
	if err != nil {
		return d
	}
	// The pace so far, from the timeline its controller records, gives the ETA that
	// `kroll rollout status` shows.
	if t, err := timeline.Parse(snap.Object.(metav1.Object).GetAnnotations()[timeline.Annotation]); err == nil && t.Revision == p.RecordedRevision() && t.Revision != "" {
		p = p.WithETA(append(rolloutview.ObservationsOf(t), rolloutview.Observation{At: snap.Now, Done: p.DoneCount()}))
	}
	d.Found, d.P, d.Row = true, p, RowOf(p)
	d.Segments = Segments(p)
	d.Groups = rolloutview.PodGroups(snap, p)
	meta := snap.Object.(metav1.Object)
	d.Version = meta.GetResourceVersion()
	d.HasTimeline = meta.GetAnnotations()[timeline.Annotation] != ""
	d.Steps = StepRows(meta.GetAnnotations(), p.Staged)
	d.Analysis = AnalysisBoxOf(p.Analysis)
	uids := map[string]bool{string(meta.GetUID()): true}
	for _, rs := range snap.ReplicaSets {
		uids[string(rs.UID)] = true
	}
	for _, pod := range snap.Pods {
		uids[string(pod.UID)] = true
		if p.Blocking != nil && pod.Name == p.Blocking.Pod {
			d.BlockingEvents, _ = EventRows(s.opts.Cache.EventsOf(ns, map[string]bool{string(pod.UID): true}), 5)
		}
	}
	d.Events, d.Healing = EventRows(s.opts.Cache.EventsOf(ns, uids), 30)
	if revs, err := rolloutview.RevisionsOf(snap); err == nil {
		d.Revisions = rolloutview.RevisionNumbers(revs)
	}
	if t := templateOf(snap.Object); t != nil {
		for _, c := range t.Spec.Containers {
			d.Containers = append(d.Containers, c.Name)
		}
	}
	return d
}

func templateOf(obj any) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

func (s *Server) workloadPage(w http.ResponseWriter, r *http.Request) {
	d := s.workload(r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name"))
	d.CSRF = csrfToken(s.csrf, identityOf(r).csrfKey)
	d.Result = r.URL.Query().Get("result")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if !d.Found {
		w.WriteHeader(http.StatusNotFound)
	}
	s.render(w, "workload", d)
}

// timeline is the workload's recorded rollout as the chart `kroll rollout timeline`
// draws, with its step boundaries from the RolloutStep events.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	kind, ns, name := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name")
	snap, ok := s.opts.Cache.Workload(kind, ns, name, s.opts.Now())
	if !ok {
		http.NotFound(w, r)
		return
	}
	meta := snap.Object.(metav1.Object)
	t, err := timeline.Parse(meta.GetAnnotations()[timeline.Annotation])
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var events []corev1.Event
	for _, e := range s.opts.Cache.EventsOf(ns, map[string]bool{string(meta.GetUID()): true}) {
		events = append(events, *e)
	}
	p, _ := rolloutview.ProgressOf(snap) // for the revision's change-cause
	svg := chart.SVG(t, chart.Options{Title: rolloutview.TimelineTitle(kind+"/"+name, t, p), Marks: rolloutview.RolloutMarks(t, events)})
	w.Header().Set("Content-Type", "image/svg+xml")
	// Its address carries the workload's resourceVersion: a live update that leaves
	// the workload as it was shows the chart again without fetching it again.
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(svg)
}

// diffData is `kroll rollout history --diff A B` on a page.
type diffData struct {
	workloadData
	A, B  int64
	Text  string
	Error string
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	kind, ns, name := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name")
	d := diffData{workloadData: s.workload(kind, ns, name)}
	snap, ok := s.opts.Cache.Workload(kind, ns, name, s.opts.Now())
	revs, err := rolloutview.RevisionsOf(snap)
	switch {
	case !ok:
		d.Error = "no such workload"
	case err != nil:
		d.Error = err.Error()
	default:
		d.A, _ = strconv.ParseInt(r.URL.Query().Get("a"), 10, 64)
		d.B, _ = strconv.ParseInt(r.URL.Query().Get("b"), 10, 64)
		ra, okA := revs[d.A]
		rb, okB := revs[d.B]
		if !okA || !okB {
			d.Error = fmt.Sprintf("%s/%s has no revision %d or %d", kind, name, d.A, d.B)
			break
		}
		if d.Text, err = rolloutview.TemplateDiff(ra, rb); err != nil {
			d.Error = err.Error()
		} else if d.Text == "" {
			d.Text = fmt.Sprintf("revisions %d and %d have the same pod template\n", d.A, d.B)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.render(w, "diff", d)
}

// podData is a pod's page: its status, events and logs.
type podData struct {
	workloadData
	Pod        string
	Status     string
	Containers []string
	Container  string
	PodEvents  []EventRow
}

func (s *Server) podPage(w http.ResponseWriter, r *http.Request) {
	kind, ns, name, pod := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name"), r.PathValue("pod")
	d := podData{workloadData: s.workload(kind, ns, name), Pod: pod, Container: r.URL.Query().Get("container")}
	snap, _ := s.opts.Cache.Workload(kind, ns, name, s.opts.Now())
	for _, p := range snap.Pods {
		if p.Name != pod {
			continue
		}
		d.Status = rolloutview.PodStatus(p)
		for _, c := range p.Spec.Containers {
			d.Containers = append(d.Containers, c.Name)
		}
		d.PodEvents, _ = EventRows(s.opts.Cache.EventsOf(ns, map[string]bool{string(p.UID): true}), 50)
	}
	if d.Container == "" && len(d.Containers) > 0 {
		d.Container = d.Containers[0]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.render(w, "pod", d)
}

// Warm renders the list and the first workload's page once, unseen: the first render
// of each runs one-time initialisation (the templates' escapers, the views' and
// codecs' caches) that `kroll dashboard` then gives back with the rest of its
// start-up pages (internal/residency) instead of keeping it resident.
func (s *Server) Warm() {
	s.render(io.Discard, "list", s.listPageData(Filter{}))
	if rows := s.allRows(); len(rows) > 0 {
		r := rows[0]
		s.render(io.Discard, "workload", s.workload(r.Kind, r.Namespace, r.Name))
	}
}
