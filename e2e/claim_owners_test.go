package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimOwnersStatefulSet is storageStatefulSet (web with a claim "data" per pod) with
// replicas and the persistentVolumeClaimRetentionPolicy lines policy (indented four
// spaces; empty for none).
func claimOwnersStatefulSet(replicas int, policy string) string {
	m := strings.Replace(storageStatefulSet, "  replicas: 3\n", fmt.Sprintf("  replicas: %d\n", replicas), 1)
	if policy == "" {
		return strings.Replace(m, "  persistentVolumeClaimRetentionPolicy:\n    whenScaled: Delete\n", "", 1)
	}
	return strings.Replace(m, "    whenScaled: Delete\n", policy, 1)
}

// claimOwners describes the namespace's claims and their owner references, the way both
// clusters can agree on it (no UIDs): "name[Kind/name(controller) ...]", a reference to
// web with any UID but the live set's shown as stale; sorted. Terminating claims are
// listed as they are: their deletion is the garbage collector's, not the controller's.
func (s *scene) claimOwners(t *testing.T) string {
	t.Helper()
	setUID := types.UID("")
	if set, err := s.c.Client.AppsV1().StatefulSets(s.ns).Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
		setUID = set.UID
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	var out []string
	for _, c := range s.claimList(t) {
		var refs []string
		for _, r := range c.OwnerReferences {
			ref := r.Kind + "/" + r.Name
			if r.Kind == "StatefulSet" && r.Name == "web" && r.UID != setUID {
				ref += "(stale)"
			}
			if r.Controller != nil && *r.Controller {
				ref += "(controller)"
			}
			refs = append(refs, ref)
		}
		out = append(out, c.Name+"["+strings.Join(refs, " ")+"]")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// setClaimOwners replaces claim name's owner references (and finalizers, when given).
func (s *scene) setClaimOwners(t *testing.T, name string, refs []metav1.OwnerReference, finalizers ...string) *corev1.PersistentVolumeClaim {
	t.Helper()
	meta := map[string]any{"ownerReferences": refs}
	if len(finalizers) > 0 {
		meta["finalizers"] = finalizers
	}
	patch, _ := json.Marshal(map[string]any{"metadata": meta})
	claim, err := s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
	return claim
}

// setRetention writes web's persistentVolumeClaimRetentionPolicy.
func (s *scene) setRetention(t *testing.T, whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":%q,"whenScaled":%q}}}`, whenDeleted, whenScaled)
	s.kubectl(t, "patch", "statefulset/web", "--type=merge", "-p", patch)
}

// waitClaimOwners waits until the claims and their owners read want.
func (s *scene) waitClaimOwners(t *testing.T, what, want string) string {
	t.Helper()
	eventually(t, time.Minute, what+": "+want, func(context.Context) (bool, string) {
		got := s.claimOwners(t)
		return got == want, got
	})
	return what + ": " + want
}

// setRef is a reference to web (uid) as its claims carry it, controller or not.
func setRef(uid types.UID, controller bool) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: uid, Controller: &controller, BlockOwnerDeletion: &yes}
}

