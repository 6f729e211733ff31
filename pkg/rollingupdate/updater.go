package rollingupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kroll-dev/kroll/internal/failpoint"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Options are one rolling update, as the command line states it.
type Options struct {
	Namespace string
	// OldName is the controller to update. NewName is the controller to update it to;
	// empty, a name is synthesized and the new controller is renamed to OldName at the
	// end (a NewController from a file with another name names it too).
	OldName, NewName string
	// Image (with Container and PullPolicy) or NewController (read from File) is what
	// to roll to; neither with Rollback.
	Image         string
	Container     string
	PullPolicy    corev1.PullPolicy
	NewController *corev1.ReplicationController
	File          string
	// Rollback reverses the update in progress from OldName: its partner is scaled down
	// and deleted, OldName scaled back up to its original size.
	Rollback bool
	// DeploymentKey is the label that tells the two controllers' pods apart.
	DeploymentKey string
	// UpdatePeriod is the pause after scaling the new controller up; PollInterval bounds
	// how late a time-based change (minReadySeconds passing) is noticed; Timeout is how
	// long the update may go without progress before it gives up.
	UpdatePeriod, PollInterval, Timeout time.Duration
	MaxSurge, MaxUnavailable            intstr.IntOrString
	// DryRun prints what would be rolled from and to, and changes nothing.
	DryRun bool
	// Command is the command line, shown to a client refused by the lock.
	Command string
	Out     io.Writer
}

// Validate checks the options that need no API call.
func (o *Options) Validate() error {
	switch {
	case o.OldName == "":
		return errors.New("the name of the replication controller to update is required")
	case o.Rollback && (o.Image != "" || o.NewController != nil):
		return errors.New("--rollback takes no --image and no -f: it returns to the controller the update started from")
	case !o.Rollback && o.Image == "" && o.NewController == nil:
		return errors.New("say what to update to: --image=IMAGE or -f FILE")
	case o.Image != "" && o.NewController != nil:
		return errors.New("--image and -f cannot be used together")
	case o.NewName != "" && o.NewName == o.OldName:
		return fmt.Errorf("the new replication controller cannot have the name of the old one (%s)", o.OldName)
	case o.UpdatePeriod < 0 || o.PollInterval <= 0 || o.Timeout <= 0:
		return errors.New("--update-period must be ≥ 0, --poll-interval and --timeout > 0")
	case o.Container != "" && o.Image == "":
		return errors.New("--container goes with --image")
	}
	if errs := validation.IsQualifiedName(o.DeploymentKey); len(errs) > 0 {
		return fmt.Errorf("--deployment-label-key %q: %s", o.DeploymentKey, errs[0])
	}
	switch o.PullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return fmt.Errorf("--image-pull-policy %q: must be Always, Never or IfNotPresent", o.PullPolicy)
	}
	if o.PullPolicy != "" && o.Image == "" {
		return errors.New("--image-pull-policy goes with --image")
	}
	if rc := o.NewController; rc != nil {
		if rc.Name == "" {
			return fmt.Errorf("%s: the replication controller has no name", o.File)
		}
		if o.NewName != "" && rc.Name != o.NewName {
			return fmt.Errorf("%s names replicationcontroller/%s, not %s", o.File, rc.Name, o.NewName)
		}
		if rc.Namespace != "" && rc.Namespace != o.Namespace {
			return fmt.Errorf("%s is for namespace %s, not %s", o.File, rc.Namespace, o.Namespace)
		}
		if rc.Spec.Template == nil {
			return fmt.Errorf("%s: replicationcontroller/%s has no pod template", o.File, rc.Name)
		}
	}
	for _, v := range []intstr.IntOrString{o.MaxSurge, o.MaxUnavailable} {
		if _, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, true); err != nil {
			return fmt.Errorf("--max-surge/--max-unavailable %q: %w", v.String(), err)
		}
	}
	if o.MaxSurge.String() == "0" && o.MaxUnavailable.String() == "0" {
		return errors.New("--max-surge and --max-unavailable cannot both be 0: the update could never move")
	}
	return nil
}

// renames tells whether the new controller takes the old one's name at the end.
func (o *Options) renames() bool {
	if o.NewName != "" {
		return false
	}
	return o.NewController == nil || o.NewController.Name == o.OldName
}

