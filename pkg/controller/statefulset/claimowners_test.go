package statefulset

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// refs builds owner references from "Kind/name@uid" words; a trailing "*" marks a
// controller reference, a trailing "-" one whose controller flag is false. Pods are
// v1, StatefulSets apps/v1 unless the word starts with "apiVersion:" ("apps/v1beta2:StatefulSet/web@x").
func refs(words ...string) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, w := range words {
		r := metav1.OwnerReference{APIVersion: "v1"}
		if i := strings.LastIndex(w, ":"); i >= 0 {
			r.APIVersion, w = w[:i], w[i+1:]
		} else if strings.HasPrefix(w, "StatefulSet/") {
			r.APIVersion = "apps/v1"
		}
		switch {
		case strings.HasSuffix(w, "*"):
			yes := true
			r.Controller, r.BlockOwnerDeletion, w = &yes, &yes, strings.TrimSuffix(w, "*")
		case strings.HasSuffix(w, "-"):
			no := false
			r.Controller, w = &no, strings.TrimSuffix(w, "-")
		}
		kindName, uid, _ := strings.Cut(w, "@")
		r.Kind, r.Name, _ = strings.Cut(kindName, "/")
		r.UID = types.UID(uid)
		out = append(out, r)
	}
	return out
}

// words is refs' inverse, "Kind/name@uid" with "*" for a controller reference (whose
// blockOwnerDeletion must be set too, or "!" is appended).
func words(rs []metav1.OwnerReference) string {
	var out []string
	for _, r := range rs {
		w := r.Kind + "/" + r.Name + "@" + string(r.UID)
		if r.APIVersion != "v1" && r.APIVersion != "apps/v1" {
			w = r.APIVersion + ":" + w
		}
		if r.Controller != nil && *r.Controller {
			w += "*"
			if r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
				w += "!"
			}
		}
		out = append(out, w)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// podAndClaim are set's pod of ordinal (uid, "" for one not created) and its claim,
// owned by have.
func podAndClaim(set *appsv1.StatefulSet, ordinal int, uid types.UID, have []metav1.OwnerReference) (*corev1.Pod, *corev1.PersistentVolumeClaim) {
	pod := newPod(set, set, "r1", ordinal)
	pod.UID = uid
	claim := newClaim(set, &set.Spec.VolumeClaimTemplates[0], ordinal)
	claim.OwnerReferences = have
	return pod, claim
}

func TestPlanClaimOwners(t *testing.T) {
	const keep, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	tests := []struct {
		name                    string
		whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
		ordinal                 int    // of the pod; the set has replicas 3 from start
		start                   int32  // .spec.ordinals.start
		podUID                  string // "" for a pod not created yet
		have                    []metav1.OwnerReference
		want                    string // "-" for no write
		conflict                bool
	}{
		// Every policy, a fresh claim (no owners), in range and scaled away.
		{name: "Retain/Retain, in range: nobody owns it", whenDeleted: keep, whenScaled: keep, ordinal: 1, want: "-"},
		{name: "Retain/Retain, scaled away: nobody owns it", whenDeleted: keep, whenScaled: keep, ordinal: 3, want: "-"},
		{name: "whenDeleted Delete, in range: the set", whenDeleted: del, whenScaled: keep, ordinal: 1, want: "[StatefulSet/web@set-uid*]"},
		{name: "whenDeleted Delete, scaled away: still the set (whenScaled Retain)", whenDeleted: del, whenScaled: keep, ordinal: 3, want: "[StatefulSet/web@set-uid*]"},
		{name: "whenScaled Delete, in range: nobody", whenDeleted: keep, whenScaled: del, ordinal: 1, want: "-"},
		{name: "whenScaled Delete, scaled away: the pod", whenDeleted: keep, whenScaled: del, ordinal: 3, want: "[Pod/web-3@pod-uid*]"},
		{name: "Delete/Delete, in range: the set", whenDeleted: del, whenScaled: del, ordinal: 1, want: "[StatefulSet/web@set-uid*]"},
		{name: "Delete/Delete, scaled away: the pod, not the set", whenDeleted: del, whenScaled: del, ordinal: 3, want: "[Pod/web-3@pod-uid*]"},
		{name: "Delete/Delete, ordinal 0 below start 2: scaled away", whenDeleted: del, whenScaled: del, ordinal: 0, start: 2, want: "[Pod/web-0@pod-uid*]"},
		{name: "Delete/Delete, ordinal 4 within start 2 + 3: the set", whenDeleted: del, whenScaled: del, ordinal: 4, start: 2, want: "[StatefulSet/web@set-uid*]"},

		// Claims that already agree are not written.
		{name: "Delete/Delete, in range, owned by the set: as it should be", whenDeleted: del, whenScaled: del, ordinal: 1,
			have: refs("StatefulSet/web@set-uid*"), want: "-"},
		{name: "Delete/Delete, scaled away, owned by the pod: as it should be", whenDeleted: del, whenScaled: del, ordinal: 3,
			have: refs("Pod/web-3@pod-uid*"), want: "-"},
		{name: "whenDeleted Delete, set and an external owner in either order: as it should be", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@set-uid*", "ConfigMap/c@cm"), want: "-"},

		// The policy or the range changed.
		{name: "Delete/Delete, scaled down: ownership moves from the set to the pod", whenDeleted: del, whenScaled: del, ordinal: 3,
			have: refs("StatefulSet/web@set-uid*"), want: "[Pod/web-3@pod-uid*]"},
		{name: "policy now Retain/Retain: the set lets go", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@set-uid*"), want: "[]"},
		{name: "whenScaled Delete, scaled back up before the claim went: the pod lets go", whenDeleted: keep, whenScaled: del, ordinal: 1,
			have: refs("Pod/web-1@pod-uid*"), want: "[]"},

		// External owners stay, in their order, ours after them.
		{name: "whenDeleted Delete, an external owner: kept, the set added after it", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("ConfigMap/c@cm"), want: "[ConfigMap/c@cm StatefulSet/web@set-uid*]"},
		{name: "Delete/Delete, scaled away, external owner between: kept, the set swapped for the pod", whenDeleted: del, whenScaled: del, ordinal: 3,
			have: refs("StatefulSet/web@set-uid*", "ConfigMap/c@cm"), want: "[ConfigMap/c@cm Pod/web-3@pod-uid*]"},
		{name: "a StatefulSet web of another API version is someone else's", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("apps/v1beta2:StatefulSet/web@set-uid"), want: "[apps/v1beta2:StatefulSet/web@set-uid StatefulSet/web@set-uid*]"},

		// Another controller.
		{name: "whenDeleted Delete, another controller: left to it", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("Database/db@db*"), want: "-", conflict: true},
		{name: "whenDeleted Delete, another controller beside the set: the set lets go", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("Database/db@db*", "StatefulSet/web@set-uid*"), want: "[Database/db@db*]", conflict: true},
		{name: "whenScaled Delete, scaled away, another controller beside the pod: the pod lets go", whenDeleted: keep, whenScaled: del, ordinal: 3,
			have: refs("Pod/web-3@pod-uid*", "Database/db@db*"), want: "[Database/db@db*]", conflict: true},
		{name: "a controller StatefulSet of another name (upstream's claim 3): another controller", whenDeleted: del, whenScaled: del, ordinal: 1,
			have: refs("StatefulSet/unknown@9d86*"), want: "-", conflict: true},
		{name: "Retain/Retain, another controller beside the set: the set lets go, no conflict", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("Database/db@db*", "StatefulSet/web@set-uid*"), want: "[Database/db@db*]"},
		{name: "Retain/Retain, another controller alone: nothing to do", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("Database/db@db*"), want: "-"},

		// A controller flag a user removed comes back.
		{name: "whenDeleted Delete, the set's flag removed: put back", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@set-uid-"), want: "[StatefulSet/web@set-uid*]"},
		{name: "whenDeleted Delete, the set's flag unset (nil): put back", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@set-uid"), want: "[StatefulSet/web@set-uid*]"},
		{name: "Delete/Delete, flag removed before an external owner: external first, the set after", whenDeleted: del, whenScaled: del, ordinal: 0,
			have: refs("StatefulSet/web@set-uid-", "ConfigMap/c@cm"), want: "[ConfigMap/c@cm StatefulSet/web@set-uid*]"},
		{name: "whenScaled Delete, scaled away, the pod's flag removed: put back", whenDeleted: keep, whenScaled: del, ordinal: 3,
			have: refs("Pod/web-3@pod-uid-"), want: "[Pod/web-3@pod-uid*]"},
		{name: "Retain/Retain, a flagless set reference: taken off", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@set-uid-"), want: "[]"},

		// Stale references: an earlier set or pod of the name; left to the garbage collector.
		{name: "whenDeleted Delete, a stale set reference: untouched", whenDeleted: del, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@old-set*"), want: "-"},
		{name: "Delete/Delete, scaled away, a stale pod reference: untouched", whenDeleted: del, whenScaled: del, ordinal: 3,
			have: refs("Pod/web-3@old-pod*"), want: "-"},
		{name: "Retain/Retain, a stale set reference: untouched, not taken off", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("StatefulSet/web@old-set*"), want: "-"},
		{name: "Delete/Delete, scaled away, a stale set reference: untouched, not swapped for the pod", whenDeleted: del, whenScaled: del, ordinal: 3,
			have: refs("StatefulSet/web@old-set-"), want: "-"},
		{name: "Retain/Retain, a stale set reference beside another controller: untouched", whenDeleted: keep, whenScaled: keep, ordinal: 1,
			have: refs("Database/db@db*", "StatefulSet/web@old-set*"), want: "-"},
		{name: "whenDeleted Delete, a pod not created yet and a pod reference: stale, untouched", whenDeleted: del, whenScaled: keep, ordinal: 1, podUID: "-",
			have: refs("Pod/web-1@old-pod*"), want: "-"},

		// A pod not created yet (the claim made before its pod).
		{name: "Delete/Delete, in range, pod not created: the set", whenDeleted: del, whenScaled: del, ordinal: 1, podUID: "-", want: "[StatefulSet/web@set-uid*]"},
		{name: "whenScaled Delete, scaled away, pod not created: no reference to a UID-less pod", whenDeleted: keep, whenScaled: del, ordinal: 3, podUID: "-", want: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(3, tt.whenDeleted, tt.whenScaled)
			if tt.start != 0 {
				set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: tt.start}
			}
			uid := types.UID("pod-uid")
			if tt.podUID == "-" {
				uid = ""
			}
			pod, claim := podAndClaim(set, tt.ordinal, uid, tt.have)
			before := words(claim.OwnerReferences)

			plan := planClaimOwners(set, pod, claim, retentionOf(set))
			got := "-"
			if plan.Write {
				got = words(plan.Owners)
			}
			if got != tt.want || plan.Conflict != tt.conflict {
				t.Errorf("owners %s conflict %v, want %s conflict %v", got, plan.Conflict, tt.want, tt.conflict)
			}
			if after := words(claim.OwnerReferences); after != before {
				t.Errorf("the claim (a cached object) changed: %s, was %s", after, before)
			}
		})
	}
}

func TestRetentionOfUnset(t *testing.T) {
	set := newSet(3, "", "")
	set.Spec.PersistentVolumeClaimRetentionPolicy = nil
	claim := newClaim(set, &set.Spec.VolumeClaimTemplates[0], 1)
	claim.OwnerReferences = refs("StatefulSet/web@set-uid*")
	if p := retentionOf(set); p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("unset policy reads %+v, want Retain/Retain", p)
	}
	pod := newPod(set, set, "r1", 1)
	pod.UID = "pod-uid"
	if plan := planClaimOwners(set, pod, claim, retentionOf(set)); !plan.Write || len(plan.Owners) != 0 {
		t.Errorf("no policy, a set reference: plan %+v, want the reference taken off", plan)
	}
}

func TestClaimIsStale(t *testing.T) {
	const keep, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	tests := []struct {
		name       string
		whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
		podUID     types.UID
		have       []metav1.OwnerReference
		want       bool
	}{
		{"whenScaled Delete, the claim of the earlier web-1: wait for it", del, "", refs("Pod/web-1@old-pod*"), true},
		{"whenScaled Delete, the claim of this very web-1: not stale", del, "pod-uid", refs("Pod/web-1@pod-uid*"), false},
		{"whenScaled Delete, owned by the set only: not stale", del, "", refs("StatefulSet/web@set-uid*"), false},
		{"whenScaled Delete, a Pod web-1 of another API version: not ours", del, "", refs("v2:Pod/web-1@old-pod*"), false},
		{"whenScaled Retain, an earlier pod's reference: reused, not stale", keep, "", refs("Pod/web-1@old-pod*"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(3, del, tt.whenScaled)
			pod, claim := podAndClaim(set, 1, tt.podUID, tt.have)
			if got := claimIsStale(pod, claim, retentionOf(set)); got != tt.want {
				t.Errorf("stale %v, want %v", got, tt.want)
			}
		})
	}
}

// fakeClaims records claim writes: "create <name> <owners>" and "owners <name> <owners>".
type fakeClaims struct{ writes []string }

var _ claimWriter = &fakeClaims{}

func (f *fakeClaims) CreateClaim(_ context.Context, c *corev1.PersistentVolumeClaim) error {
	f.writes = append(f.writes, "create "+c.Name+" "+words(c.OwnerReferences))
	return nil
}

func (f *fakeClaims) SetClaimOwners(_ context.Context, c *corev1.PersistentVolumeClaim, owners []metav1.OwnerReference) error {
	f.writes = append(f.writes, "owners "+c.Name+" "+words(owners))
	return nil
}

// The keeper writes only what the plan says, once per claim that needs it, warns of
// another controller, and creates missing claims already owned.
func TestClaimKeeperWrites(t *testing.T) {
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	set := newSet(2, del, del)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	store := factory.Core().V1().PersistentVolumeClaims().Informer().GetStore()
	seed := map[int][]metav1.OwnerReference{
		0: refs("StatefulSet/web@set-uid-"),                    // flag removed
		2: refs("StatefulSet/web@set-uid*", "Database/db@db*"), // scaled away, another controller
		3: refs("ConfigMap/c@cm", "StatefulSet/web@set-uid*"),  // scaled away
		4: refs("Pod/web-4@pod-4*"),                            // scaled away, as it should be
	}
	for ordinal, owners := range seed {
		c := newClaim(set, &set.Spec.VolumeClaimTemplates[0], ordinal)
		c.OwnerReferences = owners
		if err := store.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	writer, recorder := &fakeClaims{}, record.NewFakeRecorder(10)
	k := &claimKeeper{writer: writer, claims: factory.Core().V1().PersistentVolumeClaims().Lister(), recorder: recorder}
	for _, ordinal := range []int{0, 2, 3, 4} {
		pod := newPod(set, set, "r1", ordinal)
		pod.UID = types.UID(fmt.Sprintf("pod-%d", ordinal))
		if err := k.fixRetention(context.Background(), set, pod); err != nil {
			t.Fatal(err)
		}
	}
	// A missing claim: web-1's, made owned by the set before web-1 exists.
	if err := k.create(context.Background(), set, newPod(set, set, "r1", 1), 1); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"owners www-web-0 [StatefulSet/web@set-uid*]",
		"owners www-web-2 [Database/db@db*]",
		"owners www-web-3 [ConfigMap/c@cm Pod/web-3@pod-3*]",
		"create www-web-1 [StatefulSet/web@set-uid*]",
	}
	if got := strings.Join(writer.writes, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("writes\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	var conflicts []string
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, "ConflictingController") {
			conflicts = append(conflicts, e)
		}
	}
	if len(conflicts) != 1 || !strings.HasPrefix(conflicts[0], "Warning ConflictingController PersistentVolumeClaim www-web-2 has a conflicting OwnerReference") {
		t.Errorf("ConflictingController events %q, want one for www-web-2", conflicts)
	}
}
