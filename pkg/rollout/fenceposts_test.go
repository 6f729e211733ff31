package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
	tests := []struct {
		name                   string
		surge, unavailable     *intstr.IntOrString
		desired                int32
		wantSurge, wantUnavail int32
	}{
		{"defaults 25%/25% of 10: surge 2.5 rounds up, unavailable 2.5 rounds down", pct("25%"), pct("25%"), 10, 3, 2},
		{"25%/25% of 3: surge 1, unavailable 0", pct("25%"), pct("25%"), 3, 1, 0},
		{"25%/25% of 1: surge 1, unavailable 0", pct("25%"), pct("25%"), 1, 1, 0},
		{"10%/10% of 5: surge 0.5 rounds up to 1, unavailable down to 0", pct("10%"), pct("10%"), 5, 1, 0},
		{"both explicitly 0: unavailable becomes 1", num(0), num(0), 5, 0, 1},
		{"absolute numbers pass through", num(3), num(2), 10, 3, 2},
		{"100% surge of 4 is 4", pct("100%"), num(0), 4, 4, 0},
		{"30% unavailable of 10 is 3", num(0), pct("30%"), 10, 0, 3},
		{"zero desired: percent surges are 0, so unavailable 1", pct("25%"), pct("25%"), 0, 0, 1},
		{"nil counts as 0", nil, nil, 10, 0, 1},
		{"spec example: 10 replicas, 3 surge / 30% unavailable", num(3), pct("30%"), 10, 3, 3},
		{"a 2147483647% surge of 2000 is capped so that 2000 plus it fits an int32 (found by fuzzing: it wrapped to -20)",
			pct("2147483647%"), num(0), 2000, 2147481647, 0},
		{"an absolute surge of MaxInt32 is capped the same way", num(2147483647), num(0), 2000, 2147481647, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveFenceposts(tt.surge, tt.unavailable, tt.desired)
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxSurge != tt.wantSurge || got.MaxUnavailable != tt.wantUnavail {
				t.Errorf("got surge %d unavailable %d, want %d %d", got.MaxSurge, got.MaxUnavailable, tt.wantSurge, tt.wantUnavail)
			}
		})
	}
}

func TestResolveFenceposts_rejectsBadValues(t *testing.T) {
	bad := intstr.FromString("lots")
	neg := intstr.FromInt32(-1)
	if _, err := ResolveFenceposts(&bad, nil, 10); err == nil {
		t.Error("maxSurge \"lots\" accepted")
	}
	if _, err := ResolveFenceposts(nil, &neg, 10); err == nil {
		t.Error("maxUnavailable -1 accepted")
	}
}

func rollingUpdate(maxUnavailable, maxSurge string) *appsv1.RollingUpdateDaemonSet {
	u, s := intstr.Parse(maxUnavailable), intstr.Parse(maxSurge)
	return &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &u, MaxSurge: &s}
}

func TestDaemonSetFenceposts(t *testing.T) {
	for _, tt := range []struct {
		unavailable, surge string
		nodes              int
		wantU, wantS       int
	}{
		{"1", "0", 5, 1, 0},
		{"25%", "0", 5, 2, 0}, // 1.25 rounds up
		{"0", "20%", 5, 0, 1},
		{"0", "0", 5, 1, 0},
	} {
		u, s, err := DaemonSetFenceposts(rollingUpdate(tt.unavailable, tt.surge), tt.nodes)
		if err != nil || u != tt.wantU || s != tt.wantS {
			t.Errorf("%s/%s of %d nodes: %d/%d (%v), want %d/%d", tt.unavailable, tt.surge, tt.nodes, u, s, err, tt.wantU, tt.wantS)
		}
	}
}
