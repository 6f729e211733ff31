package statefulset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimOwnersPlan is what planClaimOwners decides for one claim of a pod.
type claimOwnersPlan struct {
	// Write: the claim's owner references disagree with the retention policy; Owners
	// are then the whole list to write. False when the claim is as it should be, or is
	// left alone on purpose (a stale reference).
	Write bool
	// Owners is the claim's new list of owner references, meaningful only when Write:
	// every reference that is neither the set nor the pod, in its order, then the ones
	// the policy asks for. Empty when nothing is to remain.
	Owners []metav1.OwnerReference
	// Conflict: another controller manages the claim, so the policy is not applied to it
	// (the set's and the pod's references are taken off, none added). Only reported
	// under a policy that deletes something; a set that retains everything does not care
	// who else controls its claims.
	Conflict bool
}

// planClaimOwners decides the owner references of claim, a claim of pod in set, under
// policy (the set's persistentVolumeClaimRetentionPolicy, Retain/Retain when nil; a value
// neither Retain nor Delete counts as Retain). The claim is owned, each reference a
// controller reference, by
//
//	whenDeleted  whenScaled  pod in range  pod scaled away (ordinal outside the range)
//	Retain       Retain      nobody        nobody
//	Delete       Retain      the set       the set
//	Retain       Delete      nobody        the pod
//	Delete       Delete      the set       the pod
//
// so that the garbage collector deletes it with the set or with the pod. Around that:
//   - A reference to the set or the pod (matched by API version, kind and name) with
//     another UID is stale, from an earlier object of that name: the claim is left as it
//     is, for the garbage collector. So is any claim under Retain/Retain that has neither
//     the set nor the pod as owner.
//   - Another controller (a controller reference to neither): the set's and the pod's
//     references are taken off, none added, and the other controller keeps the claim.
//   - Owners that are neither the set nor the pod stay, in their order.
//   - A reference to the set or the pod without the controller flag (a user removed it)
//     is rewritten with it.
//
// Worked example: whenDeleted Delete, whenScaled Delete, replicas 2, claim data-web-3 of
// web-3 owned by [ConfigMap/c, StatefulSet/web (controller)]: web-3 is scaled away, so
// the plan writes [ConfigMap/c, Pod/web-3 (controller)]. A pod not created yet (no UID)
// is never added as an owner.
func planClaimOwners(set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim,
	policy appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) claimOwnersPlan {
	have := claim.OwnerReferences
	isSet := func(r metav1.OwnerReference) bool {
		return r.APIVersion == "apps/v1" && r.Kind == "StatefulSet" && r.Name == set.Name
	}
	isPod := func(r metav1.OwnerReference) bool {
		return r.APIVersion == "v1" && r.Kind == "Pod" && r.Name == pod.Name
	}
	if staleRef(have, isSet, set.UID) || staleRef(have, isPod, pod.UID) {
		return claimOwnersPlan{}
	}

	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	deletes := policy.WhenDeleted == del || policy.WhenScaled == del
	scaledAway := ordinalOf(pod) < startOrdinal(set) || ordinalOf(pod) >= startOrdinal(set)+replicasOf(set)
	wantSet := policy.WhenDeleted == del && (!scaledAway || policy.WhenScaled != del)
	wantPod := policy.WhenScaled == del && scaledAway && pod.UID != ""

	var kept []metav1.OwnerReference
	hasSet, hasPod, flagless, foreign := false, false, false, false
	for _, r := range have {
		switch {
		case isSet(r), isPod(r):
			hasSet = hasSet || isSet(r)
			hasPod = hasPod || isPod(r)
			flagless = flagless || r.Controller == nil || !*r.Controller
			continue
		case r.Controller != nil && *r.Controller:
			foreign = true
		}
		kept = append(kept, r)
	}

	if deletes && foreign {
		// Another controller: ours go, none come.
		return claimOwnersPlan{Write: hasSet || hasPod, Owners: kept, Conflict: true}
	}
	if hasSet == wantSet && hasPod == wantPod && !flagless {
		return claimOwnersPlan{}
	}
	if wantSet {
		kept = append(kept, *metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet")))
	}
	if wantPod {
		kept = append(kept, *metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod")))
	}
	return claimOwnersPlan{Write: true, Owners: kept}
}

// staleRef tells whether the first reference in refs that names the object (matches)
// carries another UID than uid: the reference is to an earlier object of that name.
func staleRef(refs []metav1.OwnerReference, matches func(metav1.OwnerReference) bool, uid types.UID) bool {
	for _, r := range refs {
		if matches(r) {
			return r.UID != uid
		}
	}
	return false
}

// retentionOf is set's persistentVolumeClaimRetentionPolicy, Retain/Retain when unset.
func retentionOf(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		return *p
	}
	return appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
}

// claimIsStale tells whether claim, of pod's ordinal, still belongs to an earlier pod of
// that name (whenScaled Delete made it that pod's): pod, not created yet, waits until
// the garbage collector has deleted it. Under whenScaled Retain a claim is meant to be
// reused, and never stale.
func claimIsStale(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, policy appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) bool {
	if policy.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return false
	}
	return staleRef(claim.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.APIVersion == "v1" && r.Kind == "Pod" && r.Name == pod.Name
	}, pod.UID)
}
