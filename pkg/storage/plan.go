package storage

import (
	"fmt"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// ClaimAction is what the provisioner does for one claim.
type ClaimAction string

const (
	// ClaimWait: nothing to do now — the claim is not ours, not ready for a volume yet,
	// or already has one. A change of the claim brings it back.
	ClaimWait ClaimAction = "Wait"
	// ClaimProvision: create ClaimPlan.Volume.
	ClaimProvision ClaimAction = "Provision"
	// ClaimFail: the claim asks for what this storage cannot give; a Warning
	// ProvisioningFailed event says so, and nothing is retried until the claim changes.
	ClaimFail ClaimAction = "Fail"
	// ClaimReschedule: the node the scheduler selected is gone. The selected-node
	// annotation is removed, which sends the scheduler's PreBind back to choose again.
	ClaimReschedule ClaimAction = "Reschedule"
)

// ClaimPlan is PlanClaim's decision for one claim.
type ClaimPlan struct {
	Action ClaimAction
	// Volume is the PersistentVolume to create (ClaimProvision only, else nil).
	Volume *corev1.PersistentVolume
	// Reason says why: for ClaimWait a note for the log, for ClaimFail and
	// ClaimReschedule the message of the ProvisioningFailed event.
	Reason string
}

// ClaimState is what PlanClaim decides from, read from the informers' caches.
type ClaimState struct {
	Claim *corev1.PersistentVolumeClaim
	// Class is the claim's StorageClass; nil when no class of that name exists.
	Class *storagev1.StorageClass
	// Volume is the PersistentVolume named VolumeName(Claim); nil when there is none.
	Volume *corev1.PersistentVolume
	// SelectedNode is the node the claim's volume.kubernetes.io/selected-node annotation
	// names; nil when there is no annotation or no such node.
	SelectedNode *corev1.Node
	// Nodes are the cluster's nodes; only read for a claim of an Immediate class, which
	// has no selected node (may be nil otherwise).
	Nodes []*corev1.Node
	// VolumesPerNode counts this provisioner's volumes per node (by hostname label, see
	// VolumeNode), to place an Immediate claim on the least used node.
	VolumesPerNode map[string]int
}

// VolumeName is the name of the volume provisioned for claim: "pvc-<claim UID>", as
// every provisioner names it. One name per claim is what makes provisioning idempotent.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// PlanClaim decides what to do for one claim. In order:
//
//	bound, being deleted, not handed to ProvisionerName    Wait
//	its volume pvc-<uid> exists already                    Wait (made before a restart, say)
//	class missing                                          Fail
//	class of another provisioner                           Wait
//	selector, data source, a many-node access mode, a
//	volume attributes class, no storage request            Fail (node-local volumes cannot)
//	selected node annotated but gone                       Reschedule
//	no selected node, class WaitForFirstConsumer           Wait (for the scheduler)
//	no selected node, class Immediate                      Provision on the least used
//	                                                       ready node (Fail when none)
//	otherwise                                              Provision on the selected node
func PlanClaim(s ClaimState) ClaimPlan {
	claim := s.Claim
	className := storagehelpers.GetPersistentVolumeClaimClass(claim)
	switch {
	case claim.Spec.VolumeName != "":
		return waiting("bound to volume " + claim.Spec.VolumeName)
	case claim.DeletionTimestamp != nil:
		return waiting("being deleted")
	case !handedTo(claim, ProvisionerName):
		return waiting("not handed to " + ProvisionerName + " by the volume controller")
	case s.Volume != nil:
		return waiting("volume " + s.Volume.Name + " exists")
	case s.Class == nil:
		return fail(className, fmt.Sprintf("storageclass.storage.k8s.io %q not found", className))
	case s.Class.Provisioner != ProvisionerName:
		return waiting("class " + className + " is provisioned by " + s.Class.Provisioner)
	}
	if reason := unsupported(claim); reason != "" {
		return fail(className, reason)
	}

	node := s.SelectedNode
	if selected, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok && node == nil {
		return ClaimPlan{Action: ClaimReschedule, Reason: fmt.Sprintf("failed to get target node: node %q not found", selected)}
	}
	if node == nil {
		if mode := s.Class.VolumeBindingMode; mode != nil && *mode == storagev1.VolumeBindingWaitForFirstConsumer {
			return waiting("waiting for the scheduler to select a node")
		}
		if node = leastUsed(s.Nodes, s.Class.AllowedTopologies, s.VolumesPerNode); node == nil {
			return fail(className, "no node to place the volume on: none is Ready, schedulable and within the class's allowedTopologies")
		}
	}
	return ClaimPlan{Action: ClaimProvision, Volume: newVolume(claim, s.Class, node)}
}

func waiting(why string) ClaimPlan { return ClaimPlan{Action: ClaimWait, Reason: why} }

// fail words a failure as external provisioners do.
func fail(className, why string) ClaimPlan {
	return ClaimPlan{Action: ClaimFail, Reason: fmt.Sprintf("failed to provision volume with StorageClass %q: %s", className, why)}
}

// handedTo tells whether the PV controller has asked provisioner for claim's volume.
func handedTo(claim *corev1.PersistentVolumeClaim, provisioner string) bool {
	return claim.Annotations[storagehelpers.AnnStorageProvisioner] == provisioner ||
		claim.Annotations[storagehelpers.AnnBetaStorageProvisioner] == provisioner
}

// unsupported says what of claim a node-local volume cannot honour; "" when nothing.
func unsupported(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.Selector != nil {
		return "claim Selector is not supported"
	}
	if ref := claim.Spec.DataSourceRef; ref != nil {
		return fmt.Sprintf("%s cannot fill a volume from a data source (%s %s)", ProvisionerName, ref.Kind, ref.Name)
	}
	if ref := claim.Spec.DataSource; ref != nil {
		return fmt.Sprintf("%s cannot fill a volume from a data source (%s %s)", ProvisionerName, ref.Kind, ref.Name)
	}
	for _, m := range claim.Spec.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return fmt.Sprintf("%s volumes are local to one node: only ReadWriteOnce and ReadWriteOncePod access modes are supported, not %s", ProvisionerName, m)
		}
	}
	if vac := claim.Spec.VolumeAttributesClassName; vac != nil && *vac != "" {
		// The API server allows volumeAttributesClassName on CSI volumes only.
		return fmt.Sprintf("%s volumes are not CSI volumes: volumeAttributesClassName %q is not supported", ProvisionerName, *vac)
	}
	if size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || size.Sign() <= 0 {
		return "the claim requests no storage (spec.resources.requests.storage)"
	}
	return ""
}

