package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// claimKeeper creates a set's PVCs and keeps their owner references as the set's
// persistentVolumeClaimRetentionPolicy says:
//
//	whenDeleted=Delete  the claims of in-range pods are owned by the set
//	whenScaled=Delete   the claims of condemned pods are owned by their pod
//
// so that the garbage collector deletes them with the set or the pod.
type claimKeeper struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	pods     corelisters.PodLister
	recorder record.EventRecorder
}

// create makes the claims of pod (ordinal) that do not exist yet.
func (k *claimKeeper) create(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) error {
	for i := range set.Spec.VolumeClaimTemplates {
		claim := newClaim(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		existing, err := k.claims.PersistentVolumeClaims(set.Namespace).Get(claim.Name)
		if err == nil {
			if existing.DeletionTimestamp != nil {
				err := fmt.Errorf("pvc %s is being deleted", claim.Name)
				k.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "Create Pod %s in StatefulSet %s failed error: %s", pod.Name, set.Name, err)
				return err
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		claim.OwnerReferences = wantedClaimOwners(set, pod, ordinal, nil)
		_, err = k.client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			k.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "Create Claim %s for Pod %s in StatefulSet %s failed error: %s", claim.Name, pod.Name, set.Name, err)
			return err
		default:
			k.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "Create Claim %s Pod %s in StatefulSet %s success", claim.Name, pod.Name, set.Name)
		}
	}
	return nil
}

// staleClaim tells whether a claim of ordinal still belongs to an earlier pod of that
// name that was scaled away (whenScaled=Delete): the new pod waits until the garbage
// collector has deleted it.
func (k *claimKeeper) staleClaim(set *appsv1.StatefulSet, ordinal int) (bool, error) {
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim, err := k.claims.PersistentVolumeClaims(set.Namespace).Get(claimName(t.Name, set, ordinal))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		for _, ref := range claim.OwnerReferences {
			if ref.Kind == "Pod" && ref.Name == podName(set, ordinal) {
				return true, nil
			}
		}
	}
	return false, nil
}

// fixRetention brings the owner references of pod's claims in line with the policy
// (condemned: pod's ordinal is out of range).
func (k *claimKeeper) fixRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, condemned bool) error {
	ordinal := ordinalOf(pod)
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim, err := k.claims.PersistentVolumeClaims(set.Namespace).Get(claimName(t.Name, set, ordinal))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		var podRef *corev1.Pod
		if condemned {
			podRef = pod
		}
		want := wantedClaimOwners(set, podRef, ordinal, claim.OwnerReferences)
		if conflictingController(set, ordinal, want) {
			// Another controller manages the claim: the policy does not apply; only
			// the set's and its pod's references go.
			k.recorder.Eventf(set, corev1.EventTypeWarning, "ConflictingController",
				"PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim", claim.Name)
			want = wantedClaimOwners(set, nil, ordinal, claim.OwnerReferences)
			want = withoutOwnRefs(set, ordinal, want)
		}
		if sameOwners(claim.OwnerReferences, want) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": want, "resourceVersion": claim.ResourceVersion}})
		if _, err := k.client.CoreV1().PersistentVolumeClaims(set.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// wantedClaimOwners are the owner references a claim should have: those it has that
// are neither the set nor a pod of it, plus the set (whenDeleted=Delete, not
// condemned) or the pod (whenScaled=Delete, condemned: pod non-nil and created).
func wantedClaimOwners(set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int, have []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range have {
		if (r.Kind == "StatefulSet" && r.Name == set.Name) || (r.Kind == "Pod" && r.Name == podName(set, ordinal)) {
			continue
		}
		out = append(out, r)
	}
	policy := set.Spec.PersistentVolumeClaimRetentionPolicy
	yes := true
	condemned := pod != nil && pod.UID != "" && (ordinal < startOrdinal(set) || ordinal >= startOrdinal(set)+replicasOf(set))
	switch {
	case policy == nil:
	case condemned && policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		out = append(out, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes, BlockOwnerDeletion: &yes})
	case policy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		out = append(out, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: &yes, BlockOwnerDeletion: &yes})
	}
	return out
}

// conflictingController tells whether owners have two controllers: one the policy
// added, and another that was there (an operator managing the claim).
func conflictingController(set *appsv1.StatefulSet, ordinal int, owners []metav1.OwnerReference) bool {
	foreign, own := false, false
	for _, r := range owners {
		if r.Controller == nil || !*r.Controller {
			continue
		}
		if (r.Kind == "StatefulSet" && r.Name == set.Name) || (r.Kind == "Pod" && r.Name == podName(set, ordinal)) {
			own = true
		} else {
			foreign = true
		}
	}
	return foreign && own
}

// withoutOwnRefs drops the set's and its pod's references from owners.
func withoutOwnRefs(set *appsv1.StatefulSet, ordinal int, owners []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range owners {
		if (r.Kind == "StatefulSet" && r.Name == set.Name) || (r.Kind == "Pod" && r.Name == podName(set, ordinal)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || a[i].Kind != b[i].Kind || a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}
