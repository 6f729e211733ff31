package rollingupdate

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The recovery annotations, with the keys kubectl's rolling-update wrote, so that an
// update kubectl started can be finished here too.
const (
	// DesiredReplicasAnnotation, on the controller being scaled up, is the size it ends at.
	DesiredReplicasAnnotation = "kubectl.kubernetes.io/desired-replicas"
	// OriginalReplicasAnnotation, on the controller being scaled down, is the size it
	// had when the update began (what --rollback returns it to).
	OriginalReplicasAnnotation = "kubectl.kubernetes.io/original-replicas"
	// SourceIDAnnotation, on the controller being scaled up, is "<name>:<uid>" of the
	// controller it replaces: the update's source.
	SourceIDAnnotation = "kubectl.kubernetes.io/update-source-id"
	// NextControllerAnnotation, on the controller being replaced, names its update
	// partner: the controller replacing it.
	NextControllerAnnotation = "kubectl.kubernetes.io/next-controller-id"
	// RenameFromAnnotation marks the stand-in created under the old name while the new
	// controller is renamed to it (see the package doc); its value is the new name.
	RenameFromAnnotation = "kroll.dev/rename-from"
	// RenamingLabel is added to the stand-in's selector and template so that it selects
	// no pod until the rename completes.
	RenamingLabel = "kroll.dev/renaming"
)

var recoveryAnnotations = []string{DesiredReplicasAnnotation, OriginalReplicasAnnotation, SourceIDAnnotation, NextControllerAnnotation, RenameFromAnnotation}

// TemplateHash is the value of the deployment label for a pod template: the MD5 of its
// JSON, without the deployment label itself.
func TemplateHash(t *corev1.PodTemplateSpec, deploymentKey string) string {
	c := withoutLabel(t, deploymentKey)
	b, _ := json.Marshal(c)
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func withoutLabel(t *corev1.PodTemplateSpec, key string) *corev1.PodTemplateSpec {
	c := t.DeepCopy()
	delete(c.Labels, key)
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	return c
}

// sameTemplate tells whether two templates differ in nothing but the deployment label.
func sameTemplate(a, b *corev1.PodTemplateSpec, deploymentKey string) bool {
	return equality.Semantic.DeepEqual(withoutLabel(a, deploymentKey), withoutLabel(b, deploymentKey))
}

// sourceID is the SourceIDAnnotation value naming rc.
func sourceID(name string, uid types.UID) string { return name + ":" + string(uid) }

// isSourcedFrom tells whether rc is the partner of an update from the controller name.
func isSourcedFrom(rc *corev1.ReplicationController, name string) bool {
	src, ok := rc.Annotations[SourceIDAnnotation]
	return ok && strings.HasPrefix(src, name+":")
}

// sourceName is the name in rc's SourceIDAnnotation ("" without one).
func sourceName(rc *corev1.ReplicationController) string {
	src := rc.Annotations[SourceIDAnnotation]
	if i := strings.LastIndex(src, ":"); i > 0 {
		return src[:i]
	}
	return ""
}

// imageChange is a new image for one container of a controller's template.
type imageChange struct {
	image, container string
	pullPolicy       corev1.PullPolicy
}

// applyImage returns old's template with the change made, or why it cannot be.
func applyImage(old *corev1.ReplicationController, ch imageChange) (*corev1.PodTemplateSpec, error) {
	if old.Spec.Template == nil {
		return nil, fmt.Errorf("replicationcontroller/%s has no pod template", old.Name)
	}
	t := old.Spec.Template.DeepCopy()
	var target *corev1.Container
	var names []string
	for i := range t.Spec.Containers {
		names = append(names, t.Spec.Containers[i].Name)
		if t.Spec.Containers[i].Name == ch.container || (ch.container == "" && len(t.Spec.Containers) == 1) {
			target = &t.Spec.Containers[i]
		}
	}
	switch {
	case target == nil && ch.container == "":
		return nil, fmt.Errorf("replicationcontroller/%s has %d containers (%s): name the one to update with --container", old.Name, len(names), strings.Join(names, ", "))
	case target == nil:
		return nil, fmt.Errorf("replicationcontroller/%s has no container %q (it has %s)", old.Name, ch.container, strings.Join(names, ", "))
	case target.Image == ch.image && ch.pullPolicy == "":
		return nil, fmt.Errorf("--image %s is the current image of replicationcontroller/%s: give another image, or --image-pull-policy to roll out a pull-policy change", ch.image, old.Name)
	}
	target.Image = ch.image
	if ch.pullPolicy != "" {
		target.ImagePullPolicy = ch.pullPolicy
	}
	return t, nil
}

// labelled returns rc's selector and template labels with key=value added (or changed).
func labelled(sel map[string]string, t *corev1.PodTemplateSpec, key, value string) (map[string]string, *corev1.PodTemplateSpec) {
	s := make(map[string]string, len(sel)+1)
	for k, v := range sel {
		s[k] = v
	}
	s[key] = value
	t = t.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[key] = value
	return s, t
}

// newControllerFor builds the controller an update of old rolls to: old's labels and
// annotations (without the recovery ones), template t carrying deploymentKey=<hash of
// t>, old's selector with the same pair, replicas as given. Without a name it is
// "<old>-<hash>".
func newControllerFor(old *corev1.ReplicationController, name string, t *corev1.PodTemplateSpec, replicas int32, deploymentKey string) *corev1.ReplicationController {
	hash := TemplateHash(t, deploymentKey)
	if name == "" {
		name = old.Name + "-" + hash
	}
	sel := old.Spec.Selector
	if len(sel) == 0 {
		sel = old.Spec.Template.Labels
	}
	sel, t = labelled(sel, t, deploymentKey, hash)
	return &corev1.ReplicationController{
		ObjectMeta: objectMetaFrom(old, name),
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        &replicas,
			MinReadySeconds: old.Spec.MinReadySeconds,
			Selector:        sel,
			Template:        t,
		},
	}
}

// objectMetaFrom is metadata for a controller called name, in from's namespace with
// from's labels and annotations, minus the recovery annotations.
func objectMetaFrom(from *corev1.ReplicationController, name string) (m metav1.ObjectMeta) {
	m.Name, m.Namespace = name, from.Namespace
	if len(from.Labels) > 0 {
		m.Labels = make(map[string]string, len(from.Labels))
		for k, v := range from.Labels {
			m.Labels[k] = v
		}
	}
	m.Annotations = withoutRecovery(from.Annotations)
	return m
}

// withoutRecovery is a copy of annotations without the recovery annotations (nil if empty).
func withoutRecovery(annotations map[string]string) map[string]string {
	var out map[string]string
	for k, v := range annotations {
		if isRecoveryAnnotation(k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

func isRecoveryAnnotation(key string) bool {
	for _, k := range recoveryAnnotations {
		if k == key {
			return true
		}
	}
	return false
}

// hasRecoveryAnnotations tells whether rc still carries any recovery annotation.
func hasRecoveryAnnotations(rc *corev1.ReplicationController) bool {
	for k := range rc.Annotations {
		if isRecoveryAnnotation(k) {
			return true
		}
	}
	return false
}

// disjoint tells whether no pod can match both selectors: some key of old's selector
// has another value in new's (kubectl's rule). An empty selector matches every pod.
func disjoint(old, new map[string]string) bool {
	for k, v := range old {
		if nv, ok := new[k]; ok && nv != v {
			return true
		}
	}
	return false
}

// selectorString is a selector as kubectl prints it: k=v pairs, sorted, comma-separated.
func selectorString(sel map[string]string) string {
	pairs := make([]string, 0, len(sel))
	for k, v := range sel {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}
