// Package storage is the embedded cluster's simulated dynamic provisioning: a default
// StorageClass and an external provisioner that gives each claim of that class a
// node-local PersistentVolume, so that StatefulSets with volumeClaimTemplates (and any
// other claim) behave as on a cluster with a local-path or CSI provisioner — without
// any disk being touched.
//
// # Who does what
//
// Only the provisioner's part is written here; the rest is upstream's, running in the
// embedded cluster:
//
//	kube-scheduler (VolumeBinding)   a pod uses an unbound claim of a WaitForFirstConsumer
//	                                 class: picks a node, sets the claim's annotation
//	                                 volume.kubernetes.io/selected-node, waits in PreBind
//	                                 until the claim is bound, then binds the pod
//	kube-controller-manager          sees the class's provisioner is external: annotates
//	(persistentvolume-binder)        the claim volume.kubernetes.io/storage-provisioner,
//	                                 event ExternalProvisioning; binds the claim to the
//	                                 volume made for it; marks a volume whose claim is
//	                                 gone Released
//	this package                     a claim annotated for ProvisionerName with a node:
//	                                 creates PersistentVolume pvc-<claim UID> pre-bound to
//	                                 it, pinned to the node; a Released volume it made with
//	                                 reclaim policy Delete: deletes it
//	simulated kubelet                starts a pod only once its claims are bound to
//	                                 volumes on its node (package kubelet, volumes.go)
//
// # The protocol, as external provisioners keep it
//
// The provisioner acts on a claim only when (PlanClaim):
//   - it is not bound yet (spec.volumeName empty) and not being deleted;
//   - the PV controller has handed it over: volume.kubernetes.io/storage-provisioner (or
//     the beta annotation) names ProvisionerName;
//   - its class exists and names ProvisionerName;
//   - it has a node: the scheduler's selected-node annotation, or — for a class with
//     volumeBindingMode Immediate, where no pod is waiting — the ready, schedulable node
//     that holds the fewest of this provisioner's volumes (allowedTopologies honoured).
//
// It is level-based: the volume of claim C is always named pvc-<C's UID>, so a volume
// that exists (seen in the cache, or AlreadyExists from the API) is never made twice,
// across restarts too. Events are those of sig-storage-lib-external-provisioner:
// Provisioning, then ProvisioningSucceeded or ProvisioningFailed, on the claim.
//
// A volume is deleted only when the PV controller has marked it Released, it carries
// pv.kubernetes.io/provisioned-by: ProvisionerName, and its reclaim policy is Delete
// (PlanVolume); a Retain volume stays Released, as on any cluster, for an administrator
// to deal with.
package storage