// Run performs the rolling update o describes, or resumes it: every step leaves state
// from which running the same command again finishes the update (see the package doc).
func Run(ctx context.Context, client kubernetes.Interface, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	u := &updater{client: client, rcs: client.CoreV1().ReplicationControllers(o.Namespace), o: o, out: o.Out}
	if u.out == nil {
		u.out = io.Discard
	}
	if o.DryRun {
		p, err := u.resolve(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(u.out, "Rolling from:\n%s\nTo:\n%s\n", p.fromName(), p.toName())
		return nil
	}

	// Lock the controller named first, so that a second client is told so rather than
	// anything about the state the first is changing; then, once the state says which
	// other controllers take part, those too, and read the state again under the lock.
	u.lock = newLock(client, o.Namespace, o.Command)
	defer u.lock.release()
	if err := u.lock.acquire(ctx, o.OldName); err != nil {
		return err
	}
	p, err := u.resolve(ctx)
	if err != nil {
		return err
	}
	if err := u.lock.acquire(ctx, p.names()...); err != nil {
		return err
	}
	if p, err = u.resolve(ctx); err != nil {
		return err
	}
	if err := u.lock.acquire(ctx, p.names()...); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-u.lock.lost:
			cancel(err)
		case <-ctx.Done():
		}
	}()
	if u.view, err = startView(ctx, client, o.Namespace, o.PollInterval); err != nil {
		return u.stopped(ctx, err)
	}
	defer u.view.stop()
	err = u.stopped(ctx, u.execute(ctx, p))
	var te *timeoutError
	if errors.As(err, &te) {
		err = fmt.Errorf("%w; fix the cause and run the same command again to resume, or roll back with --rollback", err)
	}
	return err
}

// stopped turns an error caused by the command being stopped into one that says how to go on.
func (u *updater) stopped(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		return fmt.Errorf("interrupted; the update of replicationcontroller/%s is recorded on its controllers: run the same command again to resume it, or roll it back with --rollback", u.o.OldName)
	}
	return cause
}

type updater struct {
	client kubernetes.Interface
	rcs    typedcorev1.ReplicationControllerInterface
	o      Options
	out    io.Writer
	lock   *lock
	view   *view
}

// plan is what resolve found: where the update stands and what is left to do.
type plan struct {
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

func (p *plan) toName() string {
	switch {
	case p.to != nil:
		return p.to.Name
	case p.create != nil:
		return p.create.Name
	case p.finish != nil:
		return p.finish.Name
	}
	return ""
}

func (p *plan) fromName() string {
	if p.from != nil {
		return p.from.Name
	}
	return ""
}

// names are the controller names the update touches: the ones it locks (so also the
// ones whose locks a killed client may have left, to be taken over and released).
func (p *plan) names() []string {
	var out []string
	for _, n := range []string{p.fromName(), p.toName()} {
		if n != "" {
			out = append(out, n)
		}
	}
	if p.standIn != nil {
		out = append(out, p.standIn.Name, p.standIn.Annotations[RenameFromAnnotation])
	}
	return out
}

// get reads a controller; nil when it does not exist.
func (u *updater) get(ctx context.Context, name string) (*corev1.ReplicationController, error) {
	rc, err := u.rcs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get replicationcontroller/%s: %w", name, err)
	}
	return rc, nil
}

// partnerOf finds the controller an update from name is rolling to, by its source
// annotation (after a crash the old controller may be gone, or may not name it).
func (u *updater) partnerOf(ctx context.Context, name string) (*corev1.ReplicationController, error) {
	list, err := u.rcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list replication controllers in %s: %w", u.o.Namespace, err)
	}
	for i := range list.Items {
		if rc := &list.Items[i]; rc.Name != name && isSourcedFrom(rc, name) {
			return rc, nil
		}
	}
	return nil, nil
}

func notFound(name string) error {
	return fmt.Errorf("replicationcontroller/%s not found", name)
}

