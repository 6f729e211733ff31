package controller

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// SetConfig is configuration rollout's part in one sync of a StatefulSet or DaemonSet
// (design in pkg/configrollout: the fingerprint enters the update revision through
// its template, snapshots are owned by that ControllerRevision, pods of a revision
// name its snapshots).
type SetConfig struct {
	// On: the set is opted in (validly) and the controller watches configuration.
	On bool
	// Problem and Reason are the ConfigRollout condition's (False) while set: an
	// invalid opt-in, a missing object, a snapshot that could not be written.
	Problem, Reason string
	// Template is the template the set's update revision records: the set's own with
	// kroll.dev/config-hash = the live fingerprint, the set's own when an undo pinned
	// it, or — an object missing — the newest revision's, so that nothing new rolls.
	// nil: the set's own (configuration rollout off, or nothing resolved yet).
	Template *corev1.PodTemplateSpec
	// Record is the set's kroll.dev/config-pinned-at to write ("" removes it) when
	// WriteRecord; that write is made alone, the sync ending there.
	Record      string
	WriteRecord bool
	// Found is the configuration resolved now, and the objects snapshots copy.
	Found ConfigFound
	// prev is the newest of the set's revisions and prevTemplate its template: a new
	// revision's change-cause is against them. nil for a set without revisions.
	prev         *appsv1.ControllerRevision
	prevTemplate *corev1.PodTemplateSpec
}

// Apply is a copy of set (a StatefulSet or DaemonSet) whose template is the update
// revision's (Template); set itself when that is its own. Only revisions and pods are
// made from the copy: it is never written.
func Apply[S interface {
	*appsv1.StatefulSet | *appsv1.DaemonSet
}](set S, cfg SetConfig) S {
	if cfg.Template == nil {
		return set
	}
	switch s := any(set).(type) {
	case *appsv1.StatefulSet:
		out := s.DeepCopy()
		out.Spec.Template = *cfg.Template.DeepCopy()
		return any(out).(S)
	case *appsv1.DaemonSet:
		out := s.DeepCopy()
		out.Spec.Template = *cfg.Template.DeepCopy()
		return any(out).(S)
	}
	return set
}

// equalTemplates compares two templates of a set's revisions as the API server would
// store them (a nil and an empty map alike).
func equalTemplates(a, b *corev1.PodTemplateSpec) bool { return equality.Semantic.DeepEqual(a, b) }

// PlanSet decides configuration rollout for a set (meta: its object metadata; template:
// its pod template) with revisions revs (oldest first), whose templates templates
// decodes. s nil: the controller does not watch configuration, nothing to decide.
func (s *ConfigSource) PlanSet(meta metav1.Object, template *corev1.PodTemplateSpec, revs []*appsv1.ControllerRevision, templates *history.Templates) SetConfig {
	on, problem := configrollout.Enabled(meta.GetAnnotations())
	if problem != "" {
		return SetConfig{Problem: problem, Reason: configrollout.ReasonInvalidAnnotation}
	}
	if !on || s == nil {
		return SetConfig{}
	}
	cfg := SetConfig{On: true, Found: s.Resolve(meta.GetNamespace(), &template.Spec)}
	var known []configrollout.Revision
	for _, r := range revs {
		if t := templates.Template(r); t != nil {
			known = append(known, configrollout.Revision{Number: r.Revision, Template: t})
			if cfg.prev == nil || r.Revision >= cfg.prev.Revision {
				cfg.prev, cfg.prevTemplate = r, t
			}
		}
	}
	record := meta.GetAnnotations()[configrollout.PinnedAtAnnotation]
	dec := configrollout.Decide(template, cfg.Found.Resolved, record, known, equalTemplates)
	if len(cfg.Found.Missing) > 0 {
		cfg.Problem, cfg.Reason = configrollout.MissingMessage(cfg.Found.Missing), configrollout.ReasonMissing
		cfg.Template = dec.Template
		if dec.Hold && cfg.prevTemplate != nil {
			// No revision of this template resolved before (the user changed the
			// template and referenced an object that does not exist yet): the set stays
			// on its newest revision until the object exists.
			cfg.Template = cfg.prevTemplate
		}
		return cfg
	}
	cfg.Template, cfg.Record, cfg.WriteRecord = dec.Template, dec.Record, dec.Write
	return cfg
}

