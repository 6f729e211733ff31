package history

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDefaultPodTemplate(t *testing.T) {
	defaulted := webSet("nginx:1.25").Spec.Template
	cases := []struct {
		name  string
		strip func(*corev1.PodTemplateSpec)
	}{
		{"nothing missing", func(*corev1.PodTemplateSpec) {}},
		{"pod spec: dnsPolicy, restartPolicy, schedulerName, securityContext, grace period", func(p *corev1.PodTemplateSpec) {
			p.Spec.DNSPolicy, p.Spec.RestartPolicy, p.Spec.SchedulerName = "", "", ""
			p.Spec.SecurityContext, p.Spec.TerminationGracePeriodSeconds = nil, nil
		}},
		{"container: pull policy (tag 1.25: IfNotPresent), termination message, port protocol", func(p *corev1.PodTemplateSpec) {
			c := &p.Spec.Containers[0]
			c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy, c.Ports[0].Protocol = "", "", "", ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := defaulted.DeepCopy()
			tc.strip(got)
			DefaultPodTemplate(got)
			if !equality.Semantic.DeepEqual(*got, defaulted) {
				t.Errorf("defaulted to\n%+v\nwant\n%+v", got.Spec, defaulted.Spec)
			}
		})
	}
}

func TestDefaultPodTemplateParts(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "latest", Image: "registry:5000/app",
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}},
				Env:            []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}},
			{Name: "digest", Image: "nginx@sha256:0123"},
		},
		Volumes: []corev1.Volume{{Name: "scratch"}, {Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}},
	}}
	DefaultPodTemplate(&tmpl)
	c := tmpl.Spec.Containers[0]
	p := c.ReadinessProbe
	checks := []struct {
		what      string
		got, want any
	}{
		{"untagged image pulls Always", c.ImagePullPolicy, corev1.PullAlways},
		{"digest-only image pulls IfNotPresent", tmpl.Spec.Containers[1].ImagePullPolicy, corev1.PullIfNotPresent},
		{"probe 1s/10s/1/3", [4]int32{p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold}, [4]int32{1, 10, 1, 3}},
		{"http probe / over HTTP", p.HTTPGet.Path + " " + string(p.HTTPGet.Scheme), "/ HTTP"},
		{"fieldRef apiVersion v1", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"cpu request from its limit", c.Resources.Requests.Cpu().String(), "500m"},
		{"a volume without a source is an emptyDir", tmpl.Spec.Volumes[0].EmptyDir != nil, true},
		{"configMap defaultMode 0644", *tmpl.Spec.Volumes[1].ConfigMap.DefaultMode, int32(0o644)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

// A StatefulSet's newest revision written by an apiserver that defaulted fewer fields
// (no terminationMessagePolicy, no pull policy, no schedulerName) is its template still:
// no new revision, no renumbering.
func TestCurrentRevisionTakesARevisionWithFewerDefaults(t *testing.T) {
	set := webSet("nginx:1.25")
	older := set.DeepCopy()
	c := &older.Spec.Template.Spec.Containers[0]
	c.TerminationMessagePolicy, c.ImagePullPolicy = "", ""
	older.Spec.Template.Spec.SchedulerName = ""
	rev := revisionOf(t, older, 3, 0)
	if current := revisionOf(t, set, 3, 0); string(current.Data.Raw) == string(rev.Data.Raw) {
		t.Fatal("the test revision should differ in its bytes")
	}
	f := newFakeRevisions(rev)
	got, _, err := CurrentRevision(context.Background(), f, set, sorted(f))
	if err != nil || got.Name != rev.Name || len(f.actions) != 0 {
		t.Errorf("got %v (%v) after %v; want %s unchanged", got, err, f.actions, rev.Name)
	}
	// A real change is not hidden by the defaulting: another image is a new revision.
	f = newFakeRevisions(rev)
	got, _, err = CurrentRevision(context.Background(), f, webSet("nginx:1.26"), sorted(f))
	if err != nil || got.Name == rev.Name {
		t.Errorf("nginx:1.26 got %v (%v); want a new revision", got, err)
	}
	// A DaemonSet has no semantic comparison upstream: its revisions match byte for byte.
	ds, dsOlder := logsSet("nginx:1.25"), logsSet("nginx:1.25")
	dsOlder.Spec.Template.Spec.SchedulerName = ""
	old := revisionOf(t, dsOlder, 1, 0)
	f = newFakeRevisions(old)
	if got, _, err = CurrentRevision(context.Background(), f, ds, sorted(f)); err != nil || got.Name == old.Name {
		t.Errorf("DaemonSet got %v (%v); want a new revision as upstream makes", got, err)
	}
}
