package storage

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// newClaim is claim ns/name of class asking 1Gi ReadWriteOnce, handed to our
// provisioner by the PV controller, with the scheduler's selected node unless "".
func newClaim(name, class, selectedNode string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Annotations: map[string]string{storagehelpers.AnnStorageProvisioner: ProvisionerName}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if selectedNode != "" {
		c.Annotations[storagehelpers.AnnSelectedNode] = selectedNode
	}
	return c
}

// newClass is a class of our provisioner with the binding mode and reclaim policy.
func newClass(name string, mode storagev1.VolumeBindingMode, reclaim corev1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: ProvisionerName, VolumeBindingMode: &mode, ReclaimPolicy: &reclaim}
}

// newNode is a node, Ready or not, labelled with its hostname and the extra labels.
func newNode(name string, ready bool, extra ...string) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	for i := 0; i+1 < len(extra); i += 2 {
		n.Labels[extra[i]] = extra[i+1]
	}
	return n
}

// describe sums a plan up in one line: action, then for a volume its node, size, modes,
// reclaim policy, class and claimRef.
func describe(p ClaimPlan) string {
	if p.Volume == nil {
		return fmt.Sprintf("%s: %s", p.Action, p.Reason)
	}
	v := p.Volume
	ref := v.Spec.ClaimRef
	size := v.Spec.Capacity[corev1.ResourceStorage]
	return fmt.Sprintf("%s %s on %s: %s %v %s %s class=%s claim=%s/%s(%s)", p.Action, v.Name, VolumeNode(v), size.String(), v.Spec.AccessModes,
		*v.Spec.VolumeMode, v.Spec.PersistentVolumeReclaimPolicy, v.Spec.StorageClassName, ref.Namespace, ref.Name, ref.UID)
}