// Revisions is client with the revisions it creates annotated as cfg's update revision
// is: its snapshots (kroll.dev/config-snapshots, named by the revision's hash, the
// part of its name after the last '-') and, when only the configuration changed since
// the newest revision, the change-cause naming what did ("configmap/app-config
// changed"). Off, or with nothing resolved, it is client.
func (cfg SetConfig) Revisions(client history.RevisionClient) history.RevisionClient {
	if !cfg.On || cfg.Found.Fingerprint == "" {
		return client
	}
	return configRevisions{RevisionClient: client, cfg: cfg}
}

type configRevisions struct {
	history.RevisionClient
	cfg SetConfig
}

var _ history.RevisionClient = configRevisions{}

func (c configRevisions) Create(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.CreateOptions) (*appsv1.ControllerRevision, error) {
	rev = rev.DeepCopy()
	c.cfg.annotate(rev)
	return c.RevisionClient.Create(ctx, rev, opts)
}

// annotate records on rev, a new revision of cfg.Template, its snapshots and the
// change-cause of a configuration change.
func (cfg SetConfig) annotate(rev *appsv1.ControllerRevision) {
	hash := rev.Name[strings.LastIndex(rev.Name, "-")+1:]
	snaps := configrollout.Plan(cfg.Found.Resolved, hash)
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	rev.Annotations[configrollout.SnapshotsAnnotation] = snaps.String()
	if cfg.prev == nil || cfg.Template == nil {
		return
	}
	if cause := configrollout.Cause(cfg.prevTemplate, cfg.Template, configrollout.SnapshotsOf(cfg.prev.Annotations), snaps, equalTemplates); cause != "" {
		rev.Annotations[history.ChangeCauseAnnotation] = cause
	}
}

// WriteSetSnapshots creates the snapshots of rev (the set's update revision) that do not
// exist yet, owned by rev; problem is the condition's line when a write is refused.
func (s *ConfigSource) WriteSetSnapshots(ctx context.Context, cfg SetConfig, rev *appsv1.ControllerRevision) (problem string, err error) {
	if s == nil || !cfg.On || rev == nil {
		return "", nil
	}
	snaps := configrollout.SnapshotsOf(rev.Annotations)
	if len(snaps) == 0 {
		return "", nil
	}
	owner := *metav1.NewControllerRef(rev, appsv1.SchemeGroupVersion.WithKind("ControllerRevision"))
	return s.WriteSnapshots(ctx, rev.Namespace, snaps, cfg.Found, owner)
}

// WithConfig is pod with the snapshot names of rev, the revision it is made of, in
// place of the objects its template names (configrollout.Substitute); pod unchanged
// for a revision without snapshots.
func WithConfig(pod *corev1.Pod, rev *appsv1.ControllerRevision) *corev1.Pod {
	if rev != nil {
		configrollout.Substitute(&pod.Spec, configrollout.SnapshotsOf(rev.Annotations))
	}
	return pod
}

// ReportSetConfig records cfg's problem as a Warning event on obj (uid), once, unless
// its ConfigRollout condition among conds (read through k) already says it.
func ReportSetConfig[C any](r *ConfigReports, recorder record.EventRecorder, obj runtime.Object, uid types.UID, k failure.Conditions[C], conds []C, cfg SetConfig) {
	shown := ""
	for _, c := range conds {
		if v := k.View(c); v.Type == configrollout.ConditionType {
			shown = v.Message
		}
	}
	r.Report(recorder, obj, uid, cfg.Problem, cfg.Reason, shown)
}

