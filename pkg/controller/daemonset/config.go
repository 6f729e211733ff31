package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/controller"
)

// Configuration rollout (kroll.dev/config-rollout: "true"; design in pkg/configrollout):
// the update revision records the DaemonSet's template with kroll.dev/config-hash, so a data
// change makes a new ControllerRevision that the DaemonSet's own strategy rolls (maxUnavailable,
// maxSurge, OnDelete, staged steps); the revision owns its snapshots and the pods
// made of it name them (syncNodes).

// WatchConfig turns configuration rollout on in the controller: it reads ConfigMaps
// and Secrets from these informers and wakes the DaemonSets that reference one when
// it is created, its data changes, or it is deleted. Call before the informers start.
func (c *Controller) WatchConfig(sets cache.SharedIndexInformer, cmInformer coreinformers.ConfigMapInformer, secretInformer coreinformers.SecretInformer) error {
	config, err := controller.WatchConfig(c.client, sets, cmInformer, secretInformer, c.queue.Enqueue, &c.synced)
	c.config = config
	return err
}

// configWrites are what configuration rollout writes through and reports to.
func (c *Controller) configWrites() controller.SetConfigWrites[*appsv1.DaemonSet] {
	return controller.SetConfigWrites[*appsv1.DaemonSet]{Source: c.config, Reports: &c.configReports, Recorder: c.recorder, Writer: c.dsWriter}
}
