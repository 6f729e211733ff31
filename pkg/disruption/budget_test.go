package disruption

import (
	"errors"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestModeOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		def         Mode
		want        Mode
		problem     bool
	}{
		{"no setting, cluster default Ignore", nil, Ignore, Ignore, false},
		{"no setting, cluster default Respect", nil, Respect, Respect, false},
		{"Respect on the workload", map[string]string{Annotation: "Respect"}, Ignore, Respect, false},
		{"Ignore on the workload beats a Respect default", map[string]string{Annotation: "Ignore"}, Respect, Ignore, false},
		{"lower case is refused, default kept", map[string]string{Annotation: "respect"}, Ignore, Ignore, true},
		{"empty is refused", map[string]string{Annotation: ""}, Respect, Respect, true},
		{"spaces are refused", map[string]string{Annotation: " Respect"}, Ignore, Ignore, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := ModeOf(tc.annotations, tc.def)
			if got != tc.want || (problem != "") != tc.problem {
				t.Fatalf("ModeOf = %q, %q; want %q, problem %v", got, problem, tc.want, tc.problem)
			}
			if tc.problem && !strings.HasPrefix(problem, Annotation+"=") {
				t.Errorf("problem %q does not name the annotation", problem)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for v, ok := range map[string]bool{"Respect": true, "Ignore": true, "respect": false, "": false, "On": false} {
		if _, err := ParseMode(v); (err == nil) != ok {
			t.Errorf("ParseMode(%q) err = %v, want ok %v", v, err, ok)
		}
	}
}

func TestEvicts(t *testing.T) {
	for _, tc := range []struct {
		name                string
		mode                Mode
		deployment, oldRevs bool
		want                bool
	}{
		{"Respect, old revision of a Deployment: evicted", Respect, true, true, true},
		{"Respect, current revision scaled down by the user: deleted", Respect, true, false, false},
		{"Respect, bare ReplicaSet: deleted", Respect, false, true, false},
		{"Ignore, old revision: deleted as upstream", Ignore, true, true, false},
	} {
		if got := Evicts(tc.mode, tc.deployment, tc.oldRevs); got != tc.want {
			t.Errorf("%s: Evicts = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// tooMany is the API server's refusal of an eviction (pkg/registry/core/pod/storage).
func tooMany(cause string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	if cause != "" {
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	}
	return err
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		pdb     string
		refused bool
	}{
		{"budget exhausted names its PDB", tooMany("The disruption budget web-pdb needs 8 healthy pods and has 8 currently"), "web-pdb", true},
		{"budget not yet processed", tooMany("The disruption budget web-pdb is still being processed by the server."), "web-pdb", true},
		{"refusal without a cause", tooMany(""), "", true},
		{"not found is no refusal", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-1"), "", false},
		{"several budgets (500) is no refusal", apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget")), "", false},
	} {
		pdb, refused := Refused(tc.err)
		if pdb != tc.pdb || refused != tc.refused {
			t.Errorf("%s: Refused = %q, %v; want %q, %v", tc.name, pdb, refused, tc.pdb, tc.refused)
		}
	}
}

func TestMessage(t *testing.T) {
	pdb := func(desired, healthy, expected, allowed int32) Budget {
		return Budget{Name: "web-pdb", Known: true, DesiredHealthy: desired, CurrentHealthy: healthy, ExpectedPods: expected, DisruptionsAllowed: allowed}
	}
	for _, tc := range []struct {
		name       string
		b          Budget
		pods       int32
		r          Reach
		want       string
		unmeetable bool
	}{
		{"10 replicas, minAvailable 8, a drain took the budget: waits", pdb(8, 8, 10, 0), 1, RollingReach(10, 0),
			"waiting for PodDisruptionBudget web-pdb: 1 pod to take down, disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are)", false},
		{"minAvailable 10 of 10, maxSurge 0: never by itself", pdb(10, 10, 10, 0), 3, RollingReach(10, 0),
			"waiting for PodDisruptionBudget web-pdb: 3 pods to take down, disruptionsAllowed 0 (10 of 10 pods must stay healthy, 10 are); the rollout cannot meet this budget by itself: it needs 10 healthy pods and the rollout has at most 10 (10 replicas + maxSurge 0); raise maxSurge, lower the budget, or delete it", true},
		{"minAvailable 10 of 10, maxSurge 1: a surge pod makes room", pdb(10, 10, 10, 0), 3, RollingReach(10, 1),
			"waiting for PodDisruptionBudget web-pdb: 3 pods to take down, disruptionsAllowed 0 (10 of 10 pods must stay healthy, 10 are)", false},
		{"budget not in the cache", Budget{Name: "web-pdb"}, 2, RollingReach(10, 0),
			"waiting for PodDisruptionBudget web-pdb: 2 pods to take down, eviction refused", false},
		{"Recreate under minAvailable 8 of 10: never by itself", pdb(8, 8, 10, 0), 8, RecreateReach,
			"waiting for PodDisruptionBudget web-pdb: 8 pods to take down, disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are); the rollout cannot meet this budget by itself: it needs 8 healthy pods and the rollout has at most 0 (Recreate removes every old pod before creating new ones); use a RollingUpdate strategy, lower the budget to minAvailable 0, or delete it", true},
		{"Recreate under minAvailable 0: met", pdb(0, 3, 10, 3), 1, RecreateReach,
			"waiting for PodDisruptionBudget web-pdb: 1 pod to take down, disruptionsAllowed 3 (0 of 10 pods must stay healthy, 3 are)", false},
	} {
		if got := Message(tc.b, tc.pods, tc.r); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
		if got := Unmeetable(tc.b, tc.r); got != tc.unmeetable {
			t.Errorf("%s: Unmeetable = %v, want %v", tc.name, got, tc.unmeetable)
		}
	}
}
