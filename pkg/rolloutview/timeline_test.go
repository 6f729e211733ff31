package rolloutview

import (
	"strings"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

func TestTimelineTitle(t *testing.T) {
	rev := func(r string) timeline.Timeline { return timeline.Timeline{Revision: r} }
	rolledBack := rev("6")
	rolledBack.Rollback = &timeline.Rollback{At: time.Second, From: "5", Failed: "5"}
	config := "configmap/app-config changed"
	tests := []struct {
		name string
		t    timeline.Timeline
		p    Progress
		want string
	}{
		{"an image change without a recorded cause", rev("2"), Progress{Kind: "deployment", Revision: "2"}, "deployment/web → revision 2"},
		{"a configuration rollout names what changed", rev("3"), Progress{Kind: "deployment", Revision: "3", Cause: config},
			"deployment/web → revision 3 (configmap/app-config changed)"},
		{"a user's change-cause too", rev("4"), Progress{Kind: "deployment", Revision: "4", Cause: "kubectl set image deployment/web web=nginx:1.27"},
			"deployment/web → revision 4 (kubectl set image deployment/web web=nginx:1.27)"},
		{"a record of an earlier revision: the latest's cause is not its", rev("3"), Progress{Kind: "deployment", Revision: "4", Cause: config},
			"deployment/web → revision 3"},
		{"the revision rolled back to, its cause and the rollback", rolledBack, Progress{Kind: "deployment", Revision: "6", Cause: config},
			"deployment/web → revision 6 (configmap/app-config changed), rolled back from 5"},
		{"a DaemonSet's record is under its hash", rev("7c9d5f"), Progress{Kind: "daemonset", Revision: "web-7c9d5f", Cause: config},
			"deployment/web → revision 7c9d5f (configmap/app-config changed)"},
	}
	for _, tt := range tests {
		if got := TimelineTitle("deployment/web", tt.t, tt.p); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestWaitLines(t *testing.T) {
	tl := timeline.Timeline{Waits: []timeline.Wait{
		{From: 3500 * time.Millisecond, To: 6 * time.Second, PDB: "web-pdb"},
		{From: 70 * time.Second, To: 95*time.Second + 40*time.Millisecond, PDB: "zone-pdb"},
		{From: 24320 * time.Millisecond, To: 30 * time.Second, PDB: "web-pdb", Open: true},
	}}
	want := "waited 2.5s on PodDisruptionBudget web-pdb, from 3.5s to 6s\n" +
		"waited 25s on PodDisruptionBudget zone-pdb, from 1m10s to 1m35s\n" +
		"waiting on PodDisruptionBudget web-pdb since 24.3s"
	if got := strings.Join(WaitLines(tl), "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := WaitLines(timeline.Timeline{}); got != nil {
		t.Errorf("no waits: %q", got)
	}
}
