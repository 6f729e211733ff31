package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// captured is a context whose logger appends each line (message and key/values, as
// funcr renders them) to lines.
func captured(lines *[]string) context.Context {
	logger := funcr.New(func(prefix, args string) { *lines = append(*lines, args) }, funcr.Options{})
	return klog.NewContext(context.Background(), logger)
}

func TestWaitLogOneLinePerChangeNothingAtRest(t *testing.T) {
	var lines []string
	ctx := captured(&lines)
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := NewWaitLog("deployment", func() time.Time { return now })
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "web"}
	unavailable := func(n int) Wait {
		return Wait{Reason: "NewPodsUnavailable", Message: "waiting", Details: []any{"newUnavailable", n}}
	}

	steps := []struct {
		name  string
		after time.Duration
		wait  Wait
		want  string // the message of the line logged; "" for none
	}{
		{"at rest: nothing", 0, Wait{}, ""},
		{"at rest again: nothing", time.Second, Wait{}, ""},
		{"a wait begins: one line", time.Second, unavailable(10), `"msg"="Rollout waiting"`},
		{"same reason, other counts (a pod became available): nothing", time.Second, unavailable(9), ""},
		{"same reason 30 s on: nothing", 30 * time.Second, unavailable(9), ""},
		{"same reason a minute after the first line: repeated", 29 * time.Second, unavailable(8), `"msg"="Rollout still waiting"`},
		{"same reason just after the repeat: nothing", time.Second, unavailable(8), ""},
		{"the reason changes: one line", time.Second, Wait{Reason: "MaxUnavailableSpent"}, `"reason"="MaxUnavailableSpent"`},
		{"at rest: the end is logged once", time.Second, Wait{}, `"msg"="Rollout no longer waiting"`},
		{"at rest again: nothing", time.Second, Wait{}, ""},
	}
	for _, s := range steps {
		now = now.Add(s.after)
		before := len(lines)
		w.Observe(ctx, obj, s.wait)
		got := lines[before:]
		switch {
		case s.want == "" && len(got) != 0:
			t.Fatalf("%s: logged %q, want nothing", s.name, got)
		case s.want != "" && (len(got) != 1 || !strings.Contains(got[0], s.want)):
			t.Fatalf("%s: logged %q, want one line with %s", s.name, got, s.want)
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, `"deployment"={"name"="web" "namespace"="ns"}`) {
			t.Errorf("line %q does not name the workload", l)
		}
	}
	if got := lines[1]; !strings.Contains(got, `"waited"="1m0s"`) || !strings.Contains(got, `"newUnavailable"=8`) {
		t.Errorf("repeat line %q: want the time waited (1m0s) and the current counts", got)
	}
	if got := lines[3]; !strings.Contains(got, `"reason"="MaxUnavailableSpent"`) || !strings.Contains(got, `"waited"="1s"`) {
		t.Errorf("end line %q: want the last reason and how long it lasted", got)
	}
}

func TestWaitLogForgetsDeletedWorkloads(t *testing.T) {
	var lines []string
	ctx := captured(&lines)
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := NewWaitLog("replicaSet", func() time.Time { return now })
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "web"}
	w.Observe(ctx, obj, Wait{Reason: "ExpectationsPending"})
	w.Forget("ns/web")
	if len(w.m) != 0 {
		t.Fatalf("remembered %v after Forget", w.m)
	}
	// Recreated under the same name: its first wait is a new one.
	w.Observe(ctx, obj, Wait{Reason: "ExpectationsPending"})
	if len(lines) != 2 || !strings.Contains(lines[1], `"msg"="Rollout waiting"`) {
		t.Fatalf("lines %q: want the recreated workload's wait logged afresh", lines)
	}
}

func TestExpectationsWait(t *testing.T) {
	since := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name             string
		creates, deletes int
		age              time.Duration
		want             string
	}{
		{"nothing pending: no wait", 0, 0, time.Hour, ""},
		{"10 creates pending 2 s (grace 5 s): the ordinary course, no wait", 10, 0, 2 * time.Second, ""},
		{"3 creates pending 6 s: waiting", 3, 0, 6 * time.Second, "ExpectationsPending"},
		{"2 deletes pending 40 s: waiting", 0, 2, 40 * time.Second, "ExpectationsPending"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ExpectationsWait(c.creates, c.deletes, since, since.Add(c.age), 5*time.Second)
			if got.Reason != c.want {
				t.Fatalf("reason %q, want %q", got.Reason, c.want)
			}
		})
	}
}

func TestExpectationsPending(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	e := NewExpectations(func() time.Time { return now })
	if _, _, _, ok := e.Pending("ns/a"); ok {
		t.Fatal("pending with nothing recorded")
	}
	e.Expect("ns/a", 3, []string{"ns/p1"})
	e.CreationObserved("ns/a")
	now = now.Add(10 * time.Second)
	c, d, since, ok := e.Pending("ns/a")
	if !ok || c != 2 || d != 1 || !since.Equal(now.Add(-10*time.Second)) {
		t.Fatalf("Pending = %d creates, %d deletes since %v, %v; want 2, 1 since 10 s ago, true", c, d, since, ok)
	}
	now = now.Add(expectationsTTL)
	if _, _, _, ok := e.Pending("ns/a"); ok {
		t.Fatal("pending after the TTL, when the owner is resized regardless")
	}
}