// resolve reads the controllers and decides what is left to do. It writes nothing.
func (u *updater) resolve(ctx context.Context) (*plan, error) {
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
		return &plan{to: to, standIn: old, rename: true, resumed: true}, nil
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
			return &plan{to: partner, rename: true, resumed: true}, nil
		}
		return &plan{finish: partner}, nil
	}

	p := &plan{from: old, rename: o.renames(), desired: replicasOf(old)}
	if v, ok := old.Annotations[OriginalReplicasAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			p.desired = int32(n)
		}
	}
	want, err := u.target(old, p.desired)
	if err != nil {
		return nil, err
	}
	// An update already under way continues with its controller, if it rolls to the same thing.
	name := want.Name
	if next := old.Annotations[NextControllerAnnotation]; next != "" && o.NewName == "" && (o.NewController == nil || p.rename) {
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
		p.to, p.resumed = existing, true
		if d, ok := existing.Annotations[DesiredReplicasAnnotation]; ok {
			if n, err := strconv.Atoi(d); err == nil {
				p.desired = int32(n)
			}
		}
	} else {
		p.create = want
	}
	if _, has := old.Spec.Selector[o.DeploymentKey]; !has && u.labelsBoth() {
		p.fromLabel = TemplateHash(old.Spec.Template, o.DeploymentKey)
	}
	newSelector := want.Spec.Selector
	if p.to != nil {
		newSelector = p.to.Spec.Selector
	}
	oldSelector := old.Spec.Selector
	if p.fromLabel != "" {
		oldSelector, _ = labelled(oldSelector, old.Spec.Template, o.DeploymentKey, p.fromLabel)
	}
	if !disjoint(oldSelector, newSelector) {
		return nil, fmt.Errorf("%sthe selector of replicationcontroller/%s (%s) overlaps that of %s (%s): give it a key whose value differs from %s's",
			filePrefix(o.File), want.Name, selectorString(newSelector), old.Name, selectorString(oldSelector), old.Name)
	}
	return p, nil
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

func (u *updater) resolveRollback(ctx context.Context, target *corev1.ReplicationController) (*plan, error) {
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
			return &plan{finish: target, rollback: true}, nil
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
	return &plan{from: partner, to: target, desired: desired, rollback: true, resumed: true}, nil
}

// execute carries p out.
func (u *updater) execute(ctx context.Context, p *plan) error {
	switch {
	case p.finish != nil:
		return u.finish(ctx, p)
	case p.standIn != nil || (p.rename && p.from == nil):
		return u.rename(ctx, p)
	}
	if p.rollback {
		if err := u.startRollback(ctx, p); err != nil {
			return err
		}
	} else if err := u.start(ctx, p); err != nil {
		return err
	}
	if err := u.scale(ctx, p); err != nil {
		return err
	}
	return u.cleanup(ctx, p)
}

// start readies from and creates to: the deployment label on from's template, pods and
// selector; the partner and original-size annotations on from; to, at size 0.
func (u *updater) start(ctx context.Context, p *plan) error {
	if p.fromLabel != "" {
		if err := u.labelFrom(ctx, p); err != nil {
			return err
		}
	}
	toName := p.toName()
	from, err := u.updateRC(ctx, p.from.Name, p.from.UID, func(rc *corev1.ReplicationController) bool {
		changed := setAnnotation(rc, NextControllerAnnotation, toName)
		if _, ok := rc.Annotations[OriginalReplicasAnnotation]; !ok {
			changed = setAnnotation(rc, OriginalReplicasAnnotation, strconv.Itoa(int(replicasOf(rc)))) || changed
		}
		return changed
	})
	if err != nil {
		return err
	}
	p.from = from
	if p.to != nil {
		fmt.Fprintf(u.out, "Continuing update with existing controller %s.\n", p.to.Name)
		return nil
	}
	failpoint.Hit("rolling-update/before-create-new")
	create := p.create.DeepCopy()
	if create.Annotations == nil {
		create.Annotations = map[string]string{}
	}
	create.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(p.desired))
	create.Annotations[SourceIDAnnotation] = sourceID(from.Name, from.UID)
	zero := int32(0)
	create.Spec.Replicas = &zero
	to, err := u.rcs.Create(ctx, create, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create replicationcontroller/%s: %w", create.Name, err)
	}
	p.to = to
	fmt.Fprintf(u.out, "Created %s\n", to.Name)
	failpoint.Hit("rolling-update/after-create-new")
	return nil
}

