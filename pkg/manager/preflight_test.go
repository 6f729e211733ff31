package manager

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWorkloadControllersOn(t *testing.T) {
	all := "deployment-controller,replicaset-controller,replicationcontroller-controller,statefulset-controller,daemonset-controller"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no --controllers: the default * runs them all", []string{"kube-controller-manager", "--leader-elect=true"}, all},
		{"* runs them all", []string{"--controllers=*,bootstrapsigner"}, all},
		{"all five switched off", []string{"--controllers=*,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-statefulset-controller,-daemonset-controller"}, ""},
		{"switched off by their aliases", []string{"--controllers", "*,-deployment,-replicaset,-replicationcontroller,-statefulset,-daemonset"}, ""},
		{"one left on", []string{"--controllers=*,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-statefulset-controller"}, "daemonset-controller"},
		{"only named ones run, without *", []string{"--controllers=garbage-collector-controller,statefulset"}, "statefulset-controller"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(workloadControllersOn(c.args), ","); got != c.want {
				t.Errorf("on = %q, want %q", got, c.want)
			}
		})
	}
}

func TestLeaseHeld(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		d := int32(15)
		renew := metav1.NewMicroTime(now.Add(-renewedAgo))
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &renew}}
	}
	cases := []struct {
		name      string
		lease     *coordinationv1.Lease
		held      bool
		sinceBack time.Duration
	}{
		{"renewed 2s ago: held; writes count from 17s back", lease("cp-1_abc", 2*time.Second), true, 17 * time.Second},
		{"renewed 16s ago, duration 15s: expired", lease("cp-1_abc", 16*time.Second), false, 0},
		{"released: no holder", lease("", time.Second), false, 0},
		{"no renew time", &coordinationv1.Lease{}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			held, since := leaseHeld(c.lease, now)
			if held != c.held || (held && now.Sub(since) != c.sinceBack) {
				t.Errorf("held %v since %v back, want %v since %v back", held, now.Sub(since), c.held, c.sinceBack)
			}
		})
	}
}

func TestUpstreamWroteSince(t *testing.T) {
	since := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	entry := func(manager, subresource string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		t := metav1.NewTime(at)
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource, Time: &t, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	status := `{"f:status":{"f:replicas":{}}}`
	cases := []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   bool
	}{
		{"a Deployment's status written after since", []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "status", since.Add(time.Second), status)}, true},
		{"a ReplicaSet scaled by the Deployment controller", []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", since, `{"f:spec":{"f:replicas":{}}}`)}, true},
		{"written before since: an old leader's", []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "status", since.Add(-time.Second), status)}, false},
		{"the garbage collector's owner references", []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", since.Add(time.Second), `{"f:metadata":{"f:ownerReferences":{}}}`)}, false},
		{"the autoscaler's scale", []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "scale", since.Add(time.Second), `{"f:spec":{"f:replicas":{}}}`)}, false},
		{"kroll's own writes", []metav1.ManagedFieldsEntry{entry("kroll", "status", since.Add(time.Second), status)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := upstreamWroteSince(c.fields, since); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestResourcesRead(t *testing.T) {
	var got []string
	for _, r := range resourcesRead([]string{ReplicaSet}, false) {
		got = append(got, r.String())
	}
	// Its owners' Deployments and the budgets: a Deployment that respects disruption
	// budgets has its old pods evicted (pkg/disruption).
	if want := "replicasets.apps pods deployments.apps poddisruptionbudgets.policy"; strings.Join(got, " ") != want {
		t.Errorf("the ReplicaSet controller reads %v, want %s", got, want)
	}
	if n := len(resourcesRead(ControllerNames, true)); n != 10 {
		t.Errorf("a dry run of every controller reads %d resources, want 10", n)
	}
}