// SetConfigKind is how configuration rollout reads and writes one kind of set.
type SetConfigKind[T interface {
	metav1.Object
	runtime.Object
}, C any] struct {
	Conditions failure.Conditions[C]
	// Template is a set's pod template; StatusConditions its status conditions, to
	// read, and to set on a copy; Copy a deep copy of a set.
	Template         func(T) *corev1.PodTemplateSpec
	StatusConditions func(T) *[]C
	Copy             func(T) T
}

// StatefulSetConfig and DaemonSetConfig are the two kinds of sets.
var (
	StatefulSetConfig = SetConfigKind[*appsv1.StatefulSet, appsv1.StatefulSetCondition]{
		Conditions:       StatefulSetFailure.Conditions,
		Template:         func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
		StatusConditions: func(s *appsv1.StatefulSet) *[]appsv1.StatefulSetCondition { return &s.Status.Conditions },
		Copy:             (*appsv1.StatefulSet).DeepCopy,
	}
	DaemonSetConfig = SetConfigKind[*appsv1.DaemonSet, appsv1.DaemonSetCondition]{
		Conditions:       DaemonSetFailure.Conditions,
		Template:         func(s *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
		StatusConditions: func(s *appsv1.DaemonSet) *[]appsv1.DaemonSetCondition { return &s.Status.Conditions },
		Copy:             (*appsv1.DaemonSet).DeepCopy,
	}
)

// SetConfigWrites are what a set controller's configuration rollout writes through and
// reports to.
type SetConfigWrites[T any] struct {
	Source   *ConfigSource
	Reports  *ConfigReports
	Recorder record.EventRecorder
	Writer   SetWriter[T]
}

// Configure decides set's configuration for this sync (PlanSet, its revisions revs
// oldest first) and reports its problem. acted: it wrote the set's pin record, alone;
// the sync ends there.
func (k SetConfigKind[T, C]) Configure(ctx context.Context, w SetConfigWrites[T], set T, revs []*appsv1.ControllerRevision, templates *history.Templates) (SetConfig, bool, error) {
	cfg := w.Source.PlanSet(set, k.Template(set), revs, templates)
	ReportSetConfig(w.Reports, w.Recorder, set, set.GetUID(), k.Conditions, *k.StatusConditions(set), cfg)
	if cfg.WriteRecord && set.GetDeletionTimestamp() == nil {
		next := k.Copy(set)
		SetPinRecord(next, cfg.Record)
		_, err := w.Writer.Update(ctx, next)
		return cfg, true, err
	}
	return cfg, false, nil
}

// WriteSnapshots writes the snapshots of the update revision rev before any pod of it
// is made. A write refused is reported (event, and the condition written here) and
// returned: the sync stops, and no pod is made that would name a snapshot that does
// not exist.
func (k SetConfigKind[T, C]) WriteSnapshots(ctx context.Context, w SetConfigWrites[T], set T, cfg *SetConfig, rev *appsv1.ControllerRevision, now time.Time) error {
	problem, err := w.Source.WriteSetSnapshots(ctx, *cfg, rev)
	if err == nil {
		return nil
	}
	cfg.Problem, cfg.Reason = problem, configrollout.ReasonSnapshotFailed
	conds := *k.StatusConditions(set)
	ReportSetConfig(w.Reports, w.Recorder, set, set.GetUID(), k.Conditions, conds, *cfg)
	next := k.Copy(set)
	*k.StatusConditions(next) = WithConfigCondition(k.Conditions, conds, cfg.Problem, cfg.Reason, now)
	if !equality.Semantic.DeepEqual(*k.StatusConditions(next), conds) {
		if _, uerr := w.Writer.UpdateStatus(ctx, next); uerr != nil && !apierrors.IsNotFound(uerr) {
			return uerr
		}
	}
	return err
}
