package rolloutplan

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// configWeb is web (10 replicas, 25%/25%) opted into configuration rollout, reading
// app-config through a volume, and its one ReplicaSet, made when app-config's
// greeting was v1: revision 1, its template carrying v1's fingerprint and its record
// the snapshot.
func configWeb() (*appsv1.Deployment, *appsv1.ReplicaSet) {
	d := newDeployment("web", 10, "25%", "25%")
	d.Annotations[configrollout.Annotation] = "true"
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	resolved := configrollout.Resolve(configrollout.Refs(&d.Spec.Template.Spec), liveGreeting("v1").hashOf)
	withHash := changed(d, func(d *appsv1.Deployment) {
		d.Spec.Template = *configrollout.WithHash(&d.Spec.Template, resolved.Fingerprint)
	})
	rs := newReplicaSet(withHash, 1, 10)
	rs.Annotations[configrollout.SnapshotsAnnotation] = configrollout.Plan(resolved, rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]).String()
	return d, rs
}

// liveGreeting is the live configuration: app-config with greeting; none for "".
func liveGreeting(greeting string) *Configuration {
	c := &Configuration{ConfigMaps: map[string]*corev1.ConfigMap{}}
	if greeting != "" {
		c.ConfigMaps["app-config"] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"},
			Data: map[string]string{"greeting": greeting}}
	}
	return c
}

func TestDeploymentConfigurationRollout(t *testing.T) {
	cur, rs := configWeb()
	pods := podsOf(rs, 10, 0)
	cases := []struct {
		name    string
		next    *appsv1.Deployment
		live    *Configuration
		shape   string
		to      string
		changes string
		notes   string
	}{
		{"the live data is the revision's: nothing rolls", cur, liveGreeting("v1"), "", "1", "", "no pod changes: the template is the same"},
		{"app-config edited: a new revision rolls as an image change would (10 at 25%/25%)", cur, liveGreeting("v2"), "+3 | -5 | +5 | -5 | +2", "2",
			"configmap/app-config changed: a new revision will roll out with the live data (revision 1's snapshots hold the data its pods run now)", ""},
		{"app-config deleted: nothing rolls, the missing object named", cur, liveGreeting(""), "", "1", "",
			"referenced configmap/app-config not found: the configuration change does not roll out until it exists (or the reference is optional)"},
		{"app-config deleted and a new image: the controller makes no ReplicaSet, nothing moves", changed(cur, setImage("nginx:1.26")), liveGreeting(""), "", "1",
			"image app: nginx:1.25 → nginx:1.26", "referenced configmap/app-config not found"},
		{"a new image and the same data: the image rolls, no configuration change", changed(cur, setImage("nginx:1.26")), liveGreeting("v1"), "+3 | -5 | +5 | -5 | +2", "2",
			"image app: nginx:1.25 → nginx:1.26", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := DeploymentWithConfig(cur, []*appsv1.ReplicaSet{rs}, pods, tc.next, tc.live, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); got != tc.shape {
				t.Errorf("batches %q, want %q", got, tc.shape)
			}
			if plan.To != tc.to {
				t.Errorf("to revision %s, want %s", plan.To, tc.to)
			}
			if got := strings.Join(plan.Changes, "; "); got != tc.changes {
				t.Errorf("changes %q, want %q", got, tc.changes)
			}
			if notes := strings.Join(plan.Notes, "; "); tc.notes != "" && !strings.Contains(notes, tc.notes) {
				t.Errorf("notes %q, want %q among them", notes, tc.notes)
			}
		})
	}
}

// A revision of the plain template (upstream's controllers made it, and kroll adopted
// it, recording the live data): nothing rolls until the data changes; then the change
// says so, not that the opt-in turned on.
func TestDeploymentConfigurationRolloutAfterAnAdoption(t *testing.T) {
	cur, _ := configWeb()
	resolved := configrollout.Resolve(configrollout.Refs(&cur.Spec.Template.Spec), liveGreeting("v1").hashOf)
	cur.Annotations[configrollout.PinnedAtAnnotation] = ":" + resolved.Fingerprint
	rs := newReplicaSet(cur, 1, 10)
	for _, tc := range []struct {
		name, greeting, shape, changes string
	}{
		{"the data recorded: nothing rolls", "v1", "", ""},
		{"app-config edited: a new revision rolls", "v2", "+3 | -5 | +5 | -5 | +2",
			"configuration changed since revision 1 was adopted (its pods read the objects themselves): a new revision will roll out with the live data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := DeploymentWithConfig(cur, []*appsv1.ReplicaSet{rs}, podsOf(rs, 10, 0), cur, liveGreeting(tc.greeting), now)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); got != tc.shape {
				t.Errorf("batches %q, want %q", got, tc.shape)
			}
			if got := strings.Join(plan.Changes, "; "); got != tc.changes {
				t.Errorf("changes %q, want %q", got, tc.changes)
			}
		})
	}
}
