package history

import (
	"encoding/json"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Templates applies ControllerRevisions of the form TemplatePatch writes (a spec.template
// to put in place) without ApplyRevision's round trip of the whole owner through JSON
// and a strategic merge: the template each holds is decoded once, a revision's data
// never changing, and set into a copy of the owner. A controller applies its current
// and update revisions on every sync. Other revisions go through ApplyRevision.
type Templates struct {
	mu    sync.Mutex
	byUID map[types.UID]*corev1.PodTemplateSpec // nil: not of TemplatePatch's form
}

// templatesKept bounds the decoded templates kept: past it they are all dropped and
// decoded again as asked.
const templatesKept = 4096

// ApplyToStatefulSet is ApplyRevision(set, revision).
func (t *Templates) ApplyToStatefulSet(set *appsv1.StatefulSet, revision *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	template := t.template(revision)
	if template == nil {
		return ApplyRevision(set, revision)
	}
	out := set.DeepCopy()
	out.Spec.Template = *template.DeepCopy()
	return out, nil
}

func (t *Templates) template(revision *appsv1.ControllerRevision) *corev1.PodTemplateSpec {
	if revision.UID == "" {
		return templateOfPatch(revision.Data.Raw)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if template, ok := t.byUID[revision.UID]; ok {
		return template
	}
	if t.byUID == nil || len(t.byUID) >= templatesKept {
		t.byUID = map[types.UID]*corev1.PodTemplateSpec{}
	}
	template := templateOfPatch(revision.Data.Raw)
	t.byUID[revision.UID] = template
	return template
}

// templateOfPatch is the template of data of exactly TemplatePatch's form,
// {"spec":{"template":{…,"$patch":"replace"}}}; nil for any other data.
func templateOfPatch(data []byte) *corev1.PodTemplateSpec {
	var whole map[string]json.RawMessage
	if json.Unmarshal(data, &whole) != nil || len(whole) != 1 || whole["spec"] == nil {
		return nil
	}
	var spec map[string]json.RawMessage
	if json.Unmarshal(whole["spec"], &spec) != nil || len(spec) != 1 || spec["template"] == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(spec["template"], &fields) != nil || string(fields["$patch"]) != `"replace"` {
		return nil
	}
	delete(fields, "$patch")
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	template := &corev1.PodTemplateSpec{}
	if json.Unmarshal(rest, template) != nil {
		return nil
	}
	return template
}

// Template is the pod template revision holds when its data is of TemplatePatch's
// form (every revision kroll and upstream write); nil otherwise. Do not change it:
// it is shared.
func (t *Templates) Template(revision *appsv1.ControllerRevision) *corev1.PodTemplateSpec {
	return t.template(revision)
}