// newVolume is claim's volume on node: capacity as requested, the claim's access modes
// and volume mode, the class's reclaim policy and mount options, a local path on the
// node, node affinity to it, and a claimRef that pre-binds it to claim (the PV
// controller then completes the binding from the claim's side).
func newVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) *corev1.PersistentVolume {
	name := VolumeName(claim)
	mode := corev1.PersistentVolumeFilesystem
	if claim.Spec.VolumeMode != nil {
		mode = *claim.Spec.VolumeMode
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	hostname := hostnameOf(node)
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{storagehelpers.AnnDynamicallyProvisioned: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes: append([]corev1.PersistentVolumeAccessMode(nil), claim.Spec.AccessModes...),
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  append([]string(nil), class.MountOptions...),
			VolumeMode:                    &mode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{
				// The local-path layout: <root>/<volume>_<namespace>_<claim>.
				Path: path.Join(VolumeRoot, fmt.Sprintf("%s_%s_%s", name, claim.Namespace, claim.Name)),
			}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
}

// hostnameOf is node's kubernetes.io/hostname label, which node affinity matches; the
// node's name when it has none.
func hostnameOf(node *corev1.Node) string {
	if h := node.Labels[corev1.LabelHostname]; h != "" {
		return h
	}
	return node.Name
}

// VolumeNode is the hostname the node affinity of a volume this provisioner made pins
// it to; "" for any other volume.
func VolumeNode(pv *corev1.PersistentVolume) string {
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != ProvisionerName || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// leastUsed is the node, among those Ready, schedulable and within topologies, that
// holds the fewest volumes (by VolumesPerNode); ties go to the first name in order, so
// the choice is stable. With volumes {node-0: 2, node-1: 1, node-2: 1}, node-1. Nil
// when no node qualifies.
func leastUsed(nodes []*corev1.Node, topologies []corev1.TopologySelectorTerm, perNode map[string]int) *corev1.Node {
	var candidates []*corev1.Node
	for _, n := range nodes {
		if n.DeletionTimestamp == nil && !n.Spec.Unschedulable && nodeReady(n) && withinTopologies(n, topologies) {
			candidates = append(candidates, n)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		ui, uj := perNode[hostnameOf(candidates[i])], perNode[hostnameOf(candidates[j])]
		if ui != uj {
			return ui < uj
		}
		return candidates[i].Name < candidates[j].Name
	})
	if len(candidates) == 0 {
		return nil
	}
	return candidates[0]
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// withinTopologies tells whether node's labels satisfy one of terms (all of its label
// expressions); no terms means anywhere.
func withinTopologies(node *corev1.Node, terms []corev1.TopologySelectorTerm) bool {
	if len(terms) == 0 {
		return true
	}
	for _, term := range terms {
		all := true
		for _, e := range term.MatchLabelExpressions {
			v, ok := node.Labels[e.Key]
			if !ok || !contains(e.Values, v) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// VolumeAction is what the provisioner does with one volume.
type VolumeAction string

const (
	// VolumeKeep: leave the volume alone.
	VolumeKeep VolumeAction = "Keep"
	// VolumeDelete: delete it; its claim is gone and its reclaim policy is Delete.
	VolumeDelete VolumeAction = "Delete"
)

// PlanVolume decides what to do with one volume, and why. Only a volume this
// provisioner made, that the PV controller has marked Released (its claim is gone, or
// bound elsewhere), with reclaim policy Delete and not already being deleted, is
// deleted. A Retain volume stays Released: reclaiming it is an administrator's call.
func PlanVolume(pv *corev1.PersistentVolume) (VolumeAction, string) {
	switch {
	case pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != ProvisionerName:
		return VolumeKeep, "not provisioned by " + ProvisionerName
	case pv.DeletionTimestamp != nil:
		return VolumeKeep, "being deleted"
	case pv.Status.Phase != corev1.VolumeReleased:
		return VolumeKeep, "phase " + string(pv.Status.Phase)
	case pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
		return VolumeKeep, "released, reclaim policy " + string(pv.Spec.PersistentVolumeReclaimPolicy)
	}
	return VolumeDelete, "released, reclaim policy Delete"
}
