package disruption

import (
	"testing"
	"time"
)

func TestNextWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	held := Wait{Reason: ReasonBudgetExhausted, Message: "waiting for PodDisruptionBudget web-pdb: 1 pod", Since: t0}
	for _, tc := range []struct {
		name    string
		cur     Wait
		outcome Outcome
		message string
		problem string
		done    bool
		want    Wait
	}{
		{"not held, nothing tried: no condition", Wait{}, NoneTried, "", "", false, Wait{}},
		{"not held, pods evicted: no condition", Wait{}, Taken, "", "", false, Wait{}},
		{"a refusal begins the wait now", Wait{}, Held, "m1", "", false, Wait{ReasonBudgetExhausted, "m1", now}},
		{"refused again: the message moves, the wait keeps its start", held, Held, "m2", "", false, Wait{ReasonBudgetExhausted, "m2", t0}},
		{"held, a sync that tried nothing learnt nothing: kept", held, NoneTried, "", "", false, held},
		{"held, the next eviction went: removed", held, Taken, "", "", false, Wait{}},
		{"held, the rollout is done (or the set opted out): removed", held, NoneTried, "", "", true, Wait{}},
		{"an invalid setting is reported, since now", Wait{}, NoneTried, "", "bad", false, Wait{ReasonInvalidAnnotation, "bad", now}},
		{"an invalid setting wins over a hold", held, Held, "m2", "bad", false, Wait{ReasonInvalidAnnotation, "bad", now}},
		{"a fixed setting clears its report", Wait{ReasonInvalidAnnotation, "bad", t0}, NoneTried, "", "", false, Wait{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextWait(tc.cur, tc.outcome, tc.message, tc.problem, tc.done, now); got != tc.want {
				t.Fatalf("NextWait = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAnnounce(t *testing.T) {
	held := Wait{Reason: ReasonBudgetExhausted, Message: "waiting for PodDisruptionBudget web-pdb"}
	bad := Wait{Reason: ReasonInvalidAnnotation, Message: "kroll.dev/disruption-budget=\"x\" is not valid"}
	for _, tc := range []struct {
		name     string
		was, now Wait
		reason   string
		message  string
	}{
		{"a wait begins: one warning", Wait{}, held, ReasonBudgetExhausted, "Rollout waiting for PodDisruptionBudget web-pdb"},
		{"the same wait, retried: none", held, Wait{Reason: ReasonBudgetExhausted, Message: "other numbers"}, "", ""},
		{"the wait ends: none", held, Wait{}, "", ""},
		{"an invalid setting: its own warning", Wait{}, bad, ReasonInvalidAnnotation, bad.Message},
		{"from invalid to held: a warning for the hold", bad, held, ReasonBudgetExhausted, "Rollout waiting for PodDisruptionBudget web-pdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, message, ok := Announce(tc.was, tc.now)
			if ok != (tc.reason != "") || reason != tc.reason || message != tc.message {
				t.Fatalf("Announce = %q, %q, %v; want %q, %q", reason, message, ok, tc.reason, tc.message)
			}
		})
	}
}

func TestFixedReachUnmeetable(t *testing.T) {
	budget := func(desired int32) Budget {
		return Budget{Name: "web-pdb", Known: true, DesiredHealthy: desired, ExpectedPods: 4}
	}
	for _, tc := range []struct {
		name    string
		desired int32
		reach   Reach
		want    bool
	}{
		{"StatefulSet of 4, minAvailable 4: never", 4, FixedReach(4, "StatefulSet"), true},
		{"StatefulSet of 4, minAvailable 3: one at a time", 3, FixedReach(4, "StatefulSet"), false},
		{"DaemonSet on 4 nodes with maxSurge 1, minAvailable 4: the surge pod makes room", 4, RollingReach(4, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unmeetable(budget(tc.desired), tc.reach); got != tc.want {
				t.Fatalf("Unmeetable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeldBy(t *testing.T) {
	held := Message(Budget{Name: "web-pdb", Known: true, DisruptionsAllowed: 0, DesiredHealthy: 8, CurrentHealthy: 8, ExpectedPods: 10}, 1, RollingReach(10, 0))
	tests := []struct {
		name string
		w    Wait
		want string
	}{
		{"held by web-pdb: its name from the message", Wait{Reason: ReasonBudgetExhausted, Message: held}, "web-pdb"},
		{"a budget the cache did not have", Wait{Reason: ReasonBudgetExhausted, Message: Message(Budget{Name: "zone-pdb"}, 3, RecreateReach)}, "zone-pdb"},
		{"an unnamed refusal", Wait{Reason: ReasonBudgetExhausted, Message: Message(Budget{}, 1, RecreateReach)}, "(unnamed)"},
		{"no wait", Wait{}, ""},
		{"an invalid setting holds nothing", Wait{Reason: ReasonInvalidAnnotation, Message: held}, ""},
		{"a message of another form", Wait{Reason: ReasonBudgetExhausted, Message: "eviction refused"}, ""},
	}
	for _, tt := range tests {
		if got := tt.w.HeldBy(); got != tt.want {
			t.Errorf("%s: HeldBy() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
