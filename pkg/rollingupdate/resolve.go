package rollingupdate

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// resolution is what resolve found: where the update stands and what is left to do.
// (Not to be confused with Step, the sizes between two scaling operations.)
type resolution struct {
	// from is the controller being scaled down (nil once it is gone), to the one being
	// scaled up (nil until created from create).
	from, to *corev1.ReplicationController
	create   *corev1.ReplicationController
	// fromLabel is the deployment label value from's template, pods and selector get
	// before to is created ("" when from needs none).
	fromLabel string
	// desired is the size to ends at.
	desired int32
	// rename: at the end to takes from's name (OldName), through a stand-in.
	rename bool
	// standIn is the controller holding OldName while to is renamed to it.
	standIn *corev1.ReplicationController
	// finish is a survivor whose partner is gone: only its annotations are left to strip.
	finish *corev1.ReplicationController
	// rollback: from is the update's new controller, to the one it started from.
	rollback bool
	// resumed: to existed before this run.
	resumed bool
}

func (res *resolution) toName() string {
	switch {
	case res.to != nil:
		return res.to.Name
	case res.create != nil:
		return res.create.Name
	case res.finish != nil:
		return res.finish.Name
	}
	return ""
}

func (res *resolution) fromName() string {
	if res.from != nil {
		return res.from.Name
	}
	return ""
}

// names are the controller names the update touches: the ones it locks (so also the
// ones whose locks a killed client may have left, to be taken over and released).
func (res *resolution) names() []string {
	var out []string
	for _, n := range []string{res.fromName(), res.toName()} {
		if n != "" {
			out = append(out, n)
		}
	}
	if res.standIn != nil {
		out = append(out, res.standIn.Name, res.standIn.Annotations[RenameFromAnnotation])
	}
	return out
}

func notFound(name string) error {
	return fmt.Errorf("replicationcontroller/%s not found", name)
}

// resolve reads the controllers and decides what is left to do. It writes nothing.
func (u *updater) resolve(ctx context.Context) (*resolution, error) {
	o := &u.o
	old, err := u.get(ctx, o.OldName)
	if err != nil {
		return nil, err
	}
	if o.Rollback {
		return u.resolveRollback(ctx, old)
	}
	if old != nil && old.Annotations[RenameFromAnnotation] != "" {
		// A rename was under way: old is its stand-in.
		to, err := u.get(ctx, old.Annotations[RenameFromAnnotation])
		if err != nil {
			return nil, err
		}
		return &resolution{to: to, standIn: old, rename: true, resumed: true}, nil
	}
	if old == nil {
		// Either the update is past deleting old (finish it), or there is nothing to update.
		partner, err := u.partnerOf(ctx, o.OldName)
		if err != nil {
			return nil, err
		}
		if partner == nil || (!o.renames() && partner.Name != u.newNameHint()) {
			return nil, notFound(o.OldName)
		}
		if o.renames() {
			return &resolution{to: partner, rename: true, resumed: true}, nil
		}
		return &resolution{finish: partner}, nil
	}

	res := &resolution{from: old, rename: o.renames(), desired: replicasOf(old)}
	if v, ok := old.Annotations[OriginalReplicasAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			res.desired = int32(n)
		}
	}
	want, err := u.target(old, res.desired)
	if err != nil {
		return nil, err
	}
	// An update already under way continues with its controller, if it rolls to the same thing.
	name := want.Name
	if next := old.Annotations[NextControllerAnnotation]; next != "" && o.NewName == "" && (o.NewController == nil || res.rename) {
		name = next
	}
	existing, err := u.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if existing == nil && name != want.Name {
		if existing, err = u.get(ctx, want.Name); err != nil {
			return nil, err
		}
	}
	if existing != nil {
		if !isSourcedFrom(existing, old.Name) {
			return nil, fmt.Errorf("replicationcontroller/%s already exists and is not part of a rolling update of %s: choose another name", existing.Name, old.Name)
		}
		if existing.Spec.Template == nil || !sameTemplate(existing.Spec.Template, want.Spec.Template, o.DeploymentKey) {
			return nil, u.differentUpdate(existing)
		}
		res.to, res.resumed = existing, true
		if d, ok := existing.Annotations[DesiredReplicasAnnotation]; ok {
			if n, err := strconv.Atoi(d); err == nil {
				res.desired = int32(n)
			}
		}
	} else {
		res.create = want
	}
	if _, has := old.Spec.Selector[o.DeploymentKey]; !has && u.labelsBoth() {
		res.fromLabel = TemplateHash(old.Spec.Template, o.DeploymentKey)
	}
	newSelector := want.Spec.Selector
	if res.to != nil {
		newSelector = res.to.Spec.Selector
	}
	oldSelector := old.Spec.Selector
	if res.fromLabel != "" {
		oldSelector, _ = labelled(oldSelector, old.Spec.Template, o.DeploymentKey, res.fromLabel)
	}
	if !disjoint(oldSelector, newSelector) {
		return nil, fmt.Errorf("%sthe selector of replicationcontroller/%s (%s) overlaps that of %s (%s): give it a key whose value differs from %s's",
			filePrefix(o.File), want.Name, selectorString(newSelector), old.Name, selectorString(oldSelector), old.Name)
	}
	return res, nil
}

