package statefulset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/controller"
)

// Configuration rollout (kroll.dev/config-rollout: "true"; design in pkg/configrollout):
// the update revision records the set's template with kroll.dev/config-hash, so a data
// change makes a new ControllerRevision that the set's own strategy rolls (partition,
// maxUnavailable, OnDelete, staged steps); the revision owns its snapshots and the pods
// made of it name them (placeholder).

// WatchConfig turns configuration rollout on in the controller: it reads ConfigMaps
// and Secrets from these informers and wakes the StatefulSets that reference one when
// it is created, its data changes, or it is deleted. Call before the informers start.
func (c *Controller) WatchConfig(sets cache.SharedIndexInformer, cmInformer coreinformers.ConfigMapInformer, secretInformer coreinformers.SecretInformer) error {
	config, err := controller.WatchConfig(c.client, sets, cmInformer, secretInformer, c.queue.Enqueue, &c.synced)
	c.config = config
	return err
}

// configuration decides set's configuration for this sync (controller.SetConfig) and
// reports its problem. acted: it wrote the set's pin record, alone; the sync ends there.
func (c *Controller) configuration(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (controller.SetConfig, bool, error) {
	cfg := c.config.PlanSet(set, &set.Spec.Template, revs, &c.templates)
	controller.ReportSetConfig(&c.configReports, c.recorder, set, set.UID, failureConditions, set.Status.Conditions, cfg)
	if cfg.WriteRecord && set.DeletionTimestamp == nil {
		next := set.DeepCopy()
		controller.SetPinRecord(next, cfg.Record)
		_, err := c.setWriter.Update(ctx, next)
		return cfg, true, err
	}
	return cfg, false, nil
}

// writeSnapshots writes the snapshots of the update revision before any pod of it is
// made. A write refused is reported (event and condition, written here) and returned:
// the sync stops, no pod is made that would name a snapshot that does not exist.
func (c *Controller) writeSnapshots(ctx context.Context, set *appsv1.StatefulSet, cfg *controller.SetConfig, update *appsv1.ControllerRevision) error {
	problem, err := c.config.WriteSetSnapshots(ctx, *cfg, update)
	if err == nil {
		return nil
	}
	cfg.Problem, cfg.Reason = problem, configrollout.ReasonSnapshotFailed
	controller.ReportSetConfig(&c.configReports, c.recorder, set, set.UID, failureConditions, set.Status.Conditions, *cfg)
	next := set.DeepCopy()
	next.Status.Conditions = controller.WithConfigCondition(failureConditions, set.Status.Conditions, cfg.Problem, cfg.Reason, c.now())
	if !equality.Semantic.DeepEqual(next.Status.Conditions, set.Status.Conditions) {
		if _, uerr := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); uerr != nil && !apierrors.IsNotFound(uerr) {
			return uerr
		}
	}
	return err
}
