package deployment

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Configuration rollout (kroll.dev/config-rollout: "true"): the design is in
// pkg/configrollout's package doc. This file reads the referenced ConfigMaps and
// Secrets from the caches, decides the new ReplicaSet's template (configuration), records
// the revision's snapshots on the ReplicaSet it creates (configPass.annotate) and writes
// them (writeSnapshots). kroll's ReplicaSet controller puts the snapshot names in the
// pods it creates.

// configIndex indexes opted-in Deployments by "configmap/<name>" and "secret/<name>"
// of what their template references, so that a ConfigMap's change wakes them alone.
const configIndex = "kroll.dev/config-refs"

// configPass is what configuration rollout found for one pass.
type configPass struct {
	// on: d is opted in (validly).
	on bool
	// problem and reason are the ConfigRollout condition's (False) while set: an invalid
	// opt-in, a missing object, a snapshot that could not be written.
	problem, reason string
	// template is the new ReplicaSet's template; nil for d's own.
	template *corev1.PodTemplateSpec
	// hold: a referenced object is missing and d has no ReplicaSet of its template yet:
	// none is created.
	hold bool
	// waiting: a snapshot of the new ReplicaSet could not be written (quota, RBAC):
	// nothing else moves until it is (writeSnapshots).
	waiting bool
	// resolved is the configuration found; configMaps and secrets the objects hashed, by
	// name, for the snapshots.
	resolved   configrollout.Resolved
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// templateOf is the template d's new ReplicaSet has.
func (cfg configPass) templateOf(d *appsv1.Deployment) *corev1.PodTemplateSpec {
	if cfg.template != nil {
		return cfg.template
	}
	return &d.Spec.Template
}

// snapshotWriter writes configuration snapshots.
type snapshotWriter interface {
	createConfigMap(ctx context.Context, cm *corev1.ConfigMap) error
	createSecret(ctx context.Context, s *corev1.Secret) error
}

type apiSnapshotWriter struct{ client kubernetes.Interface }

var _ snapshotWriter = apiSnapshotWriter{}

func (w apiSnapshotWriter) createConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	_, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (w apiSnapshotWriter) createSecret(ctx context.Context, s *corev1.Secret) error {
	_, err := w.client.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	return err
}

// configSource is the caches configuration rollout reads; nil until WatchConfig.
type configSource struct {
	configMaps  corelisters.ConfigMapLister
	secrets     corelisters.SecretLister
	deployments cache.Indexer
	snapshots   snapshotWriter
}

// WatchConfig turns configuration rollout on in the controller: it reads ConfigMaps
// and Secrets from these informers and wakes the Deployments that reference one when
// it is created, its data changes, or it is deleted. Call before the informers start.
func (c *Controller) WatchConfig(dInformer cache.SharedIndexInformer, cmInformer coreinformers.ConfigMapInformer, secretInformer coreinformers.SecretInformer) error {
	if err := dInformer.AddIndexers(cache.Indexers{configIndex: configRefs}); err != nil {
		return err
	}
	c.config = &configSource{configMaps: cmInformer.Lister(), secrets: secretInformer.Lister(), deployments: dInformer.GetIndexer(),
		snapshots: apiSnapshotWriter{client: c.client}}
	c.synced = append(c.synced, cmInformer.Informer().HasSynced, secretInformer.Informer().HasSynced)
	for _, inf := range []cache.SharedIndexInformer{cmInformer.Informer(), secretInformer.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.configChanged,
			UpdateFunc: func(old, cur any) { c.configUpdated(old, cur) },
			DeleteFunc: c.configChanged,
		}); err != nil {
			return err
		}
	}
	return nil
}

// configRefs indexes an opted-in Deployment by what its template references.
func configRefs(obj any) ([]string, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil
	}
	if on, _ := configrollout.Enabled(d.Annotations); !on {
		return nil, nil
	}
	var keys []string
	for _, r := range configrollout.Refs(&d.Spec.Template.Spec) {
		keys = append(keys, d.Namespace+"/"+r.Key())
	}
	return keys, nil
}