// labelFrom adds the deployment label to from's template, then to its pods (in place),
// then to its selector — in that order, so from never stops selecting a pod it runs. A
// pod from's controller created from the unlabelled template meanwhile is labelled too.
func (u *updater) labelFrom(ctx context.Context, p *plan) error {
	key, value := u.o.DeploymentKey, p.fromLabel
	original := p.from.Spec.Selector
	from, err := u.updateRC(ctx, p.from.Name, p.from.UID, func(rc *corev1.ReplicationController) bool {
		if rc.Spec.Template.Labels[key] == value {
			return false
		}
		_, rc.Spec.Template = labelled(nil, rc.Spec.Template, key, value)
		return true
	})
	if err != nil {
		return err
	}
	if err := u.labelPods(ctx, from, original, key, value); err != nil {
		return err
	}
	if from, err = u.updateRC(ctx, from.Name, from.UID, func(rc *corev1.ReplicationController) bool {
		if rc.Spec.Selector[key] == value {
			return false
		}
		rc.Spec.Selector, _ = labelled(rc.Spec.Selector, rc.Spec.Template, key, value)
		return true
	}); err != nil {
		return err
	}
	if err := u.labelPods(ctx, from, original, key, value); err != nil {
		return err
	}
	p.from = from
	return nil
}