var claimOwnerScenarios = []scenario{
	// upstream's "should not delete PVCs when there is another controller", told with
	// web: an external owner is kept and the set added as controller beside it; a
	// foreign controller is left alone; a controller flag a user removed comes back; the
	// set's deletion takes only the claims nothing else holds.
	{name: "whenDeleted Delete: external owners kept, a removed controller flag put back, the set's deletion keeps the claims others hold", run: func(t *testing.T, s *scene) string {
		s.apply(t, claimOwnersStatefulSet(4, ""))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1")
		steps := []string{s.waitClaimOwners(t, "no policy", "data-web-0[] data-web-1[] data-web-2[] data-web-3[]")}

		owner, err := s.c.Client.CoreV1().ConfigMaps(s.ns).Create(context.Background(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "random-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		yes := true
		s.setClaimOwners(t, "data-web-1", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
		s.setClaimOwners(t, "data-web-3", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "unknown",
			UID: "9d86d6ae-4e06-4ff1-bc55-f77f52e272e9", Controller: &yes, BlockOwnerDeletion: &yes}}, "kroll.dev/e2e-keep")
		t.Cleanup(func() {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).Patch(context.Background(), "data-web-3", types.MergePatchType, patch, metav1.PatchOptions{})
		})

		s.setRetention(t, appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
		steps = append(steps, s.waitClaimOwners(t, "whenDeleted Delete",
			"data-web-0[StatefulSet/web(controller)] data-web-1[ConfigMap/random-owner StatefulSet/web(controller)] data-web-2[StatefulSet/web(controller)] data-web-3[StatefulSet/unknown(controller)]"))

		// A user takes the controller flag off claim 0; the next sync (provoked by a
		// policy change that leaves its want alone) puts it back. The removal is read
		// from the write's answer, not waited for in a list: any sync of the set (a
		// pod's status, a resync) may put the flag back before a list sees it gone.
		uid := s.statefulSet(t).UID
		removed := s.setClaimOwners(t, "data-web-0", []metav1.OwnerReference{setRef(uid, false)})
		if c := metav1.GetControllerOfNoCopy(removed); c != nil {
			t.Fatalf("claim data-web-0 written without a controller still has one: %s/%s", c.Kind, c.Name)
		}
		steps = append(steps, "claim 0's controller flag removed")
		s.setRetention(t, appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
		steps = append(steps, s.waitClaimOwners(t, "a sync later",
			"data-web-0[StatefulSet/web(controller)] data-web-1[ConfigMap/random-owner StatefulSet/web(controller)] data-web-2[StatefulSet/web(controller)] data-web-3[StatefulSet/unknown(controller)]"))

		// Claim 1 has an owner left, claim 3 a finalizer: both outlive the set.
		s.kubectl(t, "delete", "statefulset/web")
		eventually(t, time.Minute, "claims 0 and 2 deleted with the set", func(context.Context) (bool, string) {
			got := s.claimNames(t)
			return got == "data-web-1 data-web-3", got
		})
		return strings.Join(append(steps, "set deleted: claims "+s.claimNames(t)), "\n")
	}},
	// whenScaled Delete: the claims of the pods scaled away go with them, whatever a user
	// did to the set's references; a removed flag on a kept claim comes back with the
	// scale's sync, and the set's deletion takes the rest (whenDeleted Delete).
	{name: "whenScaled and whenDeleted Delete: removed controller flags put back at the scale-down; condemned claims go with their pods", run: func(t *testing.T, s *scene) string {
		s.apply(t, claimOwnersStatefulSet(3, "    whenDeleted: Delete\n    whenScaled: Delete\n"))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		steps := []string{s.waitClaimOwners(t, "3 pods", "data-web-0[StatefulSet/web(controller)] data-web-1[StatefulSet/web(controller)] data-web-2[StatefulSet/web(controller)]")}

		uid := s.statefulSet(t).UID
		s.setClaimOwners(t, "data-web-0", []metav1.OwnerReference{setRef(uid, false)})
		s.setClaimOwners(t, "data-web-2", []metav1.OwnerReference{setRef(uid, false)})
		steps = append(steps, s.waitClaimOwners(t, "flags removed", "data-web-0[StatefulSet/web] data-web-1[StatefulSet/web(controller)] data-web-2[StatefulSet/web]"))

		s.kubectl(t, "scale", "statefulset/web", "--replicas=2")
		s.waitSTS(t, "web-0=r1 web-1=r1")
		eventually(t, time.Minute, "data-web-2 deleted with web-2", func(context.Context) (bool, string) {
			got := s.claimNames(t)
			return got == "data-web-0 data-web-1", got
		})
		steps = append(steps, s.waitClaimOwners(t, "scaled to 2", "data-web-0[StatefulSet/web(controller)] data-web-1[StatefulSet/web(controller)]"))

		s.kubectl(t, "delete", "statefulset/web")
		eventually(t, time.Minute, "the claims deleted with the set", func(context.Context) (bool, string) {
			got := s.claimNames(t)
			return got == "", got
		})
		return strings.Join(append(steps, "set deleted: no claims"), "\n")
	}},
}

// claimList reads the namespace's claims.
func (s *scene) claimList(t *testing.T) []corev1.PersistentVolumeClaim {
	t.Helper()
	list, err := s.c.Client.CoreV1().PersistentVolumeClaims(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// claimNames are the namespace's claims that are not being deleted, sorted.
func (s *scene) claimNames(t *testing.T) string {
	t.Helper()
	var out []string
	for _, c := range s.claimList(t) {
		if c.DeletionTimestamp == nil || slices.Contains(c.Finalizers, "kroll.dev/e2e-keep") {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// Given StatefulSets with a persistentVolumeClaimRetentionPolicy whose claims a user
// edited (an external owner, a foreign controller, a removed controller flag), when the
// set syncs, scales down and is deleted, then the claims' owners and the claims that
// remain are upstream's.
func TestClaimOwners(t *testing.T) {
	t.Parallel()
	runCompared(t, "claims", claimOwnerScenarios)
}