// configKey is the configIndex key of a ConfigMap or Secret, "" for a snapshot (its
// creation wakes no one: nothing references it by name) or another object.
func configKey(obj any) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if _, snap := o.Labels[configrollout.SnapshotOfLabel]; !snap {
			return o.Namespace + "/" + string(configrollout.ConfigMap) + "/" + o.Name
		}
	case *corev1.Secret:
		if _, snap := o.Labels[configrollout.SnapshotOfLabel]; !snap {
			return o.Namespace + "/" + string(configrollout.Secret) + "/" + o.Name
		}
	case cache.DeletedFinalStateUnknown:
		return configKey(o.Obj)
	}
	return ""
}

func (c *Controller) configChanged(obj any) {
	key := configKey(obj)
	if key == "" {
		return
	}
	ds, _ := c.config.deployments.ByIndex(configIndex, key)
	for _, d := range ds {
		c.enqueue(d)
	}
}

// configUpdated wakes the Deployments of an object whose data changed; a change of
// its metadata alone rolls nothing.
func (c *Controller) configUpdated(old, cur any) {
	switch o := cur.(type) {
	case *corev1.ConfigMap:
		if configrollout.ConfigMapHash(old.(*corev1.ConfigMap)) == configrollout.ConfigMapHash(o) {
			return
		}
	case *corev1.Secret:
		if configrollout.SecretHash(old.(*corev1.Secret)) == configrollout.SecretHash(o) {
			return
		}
	}
	c.configChanged(cur)
}