// labelPods sets key=value on the pods selector matches that rc controls or nobody does.
func (u *updater) labelPods(ctx context.Context, rc *corev1.ReplicationController, selector map[string]string, key, value string) error {
	pods, err := u.client.CoreV1().Pods(rc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selectorString(selector)})
	if err != nil {
		return fmt.Errorf("list the pods of replicationcontroller/%s: %w", rc.Name, err)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ref := metav1.GetControllerOf(pod); (ref != nil && ref.UID != rc.UID) || pod.Labels[key] == value {
			continue
		}
		_, err := u.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("label pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// startRollback turns the update around: to (the controller the update started from)
// becomes the one scaled up, back to its original size.
func (u *updater) startRollback(ctx context.Context, p *plan) error {
	fmt.Fprintf(u.out, "Setting %q replicas to %d\n", p.to.Name, p.desired)
	to, err := u.updateRC(ctx, p.to.Name, p.to.UID, func(rc *corev1.ReplicationController) bool {
		changed := setAnnotation(rc, DesiredReplicasAnnotation, strconv.Itoa(int(p.desired)))
		changed = setAnnotation(rc, SourceIDAnnotation, sourceID(p.from.Name, p.from.UID)) || changed
		return setAnnotation(rc, NextControllerAnnotation, p.from.Name) || changed
	})
	if err != nil {
		return err
	}
	p.to = to
	fmt.Fprintf(u.out, "Continuing update with existing controller %s.\n", to.Name)
	return nil
}

// scale moves pods from from to to: it scales to up as far as the surge allows, pauses
// UpdatePeriod, scales from down as far as availability allows, and repeats until to is
// at desired and from at 0. Each resize is waited for (the controller has observed it
// and the pods exist or are gone), so the bounds hold for pods, not only for sizes.
// When no step is possible it waits for a pod to become available; after Timeout
// without any step it gives up, leaving the update resumable.
func (u *updater) scale(ctx context.Context, p *plan) error {
	fp, err := rollout.ResolveFenceposts(&u.o.MaxSurge, &u.o.MaxUnavailable, p.desired)
	if err != nil {
		return err
	}
	step := Step{Desired: p.desired, MaxSurge: fp.MaxSurge, MaxUnavailable: fp.MaxUnavailable, Old: replicasOf(p.from), New: replicasOf(p.to)}
	fmt.Fprintf(u.out, "Scaling up %s from %d to %d, scaling down %s from %d to 0 (keep %d pods available, don't exceed %d pods)\n",
		p.to.Name, step.New, step.Desired, p.from.Name, step.Old, step.MinAvailable(), step.MaxTotal())
	for _, name := range []string{p.from.Name, p.to.Name} {
		if err := u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+name+" to settle", func() (bool, string) { return u.view.settled(name) }); err != nil {
			return err
		}
	}
	movedOnce := false
	lastProgress := time.Now()
	for {
		from, to, err := u.current(ctx, p)
		if err != nil {
			return err
		}
		step.Old, step.New = replicasOf(from), replicasOf(to)
		if step.New == step.Desired && step.Old == 0 {
			return nil
		}
		progressed := false
		if next := ScaleUpTo(step); next != step.New {
			fmt.Fprintf(u.out, "Scaling %s up to %d\n", to.Name, next)
			if err := u.resize(ctx, to, next); err != nil {
				return err
			}
			step.New, progressed = next, true
			if err := sleep(ctx, u.o.UpdatePeriod); err != nil {
				return err
			}
		}
		step.NewAvailable = u.view.countPods(to.Spec.Selector, to.Spec.MinReadySeconds).available
		if next := ScaleDownTo(step); next != step.Old {
			fmt.Fprintf(u.out, "Scaling %s down to %d\n", from.Name, next)
			if err := u.resize(ctx, from, next); err != nil {
				return err
			}
			step.Old, progressed = next, true
			if !movedOnce && next > 0 {
				movedOnce = true
				failpoint.Hit("rolling-update/mid-scale")
			}
		}
		if progressed {
			lastProgress = time.Now()
			continue
		}
		// Nothing could move: wait until a pod of to becomes available.
		remaining := u.o.Timeout - time.Since(lastProgress)
		waitFor := func() (bool, string) {
			s := step
			c := u.view.countPods(to.Spec.Selector, to.Spec.MinReadySeconds)
			s.NewAvailable = c.available
			return ScaleDownTo(s) != s.Old || ScaleUpTo(s) != s.New,
				fmt.Sprintf("%s has %d of %d pods available, and %d pods must stay available", to.Name, c.available, s.New, s.MinAvailable())
		}
		if err := u.view.until(ctx, max(remaining, 0), "pods of "+to.Name+" to become available", waitFor); err != nil {
			var te *timeoutError
			if errors.As(err, &te) {
				return fmt.Errorf("rolling update of replicationcontroller/%s made no progress for %s: %s; fix the cause and run the same command again to resume, or roll back with --rollback",
					u.o.OldName, u.o.Timeout, te.state)
			}
			return err
		}
	}
}

// current re-reads both controllers of p.
func (u *updater) current(ctx context.Context, p *plan) (from, to *corev1.ReplicationController, err error) {
	if from, err = u.get(ctx, p.from.Name); err == nil && from == nil {
		err = fmt.Errorf("replicationcontroller/%s was deleted during the update; run the same command again to finish it", p.from.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	if to, err = u.get(ctx, p.to.Name); err == nil && to == nil {
		err = fmt.Errorf("replicationcontroller/%s was deleted during the update; run the same command again to start over", p.to.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	p.from, p.to = from, to
	return from, to, nil
}

// resize sets rc's size and waits until its controller has acted on it.
func (u *updater) resize(ctx context.Context, rc *corev1.ReplicationController, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := u.rcs.Patch(ctx, rc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scale replicationcontroller/%s to %d: %w", rc.Name, replicas, err)
	}
	return u.view.until(ctx, u.o.Timeout, fmt.Sprintf("replicationcontroller/%s to reach %d pods", rc.Name, replicas), func() (bool, string) {
		ok, state := u.view.settled(rc.Name)
		if cached, err := u.view.rcs.Get(rc.Name); err != nil || replicasOf(cached) != replicas {
			return false, state
		}
		return ok, state
	})
}

// cleanup ends an update whose pods have all moved: the controller scaled down is
// deleted first, and only then are the survivor's recovery annotations removed, so a
// crash in between still finds the update and finishes it.
func (u *updater) cleanup(ctx context.Context, p *plan) error {
	if p.rename && !p.rollback {
		fmt.Fprintf(u.out, "Update succeeded. Deleting old controller: %s\n", p.from.Name)
		return u.rename(ctx, p)
	}
	fmt.Fprintf(u.out, "Update succeeded. Deleting %s\n", p.from.Name)
	if err := u.delete(ctx, p.from, metav1.DeletePropagationBackground); err != nil {
		return err
	}
	p.finish = p.to
	return u.finish(ctx, p)
}

// finish strips the recovery annotations from the update's survivor and reports it.
func (u *updater) finish(ctx context.Context, p *plan) error {
	rc, err := u.updateRC(ctx, p.finish.Name, p.finish.UID, func(rc *corev1.ReplicationController) bool {
		if !hasRecoveryAnnotations(rc) {
			return false
		}
		rc.Annotations = withoutRecovery(rc.Annotations)
		return true
	})
	if err != nil {
		return err
	}
	switch {
	case p.rollback:
		fmt.Fprintf(u.out, "replicationcontroller/%s rolled back\n", rc.Name)
	default:
		fmt.Fprintf(u.out, "replicationcontroller/%s rolling updated to %q\n", rc.Name, rc.Name)
	}
	return nil
}

// rename gives the new controller (p.to) the old name, in steps that each leave a state
// the next run recognises (see the package doc): delete old (at 0 pods); create a
// stand-in under the old name — the new controller's spec at size 0, with a selector no
// pod matches; delete the new controller, orphaning its pods; finally give the
// stand-in the real selector and size, whereupon it adopts the orphans.
func (u *updater) rename(ctx context.Context, p *plan) error {
	oldName := u.o.OldName
	if p.standIn == nil {
		if p.from != nil {
			if err := u.delete(ctx, p.from, metav1.DeletePropagationBackground); err != nil {
				return err
			}
			p.from = nil
			failpoint.Hit("rolling-update/after-delete-old")
		}
		fmt.Fprintf(u.out, "Renaming %s to %s\n", p.to.Name, oldName)
		standIn, err := u.rcs.Create(ctx, standInFor(p.to, oldName), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create replicationcontroller/%s: %w", oldName, err)
		}
		p.standIn = standIn
		failpoint.Hit("rolling-update/after-create-standin")
	} else {
		fmt.Fprintf(u.out, "Renaming %s to %s\n", p.standIn.Annotations[RenameFromAnnotation], oldName)
	}
	if p.to != nil {
		if err := u.delete(ctx, p.to, metav1.DeletePropagationOrphan); err != nil {
			return err
		}
		failpoint.Hit("rolling-update/after-orphan-new")
	}
	desired, err := strconv.Atoi(p.standIn.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return fmt.Errorf("replicationcontroller/%s: annotation %s=%q is not a number", oldName, DesiredReplicasAnnotation, p.standIn.Annotations[DesiredReplicasAnnotation])
	}
	renamed, err := u.updateRC(ctx, oldName, p.standIn.UID, func(rc *corev1.ReplicationController) bool {
		n := int32(desired)
		rc.Spec.Replicas = &n
		delete(rc.Spec.Selector, RenamingLabel)
		delete(rc.Spec.Template.Labels, RenamingLabel)
		rc.Annotations = withoutRecovery(rc.Annotations)
		return true
	})
	if err != nil {
		return err
	}
	if err := u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+oldName+" to adopt its pods", func() (bool, string) { return u.view.settled(oldName) }); err != nil {
		return err
	}
	fmt.Fprintf(u.out, "replicationcontroller/%s rolling updated\n", renamed.Name)
	return nil
}

// standInFor is the controller holding name while to is renamed to it: to's spec at
// size 0, selecting no pod (RenamingLabel), with the size to restore and to's name.
func standInFor(to *corev1.ReplicationController, name string) *corev1.ReplicationController {
	desired := replicasOf(to)
	if n, err := strconv.Atoi(to.Annotations[DesiredReplicasAnnotation]); err == nil {
		desired = int32(n)
	}
	zero := int32(0)
	rc := &corev1.ReplicationController{ObjectMeta: objectMetaFrom(to, name), Spec: *to.Spec.DeepCopy()}
	rc.Spec.Replicas = &zero
	rc.Spec.Selector, rc.Spec.Template = labelled(to.Spec.Selector, to.Spec.Template, RenamingLabel, "true")
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	rc.Annotations[RenameFromAnnotation] = to.Name
	rc.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(desired))
	return rc
}

// delete deletes rc (if it is still the same object) and waits until it is gone.
func (u *updater) delete(ctx context.Context, rc *corev1.ReplicationController, propagation metav1.DeletionPropagation) error {
	err := u.rcs.Delete(ctx, rc.Name, metav1.DeleteOptions{PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &rc.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete replicationcontroller/%s: %w", rc.Name, err)
	}
	return u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+rc.Name+" to be deleted", func() (bool, string) {
		cur, err := u.view.rcs.Get(rc.Name)
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != rc.UID) {
			return true, ""
		}
		return false, "still there"
	})
}

// updateRC applies mutate to the latest rc (which must still have uid), retrying on
// conflicts; mutate returns false when there is nothing to change.
func (u *updater) updateRC(ctx context.Context, name string, uid types.UID, mutate func(*corev1.ReplicationController) bool) (*corev1.ReplicationController, error) {
	var out *corev1.ReplicationController
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rc, err := u.rcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid != "" && rc.UID != uid {
			return fmt.Errorf("replicationcontroller/%s was replaced during the update; run the same command again", name)
		}
		if !mutate(rc) {
			out = rc
			return nil
		}
		out, err = u.rcs.Update(ctx, rc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update replicationcontroller/%s: %w", name, err)
	}
	return out, nil
}

func setAnnotation(rc *corev1.ReplicationController, key, value string) bool {
	if v, ok := rc.Annotations[key]; ok && v == value {
		return false
	}
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	rc.Annotations[key] = value
	return true
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