func TestPlanClaim(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	del, retain := corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain
	standard := newClass("standard", wffc, del)
	node1 := newNode("kroll-node-1", true)
	threeNodes := []*corev1.Node{newNode("kroll-node-0", true), node1, newNode("kroll-node-2", true)}
	now := metav1.Now()

	tests := []struct {
		name  string
		state func() ClaimState
		want  string
	}{
		{"the scheduler selected kroll-node-1: a 1Gi volume there, pre-bound to the claim, deleted with it",
			func() ClaimState {
				return ClaimState{Claim: newClaim("data-web-0", "standard", "kroll-node-1"), Class: standard, SelectedNode: node1}
			},
			"Provision pvc-uid-data-web-0 on kroll-node-1: 1Gi [ReadWriteOnce] Filesystem Delete class=standard claim=ns/data-web-0(uid-data-web-0)"},
		{"a Retain class gives a Retain volume",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "keep", "kroll-node-1"), Class: newClass("keep", wffc, retain), SelectedNode: node1}
			},
			"Provision pvc-uid-c on kroll-node-1: 1Gi [ReadWriteOnce] Filesystem Retain class=keep claim=ns/c(uid-c)"},
		{"a Block claim gives a Block volume",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				block := corev1.PersistentVolumeBlock
				c.Spec.VolumeMode = &block
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			"Provision pvc-uid-c on kroll-node-1: 1Gi [ReadWriteOnce] Block Delete class=standard claim=ns/c(uid-c)"},
		{"handed over with the beta annotation only: provisioned all the same",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				delete(c.Annotations, storagehelpers.AnnStorageProvisioner)
				c.Annotations[storagehelpers.AnnBetaStorageProvisioner] = ProvisionerName
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			"Provision pvc-uid-c on kroll-node-1: 1Gi [ReadWriteOnce] Filesystem Delete class=standard claim=ns/c(uid-c)"},
		{"bound already: nothing",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				c.Spec.VolumeName = "pvc-uid-c"
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			"Wait: bound to volume pvc-uid-c"},
		{"being deleted: nothing",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				c.DeletionTimestamp = &now
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			"Wait: being deleted"},
		{"the PV controller has not handed it over yet: nothing",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				delete(c.Annotations, storagehelpers.AnnStorageProvisioner)
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			"Wait: not handed to kroll.dev/simulated-local by the volume controller"},
		{"its volume exists (made before a restart): not made twice",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1, Volume: newVolume(c, standard, node1)}
			},
			"Wait: volume pvc-uid-c exists"},
		{"its class does not exist: failed",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "fast", "kroll-node-1"), SelectedNode: node1}
			},
			`Fail: failed to provision volume with StorageClass "fast": storageclass.storage.k8s.io "fast" not found`},
		{"its class names another provisioner: nothing",
			func() ClaimState {
				other := newClass("ebs", wffc, del)
				other.Provisioner = "ebs.csi.aws.com"
				return ClaimState{Claim: newClaim("c", "ebs", "kroll-node-1"), Class: other, SelectedNode: node1}
			},
			"Wait: class ebs is provisioned by ebs.csi.aws.com"},
		{"a selector cannot be honoured by a new volume: failed",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			`Fail: failed to provision volume with StorageClass "standard": claim Selector is not supported`},
		{"a data source would need copying: failed",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "origin"}
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			`Fail: failed to provision volume with StorageClass "standard": kroll.dev/simulated-local cannot fill a volume from a data source (PersistentVolumeClaim origin)`},
		{"ReadWriteMany on a node-local volume: failed",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			`Fail: failed to provision volume with StorageClass "standard": kroll.dev/simulated-local volumes are local to one node: only ReadWriteOnce and ReadWriteOncePod access modes are supported, not ReadWriteMany`},
		{"a volume attributes class needs a CSI volume: failed",
			func() ClaimState {
				c := newClaim("c", "standard", "kroll-node-1")
				gold := "gold"
				c.Spec.VolumeAttributesClassName = &gold
				return ClaimState{Claim: c, Class: standard, SelectedNode: node1}
			},
			`Fail: failed to provision volume with StorageClass "standard": kroll.dev/simulated-local volumes are not CSI volumes: volumeAttributesClassName "gold" is not supported`},
		{"the selected node is gone: back to the scheduler",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "standard", "kroll-node-9"), Class: standard}
			},
			`Reschedule: failed to get target node: node "kroll-node-9" not found`},
		{"WaitForFirstConsumer and no pod scheduled yet: nothing",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "standard", ""), Class: standard, Nodes: threeNodes}
			},
			"Wait: waiting for the scheduler to select a node"},
		{"Immediate: the node with fewest volumes (0:2, 1:1, 2:1 → 1, first by name)",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "now", ""), Class: newClass("now", immediate, del), Nodes: threeNodes,
					VolumesPerNode: map[string]int{"kroll-node-0": 2, "kroll-node-1": 1, "kroll-node-2": 1}}
			},
			"Provision pvc-uid-c on kroll-node-1: 1Gi [ReadWriteOnce] Filesystem Delete class=now claim=ns/c(uid-c)"},
		{"Immediate: a node not Ready or cordoned gets none, however empty",
			func() ClaimState {
				cordoned := newNode("kroll-node-0", true)
				cordoned.Spec.Unschedulable = true
				nodes := []*corev1.Node{cordoned, newNode("kroll-node-1", false), newNode("kroll-node-2", true)}
				return ClaimState{Claim: newClaim("c", "now", ""), Class: newClass("now", immediate, del), Nodes: nodes,
					VolumesPerNode: map[string]int{"kroll-node-2": 5}}
			},
			"Provision pvc-uid-c on kroll-node-2: 1Gi [ReadWriteOnce] Filesystem Delete class=now claim=ns/c(uid-c)"},
		{"Immediate with allowedTopologies zone b: only zone b's node",
			func() ClaimState {
				class := newClass("zoned", immediate, del)
				class.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"b"}}}}}
				nodes := []*corev1.Node{newNode("kroll-node-0", true, corev1.LabelTopologyZone, "a"), newNode("kroll-node-1", true, corev1.LabelTopologyZone, "b")}
				return ClaimState{Claim: newClaim("c", "zoned", ""), Class: class, Nodes: nodes, VolumesPerNode: map[string]int{"kroll-node-1": 3}}
			},
			"Provision pvc-uid-c on kroll-node-1: 1Gi [ReadWriteOnce] Filesystem Delete class=zoned claim=ns/c(uid-c)"},
		{"Immediate and no node to put it on: failed",
			func() ClaimState {
				return ClaimState{Claim: newClaim("c", "now", ""), Class: newClass("now", immediate, del), Nodes: []*corev1.Node{newNode("kroll-node-0", false)}}
			},
			`Fail: failed to provision volume with StorageClass "now": no node to place the volume on: none is Ready, schedulable and within the class's allowedTopologies`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(PlanClaim(tt.state())); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPlanClaim_theVolumeAsTheControllersExpectIt(t *testing.T) {
	class := newClass("standard", storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete)
	class.MountOptions = []string{"noatime"}
	claim := newClaim("data-web-0", "standard", "kroll-node-1")
	plan := PlanClaim(ClaimState{Claim: claim, Class: class, SelectedNode: newNode("kroll-node-1", true)})
	v := plan.Volume
	if v == nil {
		t.Fatalf("no volume: %s", describe(plan))
	}
	// The PV controller deletes nothing it did not provision and leaves a volume of an
	// external provisioner to it: the annotation is what tells.
	if got := v.Annotations[storagehelpers.AnnDynamicallyProvisioned]; got != ProvisionerName {
		t.Errorf("provisioned-by %q", got)
	}
	// Pre-bound by name, namespace and UID: the PV controller completes the binding and
	// no other claim can take it.
	if ref := v.Spec.ClaimRef; ref.Kind != "PersistentVolumeClaim" || ref.APIVersion != "v1" || ref.UID != claim.UID || ref.ResourceVersion != "7" {
		t.Errorf("claimRef %+v", ref)
	}
	if v.Spec.Local == nil || v.Spec.Local.Path != "/var/lib/kroll/storage/pvc-uid-data-web-0_ns_data-web-0" {
		t.Errorf("source %+v, want a local path under %s", v.Spec.PersistentVolumeSource, VolumeRoot)
	}
	if strings.Join(v.Spec.MountOptions, ",") != "noatime" {
		t.Errorf("mount options %v, want the class's", v.Spec.MountOptions)
	}
	// The scheduler keeps a later pod of this claim on the node through this affinity.
	if err := storagehelpers.CheckNodeAffinity(v, map[string]string{corev1.LabelHostname: "kroll-node-1"}); err != nil {
		t.Errorf("affinity does not match the selected node: %v", err)
	}
	if err := storagehelpers.CheckNodeAffinity(v, map[string]string{corev1.LabelHostname: "kroll-node-2"}); err == nil {
		t.Error("affinity matches another node")
	}
}

func TestPlanVolume(t *testing.T) {
	now := metav1.Now()
	pv := func(ours bool, phase corev1.PersistentVolumePhase, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{}},
			Spec:   corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: reclaim},
			Status: corev1.PersistentVolumeStatus{Phase: phase}}
		if ours {
			v.Annotations[storagehelpers.AnnDynamicallyProvisioned] = ProvisionerName
		}
		return v
	}
	deleting := pv(true, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete)
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want VolumeAction
	}{
		{"ours, its claim gone, reclaim Delete: deleted", pv(true, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete), VolumeDelete},
		{"ours, its claim gone, reclaim Retain: stays Released", pv(true, corev1.VolumeReleased, corev1.PersistentVolumeReclaimRetain), VolumeKeep},
		{"ours and bound: kept", pv(true, corev1.VolumeBound, corev1.PersistentVolumeReclaimDelete), VolumeKeep},
		{"ours, pre-bound and not yet bound (Available): kept", pv(true, corev1.VolumeAvailable, corev1.PersistentVolumeReclaimDelete), VolumeKeep},
		{"ours and being deleted already: not deleted again", deleting, VolumeKeep},
		{"someone else's released volume: not ours to delete", pv(false, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete), VolumeKeep},
	}
	for _, tt := range tests {
		if got, why := PlanVolume(tt.pv); got != tt.want {
			t.Errorf("%s: got %s (%s), want %s", tt.name, got, why, tt.want)
		}
	}
}