func filePrefix(file string) string {
	if file == "" {
		return ""
	}
	return file + ": "
}

// labelsBoth tells whether this update tells the controllers apart with the deployment
// label: always, except for a file naming a new controller (its selector must differ).
func (u *updater) labelsBoth() bool {
	return u.o.NewController == nil || u.o.renames()
}

func (u *updater) newNameHint() string {
	if u.o.NewName != "" {
		return u.o.NewName
	}
	if u.o.NewController != nil {
		return u.o.NewController.Name
	}
	return ""
}

// target is the controller the update of old rolls to, as the options describe it.
func (u *updater) target(old *corev1.ReplicationController, desired int32) (*corev1.ReplicationController, error) {
	o := &u.o
	if o.Image != "" {
		t, err := applyImage(old, imageChange{image: o.Image, container: o.Container, pullPolicy: o.PullPolicy})
		if err != nil {
			return nil, err
		}
		return newControllerFor(old, o.NewName, t, desired, o.DeploymentKey), nil
	}
	file := o.NewController
	if old.Spec.Template != nil && sameTemplate(old.Spec.Template, file.Spec.Template, o.DeploymentKey) {
		return nil, fmt.Errorf("%s does not change the pod template of replicationcontroller/%s: nothing to roll out", o.File, old.Name)
	}
	replicas := desired
	if file.Spec.Replicas != nil {
		replicas = *file.Spec.Replicas
	}
	if o.renames() {
		// The file is the next version of old: it gets a synthesized name and the label.
		from := file.DeepCopy()
		from.Name, from.Namespace = old.Name, old.Namespace
		if len(from.Spec.Selector) == 0 {
			from.Spec.Selector = from.Spec.Template.Labels
		}
		rc := newControllerFor(from, "", from.Spec.Template, replicas, o.DeploymentKey)
		rc.Spec.MinReadySeconds = file.Spec.MinReadySeconds
		return rc, nil
	}
	rc := file.DeepCopy()
	rc.Namespace = old.Namespace
	rc.ResourceVersion, rc.UID = "", ""
	rc.Annotations = withoutRecovery(rc.Annotations)
	rc.Spec.Replicas = &replicas
	if len(rc.Spec.Selector) == 0 {
		rc.Spec.Selector = rc.Spec.Template.Labels
	}
	return rc, nil
}

func (u *updater) differentUpdate(existing *corev1.ReplicationController) error {
	if u.o.Image != "" && existing.Spec.Template != nil {
		for _, c := range existing.Spec.Template.Spec.Containers {
			if u.o.Container == "" || c.Name == u.o.Container {
				return fmt.Errorf("an update of replicationcontroller/%s to image %s is in progress (%s): continue it with --image=%s, or roll it back with --rollback",
					u.o.OldName, c.Image, existing.Name, c.Image)
			}
		}
	}
	return fmt.Errorf("an update of replicationcontroller/%s to another template is in progress (%s): continue it with the same command, or roll it back with --rollback", u.o.OldName, existing.Name)
}

func (u *updater) resolveRollback(ctx context.Context, target *corev1.ReplicationController) (*resolution, error) {
	o := &u.o
	if target == nil {
		return nil, notFound(o.OldName)
	}
	var partner *corev1.ReplicationController
	var err error
	for _, name := range []string{o.NewName, target.Annotations[NextControllerAnnotation], sourceName(target)} {
		if name == "" || name == target.Name {
			continue
		}
		if partner, err = u.get(ctx, name); err != nil {
			return nil, err
		}
		if partner != nil {
			break
		}
	}
	if partner == nil && o.NewName == "" {
		if partner, err = u.partnerOf(ctx, target.Name); err != nil {
			return nil, err
		}
	}
	if partner == nil {
		if sourceName(target) != "" {
			// The rollback had deleted its partner already.
			return &resolution{finish: target, rollback: true}, nil
		}
		name := o.NewName
		if name == "" {
			name = target.Annotations[NextControllerAnnotation]
		}
		if name != "" {
			return nil, fmt.Errorf("cannot roll back replicationcontroller/%s: its update partner %s does not exist; to go back to an earlier version, start a new rolling update with it", target.Name, name)
		}
		return nil, fmt.Errorf("no rolling update of replicationcontroller/%s is in progress; to go back to an earlier version, start a new rolling update with it", target.Name)
	}
	desired := replicasOf(partner)
	for _, v := range []string{partner.Annotations[DesiredReplicasAnnotation], target.Annotations[OriginalReplicasAnnotation]} {
		if n, err := strconv.Atoi(v); err == nil {
			desired = int32(n)
		}
	}
	return &resolution{from: partner, to: target, desired: desired, rollback: true, resumed: true}, nil
}
