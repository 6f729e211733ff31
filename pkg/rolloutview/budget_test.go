package rolloutview

import "testing"

func TestWithBudget(t *testing.T) {
	held := "waiting for PodDisruptionBudget web-pdb: 1 pod to take down, disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are)"
	for _, tc := range []struct{ name, msg, held, want string }{
		{"not held: kubectl's line", `Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination...`, "",
			`Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination...`},
		{"held: the budget before the dots", `Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination...`, held,
			`Waiting for deployment "web" rollout to finish: 3 old replicas are pending termination; ` + held + "..."},
		{"a line without dots: in brackets", `deployment "web" exceeded its progress deadline`, held,
			`deployment "web" exceeded its progress deadline (` + held + ")"},
	} {
		if got := WithBudget(tc.msg, tc.held); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
