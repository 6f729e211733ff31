package bench

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// configMapName is the ConfigMap every Deployment of the configuration scenario reads.
const configMapName = "bench-config"

// configPatch is the configuration scenario's edit of that ConfigMap: one value changed.
var configPatch = []byte(`{"data":{"greeting":"hello, again"}}`)

// configScenario: count Deployments of replicas each, opted into configuration rollout
// (kroll.dev/config-rollout: "true"), all reading one ConfigMap through a volume and an
// environment variable, roll out at once, unthrottled, as in many-<count>x<replicas>.
// Arms kroll and upstream change every Deployment's image (upstream's controllers
// ignore the opt-in); arm kroll-config edits the ConfigMap instead, once, and kroll's
// controllers roll every Deployment to a new revision with its own snapshot. The two
// kroll arms make the same rollout of the same Deployments, each ReplicaSet writing the
// snapshot of its revision; the edit's cost is what it adds: the ConfigMap's one write
// in place of count Deployment patches, and whatever the controllers do differently
// when a ConfigMap, not a template, starts the rollout.
func configScenario(count, replicas int) Scenario {
	s := Scenario{
		Name: fmt.Sprintf("config-%dx%d", count, replicas),
		Title: fmt.Sprintf("Configuration rollout: %d Deployments × %d sharing one ConfigMap, at once, %s",
			count, replicas, Unthrottled),
		Size: count * replicas, Nodes: nodesFor(count * replicas), Arms: []Arm{krollArm, upstreamArm, configArm},
		Limits: Unthrottled, settle: settleFor(count * replicas),
	}
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
	}
	s.prepare = func(ctx context.Context, r *run) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMapName}, Data: map[string]string{"greeting": "hello"}}
		if _, err := r.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
		ds := make([]*appsv1.Deployment, count)
		for i, name := range names {
			ds[i] = withConfig(newDeployment(name, int32(replicas), false))
		}
		return r.createDeployments(ctx, ds)
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		var secs float64
		var margin *int32
		var err error
		if r.arm.Config {
			secs, margin, err = r.rollConfig(ctx, names)
		} else {
			secs, margin, err = r.rollDeployments(ctx, names)
		}
		if err != nil {
			return measurement{}, err
		}
		return measurement{seconds: secs, podWritesPerSecond: float64(2*count*replicas) / secs, leastAvailabilityMargin: margin}, nil
	}
	return s
}

// withConfig opts d into configuration rollout and has its container read the
// scenario's ConfigMap as a file (a volume) and as an environment variable.
func withConfig(d *appsv1.Deployment) *appsv1.Deployment {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[configrollout.Annotation] = "true"
	spec := &d.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMapName}}}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: "/etc/config"})
	c.Env = append(c.Env, corev1.EnvVar{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMapName}, Key: "greeting"}}})
	return d
}

// rollConfig edits the scenario's ConfigMap and returns the seconds until every named
// Deployment has rolled to a new ReplicaSet and is complete there, and their least
// availability margin meanwhile. The edit moves no Deployment's generation, so
// complete is not enough: each must also report NewReplicaSetAvailable for a
// ReplicaSet other than the one it reported before the edit (the status write that
// says "ReplicaSet … has successfully progressed" of the new one, the write the image
// arms' done waits for too).
func (r *run) rollConfig(ctx context.Context, names []string) (float64, *int32, error) {
	inf := r.informers.Apps().V1().Deployments().Informer()
	if err := r.sync(ctx, inf); err != nil {
		return 0, nil, err
	}
	lister := r.informers.Apps().V1().Deployments().Lister().Deployments(namespace)
	before := map[string]string{}
	for _, name := range names {
		d, err := lister.Get(name)
		if err != nil {
			return 0, nil, err
		}
		before[name] = progressedMessage(d)
	}
	firstNotDone := func() (string, *appsv1.Deployment) {
		for _, name := range names {
			d, err := lister.Get(name)
			if err != nil {
				return name, nil
			}
			if msg := progressedMessage(d); msg == "" || msg == before[name] || !deploymentComplete(d) {
				return name, d
			}
		}
		return "", nil
	}
	edit := func(ctx context.Context) error {
		_, err := r.client.CoreV1().ConfigMaps(namespace).Patch(ctx, configMapName, types.StrategicMergePatchType, configPatch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("edit ConfigMap: %w", err)
		}
		return nil
	}
	return r.roll(ctx, names, edit, func() bool { name, _ := firstNotDone(); return name == "" }, func() string {
		name, d := firstNotDone()
		if d == nil {
			return name + " not seen"
		}
		s := d.Status
		return fmt.Sprintf("%s: replicas=%d updated=%d available=%d, %q (before the edit %q)",
			name, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, progressedMessage(d), before[name])
	})
}

// progressedMessage is the message of d's Progressing condition when its reason is
// NewReplicaSetAvailable (naming the ReplicaSet it completed on), "" otherwise.
func progressedMessage(d *appsv1.Deployment) string {
	c := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != rollout.ReasonNewReplicaSetAvailable || !strings.Contains(c.Message, "successfully progressed") {
		return ""
	}
	return c.Message
}
