package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Configuration rollout (kroll.dev/config-rollout: "true"): the design is in
// pkg/configrollout's package doc. This file reads the referenced ConfigMaps and
// Secrets from the caches, decides the new ReplicaSet's template (configuration), records
// the revision's snapshots on the ReplicaSet it creates (configPass.annotate) and writes
// them (writeSnapshots). kroll's ReplicaSet controller puts the snapshot names in the
// pods it creates.

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
	// found is the configuration found, and the objects its snapshots copy.
	found controller.ConfigFound
	// waiting: a snapshot of the new ReplicaSet could not be written (quota, RBAC):
	// nothing else moves until it is (writeSnapshots).
	waiting bool
}

// templateOf is the template d's new ReplicaSet has.
func (cfg configPass) templateOf(d *appsv1.Deployment) *corev1.PodTemplateSpec {
	if cfg.template != nil {
		return cfg.template
	}
	return &d.Spec.Template
}

// WatchConfig turns configuration rollout on in the controller: it reads ConfigMaps
// and Secrets from these informers and wakes the Deployments that reference one when
// it is created, its data changes, or it is deleted. Call before the informers start.
func (c *Controller) WatchConfig(dInformer cache.SharedIndexInformer, cmInformer coreinformers.ConfigMapInformer, secretInformer coreinformers.SecretInformer) error {
	config, err := controller.WatchConfig(c.client, dInformer, cmInformer, secretInformer, c.enqueue, &c.synced)
	c.config = config
	return err
}

// configuration decides d's configuration for this pass (see configPass). acted says
// it wrote d's pin record (configrollout.Effective), alone: the pass ends there.
func (c *Controller) configuration(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (configPass, bool, error) {
	on, problem := configrollout.Enabled(d.Annotations)
	if problem != "" || !on || c.config == nil {
		c.announceConfig(d, problem, configrollout.ReasonInvalidAnnotation)
		return configPass{problem: problem, reason: configrollout.ReasonInvalidAnnotation}, false, nil
	}
	cfg := configPass{on: true, found: c.config.Resolve(d.Namespace, &d.Spec.Template.Spec)}
	revisions := make([]configrollout.Revision, len(rsList))
	for i, rs := range rsList {
		revisions[i] = configrollout.Revision{Number: history.Revision(rs), Template: &rs.Spec.Template}
	}
	dec := configrollout.Decide(&d.Spec.Template, cfg.found.Resolved, d.Annotations[configrollout.PinnedAtAnnotation], revisions, history.EqualIgnoringHash)
	if len(cfg.found.Missing) > 0 {
		// Nothing rolls: the new ReplicaSet stays the newest of d's template.
		cfg.problem, cfg.reason = configrollout.MissingMessage(cfg.found.Missing), configrollout.ReasonMissing
		cfg.template, cfg.hold = dec.Template, dec.Hold
		c.announceConfig(d, cfg.problem, cfg.reason)
		if dec.Hold {
			cfg.template = nil
		}
		return cfg, false, nil
	}
	c.announceConfig(d, "", "")
	cfg.template = dec.Template
	if dec.Write {
		next := d.DeepCopy()
		controller.SetPinRecord(next, dec.Record)
		_, err := c.writes.updateDeployment(ctx, next)
		return cfg, true, err
	}
	return cfg, false, nil
}

// annotate records on rs, the new ReplicaSet whose pod-template-hash is hash, the
// snapshots of its revision and, when only the configuration changed since the newest
// of oldRSs, the change-cause naming what did ("configmap/app-config changed").
func (cfg configPass) annotate(rs *appsv1.ReplicaSet, hash string, oldRSs []*appsv1.ReplicaSet) {
	if !cfg.on || cfg.found.Fingerprint == "" {
		return
	}
	snaps := configrollout.Plan(cfg.found.Resolved, hash)
	rs.Annotations[configrollout.SnapshotsAnnotation] = snaps.String()
	var prev *appsv1.ReplicaSet
	for _, old := range oldRSs {
		if prev == nil || history.Revision(old) > history.Revision(prev) {
			prev = old
		}
	}
	if prev == nil {
		return
	}
	if cause := configrollout.Cause(&prev.Spec.Template, &rs.Spec.Template, configrollout.SnapshotsOf(prev.Annotations), snaps, history.EqualIgnoringHash); cause != "" {
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
	owner := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	problem, err := c.config.WriteSnapshots(ctx, rs.Namespace, configrollout.SnapshotsOf(rs.Annotations), cfg.found, owner)
	if err != nil {
		cfg.problem, cfg.reason, cfg.waiting = problem, configrollout.ReasonSnapshotFailed, true
		c.announceConfig(d, cfg.problem, cfg.reason)
		c.queue.EnqueueAfter(d, configRetry)
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