// configuration decides d's configuration for this pass (see configPass). acted says
// it wrote d's pin record (configrollout.Effective), alone: the pass ends there.
func (c *Controller) configuration(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (configPass, bool, error) {
	on, problem := configrollout.Enabled(d.Annotations)
	if problem != "" || !on || c.config == nil {
		c.announceConfig(d, problem, configrollout.ReasonInvalidAnnotation)
		return configPass{problem: problem, reason: configrollout.ReasonInvalidAnnotation}, false, nil
	}
	cfg := configPass{on: true, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	cfg.resolved = configrollout.Resolve(configrollout.Refs(&d.Spec.Template.Spec), func(r configrollout.Ref) (string, bool) {
		if r.Kind == configrollout.ConfigMap {
			cm, err := c.config.configMaps.ConfigMaps(d.Namespace).Get(r.Name)
			if err != nil {
				return "", false
			}
			cfg.configMaps[r.Name] = cm
			return configrollout.ConfigMapHash(cm), true
		}
		s, err := c.config.secrets.Secrets(d.Namespace).Get(r.Name)
		if err != nil {
			return "", false
		}
		cfg.secrets[r.Name] = s
		return configrollout.SecretHash(s), true
	})
	revisions := make([]configrollout.Revision, len(rsList))
	for i, rs := range rsList {
		revisions[i] = configrollout.Revision{Number: history.Revision(rs), Template: &rs.Spec.Template}
	}
	dec := configrollout.Decide(&d.Spec.Template, cfg.resolved, d.Annotations[configrollout.PinnedAtAnnotation], revisions, history.EqualIgnoringHash)
	if len(cfg.resolved.Missing) > 0 {
		// Nothing rolls: the new ReplicaSet stays the newest of d's template.
		cfg.problem, cfg.reason = configrollout.MissingMessage(cfg.resolved.Missing), configrollout.ReasonMissing
		c.announceConfig(d, cfg.problem, cfg.reason)
		cfg.template, cfg.hold = dec.Template, dec.Hold
		if dec.Hold {
			cfg.template = nil
		}
		return cfg, false, nil
	}
	c.announceConfig(d, "", "")
	cfg.template = dec.Template
	if dec.Write {
		next := d.DeepCopy()
		if dec.Record == "" {
			delete(next.Annotations, configrollout.PinnedAtAnnotation)
		} else {
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[configrollout.PinnedAtAnnotation] = dec.Record
		}
		_, err := c.writes.updateDeployment(ctx, next)
		return cfg, true, err
	}
	return cfg, false, nil
}

// annotate records on rs, the new ReplicaSet whose pod-template-hash is hash, the
// snapshots of its revision and, when only the configuration changed since the newest
// of oldRSs, the change-cause naming what did ("configmap/app-config changed").
func (cfg configPass) annotate(rs *appsv1.ReplicaSet, hash string, oldRSs []*appsv1.ReplicaSet) {
	if !cfg.on || cfg.resolved.Fingerprint == "" {
		return
	}
	snaps := configrollout.Plan(cfg.resolved, hash)
	rs.Annotations[configrollout.SnapshotsAnnotation] = snaps.String()
	var prev *appsv1.ReplicaSet
	for _, old := range oldRSs {
		if prev == nil || history.Revision(old) > history.Revision(prev) {
			prev = old
		}
	}
	if prev == nil || !history.EqualIgnoringHash(configrollout.WithoutHash(&prev.Spec.Template), configrollout.WithoutHash(&rs.Spec.Template)) {
		return
	}
	if cause := configrollout.ChangeCause(configrollout.SnapshotsOf(prev.Annotations), snaps); cause != "" {
		rs.Annotations[history.ChangeCauseAnnotation] = cause
	}
}

// writeSnapshots creates the snapshots rs's record names that do not exist yet, from
// the objects cfg found, owned by rs; a source whose data is no longer the revision's
// is left (its pods wait, as for a missing object). A write refused (quota, RBAC) sets
// cfg.waiting and the problem: the pass then moves nothing, writes the ConfigRollout
// condition (and a Warning event) and is retried after configRetry. kroll's ReplicaSet
// controller creates no pod of rs while a snapshot it names is missing, so the new
// ReplicaSet's size meanwhile makes no pod that could not start.
func (c *Controller) writeSnapshots(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, cfg *configPass) error {
	if !cfg.on || rs == nil || c.config == nil {
		return nil
	}
	snaps := configrollout.SnapshotsOf(rs.Annotations)
	owner := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	owner.BlockOwnerDeletion = nil
	for _, key := range slices.Sorted(maps.Keys(snaps)) {
		s := snaps[key]
		kind, name, _ := strings.Cut(key, "/")
		var err error
		switch configrollout.Kind(kind) {
		case configrollout.ConfigMap:
			if _, gerr := c.config.configMaps.ConfigMaps(rs.Namespace).Get(s.Name); gerr == nil {
				continue
			}
			src := cfg.configMaps[name]
			if src == nil || configrollout.ConfigMapHash(src) != s.Hash {
				continue
			}
			err = c.config.snapshots.createConfigMap(ctx, configrollout.ConfigMapSnapshot(src, s.Name, owner))
		case configrollout.Secret:
			if _, gerr := c.config.secrets.Secrets(rs.Namespace).Get(s.Name); gerr == nil {
				continue
			}
			src := cfg.secrets[name]
			if src == nil || configrollout.SecretHash(src) != s.Hash {
				continue
			}
			err = c.config.snapshots.createSecret(ctx, configrollout.SecretSnapshot(src, s.Name, owner))
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			cfg.problem = "cannot write the snapshot " + s.Name + " of " + key + " for replica set " + rs.Name + ": " + err.Error() + "; the rollout waits"
			cfg.reason, cfg.waiting = configrollout.ReasonSnapshotFailed, true
			c.announceConfig(d, cfg.problem, cfg.reason)
			c.queue.EnqueueAfter(d, configRetry)
			return nil
		}
	}
	return nil
}

// configRetry is how long a Deployment whose snapshot could not be written waits
// before it tries again: nothing it watches tells when a quota is raised or a role
// granted.
const configRetry = 5 * time.Second

// configProblemKey is where c.announced keeps the configuration problem announced for d.
func configProblemKey(d *appsv1.Deployment) string { return string(d.UID) + "/config" }

// announceConfig records a Warning event (reason) for a configuration problem once per
// distinct message, until the ConfigRollout condition shows it; "" forgets it.
func (c *Controller) announceConfig(d *appsv1.Deployment, problem, reason string) {
	c.announce(d, configProblemKey(d), configrollout.ConditionType, problem, reason)
}

// setConfigCondition brings the ConfigRollout condition of status up to date: False
// with the problem's reason and message while configuration rollout has one, gone
// otherwise (a Deployment rolling its configuration well says so nowhere else).
func setConfigCondition(status *appsv1.DeploymentStatus, p *pass, now time.Time) {
	t := appsv1.DeploymentConditionType(configrollout.ConditionType)
	if p.config.problem == "" {
		removeCondition(status, t)
		return
	}
	cur := rollout.Condition(status, t)
	if cur != nil && cur.Status == corev1.ConditionFalse && cur.Reason == p.config.reason && cur.Message == p.config.problem {
		return
	}
	removeCondition(status, t)
	setCondition(status, newCondition(t, corev1.ConditionFalse, p.config.reason, p.config.problem, now))
}
