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
// persistentVolumeClaimRetentionPolicy says (planClaimOwners), so that the garbage
// collector deletes them with the set or the pod. It reads claims from the informer
// cache and writes through writer.
type claimKeeper struct {
	writer   claimWriter
	claims   corelisters.PersistentVolumeClaimLister
	recorder record.EventRecorder
}

// newClaimKeeper is a claimKeeper writing through client.
func newClaimKeeper(client kubernetes.Interface, claims corelisters.PersistentVolumeClaimLister, recorder record.EventRecorder) *claimKeeper {
	return &claimKeeper{writer: clientClaimWriter{client}, claims: claims, recorder: recorder}
}

// claimWriter is every write the StatefulSet controller makes to claims.
type claimWriter interface {
	// CreateClaim creates claim as given (owner references included).
	CreateClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error
	// SetClaimOwners replaces claim's owner references with owners, provided claim has
	// not changed since it was read (its resourceVersion); a claim gone is no error.
	SetClaimOwners(ctx context.Context, claim *corev1.PersistentVolumeClaim, owners []metav1.OwnerReference) error
}

type clientClaimWriter struct{ client kubernetes.Interface }

var _ claimWriter = clientClaimWriter{}

func (w clientClaimWriter) CreateClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	_, err := w.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	return err
}

func (w clientClaimWriter) SetClaimOwners(ctx context.Context, claim *corev1.PersistentVolumeClaim, owners []metav1.OwnerReference) error {
	if owners == nil {
		owners = []metav1.OwnerReference{} // a list to replace with, not a null that drops the field
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": owners, "resourceVersion": claim.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = w.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// create makes the claims of pod (ordinal) that do not exist yet, owned as the policy
// says from the start (one write, where upstream creates and then updates).
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
		if plan := planClaimOwners(set, pod, claim, retentionOf(set)); plan.Write {
			claim.OwnerReferences = plan.Owners
		}
		err = k.writer.CreateClaim(ctx, claim)
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

// staleClaim tells whether a claim of pod (not created yet) still belongs to an earlier
// pod of that name (claimIsStale): the new pod waits until the garbage collector has
// deleted it.
func (k *claimKeeper) staleClaim(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	policy := retentionOf(set)
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim, err := k.claims.PersistentVolumeClaims(set.Namespace).Get(claimName(t.Name, set, ordinalOf(pod)))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if claimIsStale(pod, claim, policy) {
			return true, nil
		}
	}
	return false, nil
}

// fixRetention brings the owner references of pod's claims in line with the policy
// (planClaimOwners); a claim not there yet is left to the pass that creates it.
func (k *claimKeeper) fixRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	policy := retentionOf(set)
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim, err := k.claims.PersistentVolumeClaims(set.Namespace).Get(claimName(t.Name, set, ordinalOf(pod)))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		plan := planClaimOwners(set, pod, claim, policy)
		if !plan.Write {
			continue
		}
		if plan.Conflict {
			k.recorder.Eventf(set, corev1.EventTypeWarning, "ConflictingController",
				"PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim", claim.Name)
		}
		if err := k.writer.SetClaimOwners(ctx, claim, plan.Owners); err != nil {
			return fmt.Errorf("could not update claim %s for delete policy ownerRefs: %w", claim.Name, err)
		}
	}
	return nil
}
