package kubelet

import (
	"net/url"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/container"
)

func TestSelectLog(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lines := []container.LogLine{{At: t0, Text: "one"}, {At: t0.Add(time.Second), Text: "two"}, {At: t0.Add(2 * time.Second), Text: "three"}}
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"no options: every line", "", "one\ntwo\nthree\n"},
		{"tailLines=2: the last two", "tailLines=2", "two\nthree\n"},
		{"tailLines=0: nothing", "tailLines=0", ""},
		{"tailLines beyond the log: all of it", "tailLines=10", "one\ntwo\nthree\n"},
		{"sinceTime: lines at or after it", "sinceTime=2026-01-02T03:04:06Z", "two\nthree\n"},
		{"sinceSeconds=1 at t0+2.5s: the last line only", "sinceSeconds=1", "three\n"},
		{"timestamps: RFC 3339 prefix", "timestamps=true&tailLines=1", "2026-01-02T03:04:07Z three\n"},
		{"limitBytes cuts the text", "limitBytes=5", "one\nt"},
		{"since and tail together", "sinceTime=2026-01-02T03:04:06Z&tailLines=1", "three\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			o, err := parseLogOptions(q, t0.Add(2500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if got := selectLog(lines, o); got != tt.want {
				t.Errorf("selectLog = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLogOptionsRefuses(t *testing.T) {
	for _, q := range []string{"tailLines=-1", "sinceSeconds=0", "sinceSeconds=5&sinceTime=2026-01-02T03:04:06Z", "follow=maybe", "limitBytes=0", "sinceTime=yesterday"} {
		v, _ := url.ParseQuery(q)
		if _, err := parseLogOptions(v, time.Now()); err == nil {
			t.Errorf("parseLogOptions(%q) accepted it", q)
		}
	}
}
