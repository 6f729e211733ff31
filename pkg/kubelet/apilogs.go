package kubelet

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/container"
)

// logOptions is what a /containerLogs request asks for (the query the API server
// forwards from `kubectl logs`).
type logOptions struct {
	follow     bool
	previous   bool
	timestamps bool
	tail       int64 // lines from the end; negative for all
	since      time.Time
	limitBytes int64 // zero for no limit
}

// parseLogOptions reads the query of a /containerLogs request, as the kubelet does:
// sinceSeconds is relative to now, sinceTime absolute (RFC 3339), tailLines and
// limitBytes non-negative.
func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	o := logOptions{tail: -1}
	var err error
	if o.follow, err = boolParam(q, "follow"); err != nil {
		return o, err
	}
	if o.previous, err = boolParam(q, "previous"); err != nil {
		return o, err
	}
	if o.timestamps, err = boolParam(q, "timestamps"); err != nil {
		return o, err
	}
	if v := q.Get("tailLines"); v != "" {
		if o.tail, err = strconv.ParseInt(v, 10, 64); err != nil || o.tail < 0 {
			return o, fmt.Errorf("tailLines must be a non-negative integer, got %q", v)
		}
	}
	if v := q.Get("limitBytes"); v != "" {
		if o.limitBytes, err = strconv.ParseInt(v, 10, 64); err != nil || o.limitBytes < 1 {
			return o, fmt.Errorf("limitBytes must be a positive integer, got %q", v)
		}
	}
	switch s, t := q.Get("sinceSeconds"), q.Get("sinceTime"); {
	case s != "" && t != "":
		return o, fmt.Errorf("at most one of sinceSeconds or sinceTime may be specified")
	case s != "":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("sinceSeconds must be a positive integer, got %q", s)
		}
		o.since = now.Add(-time.Duration(n) * time.Second)
	case t != "":
		if o.since, err = time.Parse(time.RFC3339, t); err != nil {
			return o, fmt.Errorf("sinceTime must be an RFC 3339 time, got %q", t)
		}
	}
	return o, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be a boolean, got %q", name, v)
	}
	return b, nil
}

// selectLog is the text of the lines o asks for: those written at or after since,
// the last tail of them, each prefixed with its RFC 3339 time when asked, cut at
// limitBytes.
func selectLog(lines []container.LogLine, o logOptions) string {
	from := 0
	if !o.since.IsZero() {
		for from < len(lines) && lines[from].At.Before(o.since) {
			from++
		}
	}
	lines = lines[from:]
	if o.tail >= 0 && int64(len(lines)) > o.tail {
		lines = lines[int64(len(lines))-o.tail:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(formatLogLine(l, o.timestamps))
	}
	out := b.String()
	if o.limitBytes > 0 && int64(len(out)) > o.limitBytes {
		out = out[:o.limitBytes]
	}
	return out
}

// formatLogLine is one line as the kubelet returns it.
func formatLogLine(l container.LogLine, timestamps bool) string {
	if timestamps {
		return l.At.UTC().Format(time.RFC3339Nano) + " " + l.Text + "\n"
	}
	return l.Text + "\n"
}

// followPoll is how often a followed log is checked for new lines.
const followPoll = 200 * time.Millisecond

// serveLogs answers /containerLogs: the lines the query selects and, with follow, what
// the instance writes after them until it ends or the client goes.
func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, name string) {
	o, err := parseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	run, err := k.instanceOf(pod, name, o.previous)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	run.mu.Lock()
	run.inst.AdvanceTo(time.Now())
	lines, next := run.inst.LogFrom(0)
	run.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, selectLog(lines, o))
	if !o.follow || o.previous {
		return
	}
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case now := <-tick.C:
			run.mu.Lock()
			run.inst.AdvanceTo(now)
			lines, next = run.inst.LogFrom(next)
			_, _, exited := run.inst.Exited()
			run.mu.Unlock()
			for _, l := range lines {
				if _, err := io.WriteString(w, formatLogLine(l, o.timestamps)); err != nil {
					return
				}
			}
			if exited || k.restarted(pod, name, run.id) {
				return
			}
		}
	}
}

// restarted tells whether container name of pod runs an instance other than id now
// (or the pod is gone): a followed log then ends, as the kubelet's does.
func (k *Kubelet) restarted(pod *corev1.Pod, name, id string) bool {
	cur, err := k.podLister.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID {
		return true
	}
	_, cs, _ := containerSpec(cur, name)
	return cs == nil || cs.ContainerID != id || cs.State.Running == nil
}
