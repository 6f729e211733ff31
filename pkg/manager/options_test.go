package manager

import (
	"strings"
	"testing"
	"time"
)

func TestEnabledControllers(t *testing.T) {
	tests := []struct {
		name      string
		selection []string
		want      string
		err       string
	}{
		{"empty is every controller", nil, "deployment,replicaset,replicationcontroller,statefulset,daemonset", ""},
		{"* is every controller", []string{"*"}, "deployment,replicaset,replicationcontroller,statefulset,daemonset", ""},
		{"* less two", []string{"*", "-daemonset", "-statefulset"}, "deployment,replicaset,replicationcontroller", ""},
		{"named ones only, in the canonical order", []string{"replicaset", "deployment"}, "deployment,replicaset", ""},
		{"-name wins over name, as upstream", []string{"deployment", "-deployment", "replicaset"}, "replicaset", ""},
		{"unknown name", []string{"*", "job"}, "", `unknown controller "job"`},
		{"nothing left", []string{"-deployment"}, "", "enables no controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EnabledControllers(tt.selection)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestValidateLeaderElectionTimings(t *testing.T) {
	le := func(lease, renew, retry time.Duration) Options {
		return Options{LeaderElection: LeaderElection{Enabled: true, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry}}
	}
	if err := le(15*time.Second, 10*time.Second, 2*time.Second).Validate(); err != nil {
		t.Errorf("upstream's timings: %v", err)
	}
	if err := le(10*time.Second, 10*time.Second, 2*time.Second).Validate(); err == nil || !strings.Contains(err.Error(), "--leader-elect-lease-duration") {
		t.Errorf("lease not longer than renew deadline: got %v", err)
	}
	if err := le(15*time.Second, 2*time.Second, 2*time.Second).Validate(); err == nil || !strings.Contains(err.Error(), "--leader-elect-renew-deadline") {
		t.Errorf("renew deadline within 1.2 retry periods: got %v", err)
	}
	if err := (Options{DeploymentWorkers: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "--concurrent-deployment-syncs") {
		t.Errorf("negative workers: got %v", err)
	}
}

func TestValidateDefaultDisruptionBudget(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "Respect": true, "Ignore": true, "respect": false, "Always": false} {
		err := Options{DefaultDisruptionBudget: v}.Validate()
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "--default-disruption-budget")) {
			t.Errorf("--default-disruption-budget=%q: Validate = %v, want ok %v", v, err, ok)
		}
	}
}
