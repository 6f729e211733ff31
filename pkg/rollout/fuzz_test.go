package rollout

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fuzzIntOrString is v, or "v%" when pct, and what it resolves to out of desired, worked
// out exactly in int64 (the rounding the API documents: up for surge, down otherwise).
func fuzzIntOrString(v int32, pct bool, desired int32, roundUp bool) (*intstr.IntOrString, int64) {
	if !pct {
		x := intstr.FromInt32(v)
		return &x, int64(v)
	}
	x := intstr.FromString(strconv.Itoa(int(v)) + "%")
	p := int64(v) * int64(desired)
	q := p / 100 // truncates toward 0
	if r := p % 100; r > 0 && roundUp {
		q++
	} else if r < 0 && !roundUp {
		q--
	}
	return &x, q
}

func FuzzResolveFenceposts(f *testing.F) {
	f.Add(int32(25), true, int32(25), true, int32(10))   // the defaults: 3 and 2
	f.Add(int32(25), true, int32(25), true, int32(1))    // 1 and 0
	f.Add(int32(10), true, int32(10), true, int32(5))    // 0.5 rounds up to 1, down to 0
	f.Add(int32(0), false, int32(0), false, int32(5))    // both 0: unavailable 1
	f.Add(int32(25), true, int32(25), true, int32(0))    // both 0% of nothing: unavailable 1
	f.Add(int32(3), false, int32(30), true, int32(10))   // the spec's example
	f.Add(int32(100), true, int32(0), false, int32(4))   // 100% of 4 is 4
	f.Add(int32(-1), false, int32(1), false, int32(10))  // negative: rejected
	f.Add(int32(-1), true, int32(25), true, int32(50))   // -1% of 50 rounds up to 0: nothing negative
	f.Add(int32(10), true, int32(-1), true, int32(9999)) // -1% of 9999 rounds down to -100: rejected
	f.Fuzz(func(t *testing.T, surge int32, surgePct bool, unavail int32, unavailPct bool, desired int32) {
		desired = int32(uint32(desired) % 10001)
		s, wantSurge := fuzzIntOrString(surge, surgePct, desired, true)
		u, wantUnavail := fuzzIntOrString(unavail, unavailPct, desired, false)
		// A bound above what desired+bound can hold in an int32 is capped (it allows
		// every pod at once either way); before the cap a huge surge wrapped negative.
		limit := math.MaxInt32 - int64(desired)
		wantSurge, wantUnavail = min(wantSurge, limit), min(wantUnavail, limit)
		got, err := ResolveFenceposts(s, u, desired)
		if err != nil {
			// Only a negative bound is invalid; a negative percent that rounds to 0 is
			// not one.
			if wantSurge >= 0 && wantUnavail >= 0 {
				t.Fatalf("%s/%s of %d: %v", s, u, desired, err)
			}
			return
		}
		if wantSurge < 0 || wantUnavail < 0 {
			t.Fatalf("%s/%s of %d: accepted as %+v, want an error (resolves to %d/%d)", s, u, desired, got, wantSurge, wantUnavail)
		}
		if wantSurge == 0 && wantUnavail == 0 {
			wantUnavail = 1 // or the update could never make progress
		}
		// Exact values, so also the documented bounds: none negative, not both 0.
		if int64(got.MaxSurge) != wantSurge || int64(got.MaxUnavailable) != wantUnavail {
			t.Fatalf("%s/%s of %d: got %+v, want surge %d (rounded up) and unavailable %d (rounded down)", s, u, desired, got, wantSurge, wantUnavail)
		}
	})
}

// A fuzzed rollout is a RollingUpdate Deployment and its ReplicaSets decoded from
// fuzzRSRecord-byte records, the new RS's first and then up to 3 old ones:
// spec.replicas, status.replicas, status.availableReplicas (≤ status.replicas) and a
// max-replicas annotation as little-endian uint16s (mod 2600), then fuzzRS* flags.
const fuzzRSRecord = 9

const (
	// fuzzRSVariant: an old RS has not observed its latest spec (generation 2, observed
	// 1); for the new RS, each target says.
	fuzzRSVariant = 1 << iota
	// fuzzRSSeen: the cache holds one more pod than spec or status say for an old RS
	// (else half its status.replicas: the cache lags); on the new RS: the caller passes
	// seenPods at all.
	fuzzRSSeen
	// fuzzRSBadAnnotation: the max-replicas annotation does not parse.
	fuzzRSBadAnnotation
	// fuzzRSAnnotated: the RS carries desired/max-replicas annotations.
	fuzzRSAnnotated
	// fuzzRSDesiredNow: the desired-replicas annotation is the Deployment's replicas
	// (else replicas+1).
	fuzzRSDesiredNow
	// The top 3 bits are the creation minute after epoch (fuzzRSAge).
)

func fuzzRSAge(minute byte) byte { return minute << 5 }

// fuzzRS is one decoded ReplicaSet, with what the properties need to know about it.
type fuzzRS struct {
	rs *appsv1.ReplicaSet
	// seen is what seenPods reports for it.
	seen int32
	// sizedFor is the max-replicas ProportionalScale must scale it from: its annotation,
	// or the Deployment's status.replicas when there is none that parses.
	sizedFor int32
	flags    byte
}

type fuzzRollout struct {
	d     *appsv1.Deployment
	newRS fuzzRS
	old   []fuzzRS
}

// fuzzRecord encodes one ReplicaSet as decodeRollout reads it.
func fuzzRecord(spec, status, available, maxReplicas uint16, flags byte) []byte {
	b := binary.LittleEndian.AppendUint16(nil, spec)
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, available)
	b = binary.LittleEndian.AppendUint16(b, maxReplicas)
	return append(b, flags)
}

func fuzzRecords(records ...[]byte) []byte { return slices.Concat(records...) }

func decodeRollout(replicas uint16, surge int16, surgePct bool, unavail int16, unavailPct bool, rss []byte) fuzzRollout {
	desired := int32(replicas % 2001)
	bound := func(v int16, pct bool) *intstr.IntOrString {
		// Percents up to 300% (maxSurge may exceed 100%), numbers up to 2100; negative
		// ones are invalid and make DeploymentFenceposts fall back.
		if pct {
			x := intstr.FromString(strconv.Itoa(int(v%301)) + "%")
			return &x
		}
		x := intstr.FromInt32(int32(v % 2100))
		return &x
	}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: &desired,
		Strategy: appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: bound(surge, surgePct), MaxUnavailable: bound(unavail, unavailPct)},
		},
	}}
	r := fuzzRollout{d: d}
	var first [fuzzRSRecord]byte
	rest := rss[copy(first[:], rss):]
	r.newRS = decodeRS("new", first[:], desired)
	for i := 0; i < 3 && len(rest) >= fuzzRSRecord; i++ {
		r.old = append(r.old, decodeRS("old"+strconv.Itoa(i), rest[:fuzzRSRecord], desired))
		rest = rest[fuzzRSRecord:]
	}
	// status.replicas is the Deployment's pods, unannotated RSes are sized against it.
	d.Status.Replicas = r.newRS.rs.Status.Replicas
	for _, o := range r.old {
		d.Status.Replicas += o.rs.Status.Replicas
	}
	for _, rs := range append([]*fuzzRS{&r.newRS}, ptrs(r.old)...) {
		if rs.sizedFor < 0 {
			rs.sizedFor = d.Status.Replicas
		}
	}
	return r
}

func ptrs(rss []fuzzRS) []*fuzzRS {
	out := make([]*fuzzRS, len(rss))
	for i := range rss {
		out[i] = &rss[i]
	}
	return out
}

func decodeRS(name string, b []byte, desired int32) fuzzRS {
	u := func(i int) int32 { return int32(binary.LittleEndian.Uint16(b[i:]) % 2600) }
	spec, status, maxReplicas, flags := u(0), u(2), u(6), b[8]
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID(name), Generation: 1,
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(flags>>5) * time.Minute)),
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &spec},
		Status: appsv1.ReplicaSetStatus{Replicas: status, AvailableReplicas: u(4) % (status + 1), ObservedGeneration: 1},
	}
	if flags&fuzzRSVariant != 0 {
		rs.Generation = 2
	}
	out := fuzzRS{rs: rs, seen: status / 2, sizedFor: -1, flags: flags}
	if flags&fuzzRSSeen != 0 {
		out.seen = max(spec, status) + 1
	}
	if flags&fuzzRSAnnotated != 0 {
		want := desired + 1
		if flags&fuzzRSDesiredNow != 0 {
			want = desired
		}
		maxAnn := strconv.Itoa(int(maxReplicas))
		if flags&fuzzRSBadAnnotation != 0 {
			maxAnn = "n/a"
		} else {
			out.sizedFor = maxReplicas
		}
		rs.Annotations = map[string]string{DesiredReplicasAnnotation: strconv.Itoa(int(want)), MaxReplicasAnnotation: maxAnn}
	}
	return out
}

func (r fuzzRollout) String() string {
	var b strings.Builder
	ru := r.d.Spec.Strategy.RollingUpdate
	fmt.Fprintf(&b, "replicas %d (surge %s, unavailable %s → %+v)", *r.d.Spec.Replicas, ru.MaxSurge, ru.MaxUnavailable, DeploymentFenceposts(r.d))
	for _, o := range append([]fuzzRS{r.newRS}, r.old...) {
		rs := o.rs
		fmt.Fprintf(&b, "; %s spec %d status %d available %d seen %d sized for %d created +%s gen %d/%d %v",
			rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, rs.Status.AvailableReplicas, o.seen, o.sizedFor,
			rs.CreationTimestamp.Sub(epoch), rs.Status.ObservedGeneration, rs.Generation, rs.Annotations)
	}
	return b.String()
}

// fuzzOlder is ByCreation's documented order: creation time, then name.
func fuzzOlder(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// checkFenceposts asserts the bounds every rollout step relies on: nothing negative, no
// more unavailable than there are replicas, and room to move when there are replicas.
func checkFenceposts(t *testing.T, r fuzzRollout) Fenceposts {
	fp := DeploymentFenceposts(r.d)
	desired := DesiredReplicas(r.d)
	if fp.MaxSurge < 0 || fp.MaxUnavailable < 0 || fp.MaxUnavailable > desired || desired > 0 && fp.MaxSurge == 0 && fp.MaxUnavailable == 0 {
		t.Fatalf("fenceposts %+v out of bounds: %s", fp, r)
	}
	return fp
}

// addRolloutSeeds adds the worked examples of replicas_test.go, as fuzz input, to each
// of the rollout targets (they all take the same input).
func addRolloutSeeds(f *testing.F) {
	ann := byte(fuzzRSAnnotated)
	seeds := []struct {
		replicas   uint16
		surge      int16
		surgePct   bool
		unavail    int16
		unavailPct bool
		newRS      []byte
		old        [][]byte
	}{
		// Worked example, step 1 and step 3 (10 replicas, surge 3, unavailable 2).
		{replicas: 10, surge: 3, unavail: 2, newRS: fuzzRecord(0, 0, 0, 13, ann|fuzzRSDesiredNow|fuzzRSAge(2)), old: [][]byte{fuzzRecord(10, 10, 10, 13, ann|fuzzRSDesiredNow|fuzzRSAge(1))}},
		{replicas: 10, surge: 3, unavail: 2, newRS: fuzzRecord(3, 3, 0, 13, ann|fuzzRSDesiredNow|fuzzRSAge(2)), old: [][]byte{fuzzRecord(8, 8, 8, 13, ann|fuzzRSDesiredNow|fuzzRSAge(1))}},
		// An old RS scaled down whose pods still run and report available.
		{replicas: 10, surge: 3, unavail: 2, newRS: fuzzRecord(3, 3, 0, 0, fuzzRSAge(2)), old: [][]byte{fuzzRecord(8, 10, 10, 0, fuzzRSAge(1))}},
		// maxSurge 0, maxUnavailable 1.
		{replicas: 3, surge: 0, unavail: 1, newRS: fuzzRecord(0, 0, 0, 0, fuzzRSAge(2)), old: [][]byte{fuzzRecord(3, 3, 3, 0, fuzzRSAge(1))}},
		// The defaults (25%/25%), a stuck RS, an old RS yet to observe its spec, pods seen.
		{replicas: 10, surge: 25, surgePct: true, unavail: 25, unavailPct: true, newRS: fuzzRecord(2, 2, 0, 0, fuzzRSSeen|fuzzRSAge(3)),
			old: [][]byte{fuzzRecord(4, 4, 1, 0, fuzzRSAge(1)), fuzzRecord(6, 6, 6, 0, fuzzRSSeen|fuzzRSAge(2)), fuzzRecord(1, 1, 0, 0, fuzzRSVariant|fuzzRSAge(2))}},
		// The spec's proportional example: 8 old + 5 new (max 13), scaled to 15, and back to 10.
		{replicas: 15, surge: 3, unavail: 2, newRS: fuzzRecord(5, 5, 0, 13, ann|fuzzRSAge(2)), old: [][]byte{fuzzRecord(8, 8, 8, 13, ann|fuzzRSAge(1))}},
		{replicas: 10, surge: 3, unavail: 2, newRS: fuzzRecord(7, 7, 0, 18, ann|fuzzRSAge(2)), old: [][]byte{fuzzRecord(11, 11, 11, 18, ann|fuzzRSAge(1))}},
		// A saturated new RS; an old one left over.
		{replicas: 3, surge: 1, unavail: 0, newRS: fuzzRecord(3, 3, 3, 4, ann|fuzzRSDesiredNow|fuzzRSAge(2)), old: [][]byte{fuzzRecord(1, 1, 1, 4, ann|fuzzRSAge(1)), fuzzRecord(0, 0, 0, 0, 0)}},
		// Rounding leftovers over three RSes of 1 (max 3), and an empty one.
		{replicas: 4, surge: 0, unavail: 1, newRS: fuzzRecord(1, 1, 0, 3, ann|fuzzRSAge(3)),
			old: [][]byte{fuzzRecord(1, 1, 1, 3, ann|fuzzRSAge(2)), fuzzRecord(1, 1, 1, 3, ann|fuzzRSAge(1)), fuzzRecord(0, 0, 0, 0, 0)}},
		// Four RSes of 1 (max 4) scaled to 1+1: each rounds 0.5 up to 1, the largest cannot
		// give back the leftover below 0, and 3 remain instead of 2.
		{replicas: 1, surge: 1, unavail: 0, newRS: fuzzRecord(1, 1, 1, 4, ann|fuzzRSAge(4)),
			old: [][]byte{fuzzRecord(1, 1, 1, 4, ann|fuzzRSAge(3)), fuzzRecord(1, 1, 1, 4, ann|fuzzRSAge(2)), fuzzRecord(1, 1, 1, 4, ann|fuzzRSAge(1))}},
		// Scaled to 0; and no new RS yet (fuzzRSVariant on the new RS).
		{replicas: 0, surge: 3, unavail: 2, newRS: fuzzRecord(5, 5, 0, 13, ann|fuzzRSAge(2)), old: [][]byte{fuzzRecord(8, 8, 8, 13, ann|fuzzRSAge(1))}},
		{replicas: 6, surge: 0, unavail: 3, newRS: fuzzRecord(0, 0, 0, 0, fuzzRSVariant), old: [][]byte{fuzzRecord(3, 3, 3, 0, fuzzRSAge(2)), fuzzRecord(3, 3, 3, 0, fuzzRSAge(1))}},
	}
	for _, s := range seeds {
		f.Add(s.replicas, s.surge, s.surgePct, s.unavail, s.unavailPct, fuzzRecords(append([][]byte{s.newRS}, s.old...)...))
	}
}

func FuzzNewReplicaSetReplicas(f *testing.F) {
	addRolloutSeeds(f)
	f.Fuzz(func(t *testing.T, replicas uint16, surge int16, surgePct bool, unavail int16, unavailPct bool, rss []byte) {
		r := decodeRollout(replicas, surge, surgePct, unavail, unavailPct, rss)
		fp := checkFenceposts(t, r)
		desired := DesiredReplicas(r.d)
		newRS := r.newRS.rs
		current := *newRS.Spec.Replicas
		all := []*appsv1.ReplicaSet{newRS}
		if r.newRS.flags&fuzzRSVariant != 0 {
			c := *newRS // the caller's list may hold another copy of it: same UID
			all[0] = &c
		}
		var seenPods func(*appsv1.ReplicaSet) int32
		if r.newRS.flags&fuzzRSSeen != 0 {
			seenPods = func(rs *appsv1.ReplicaSet) int32 {
				for _, o := range r.old {
					if o.rs.Name == rs.Name {
						return o.seen
					}
				}
				t.Fatalf("seenPods asked about %s, not an old ReplicaSet", rs.Name)
				return 0
			}
		}
		// What is there or coming, as the doc counts it: the new RS's spec, each old RS's
		// max of spec, status and pods seen. It is at least Σ spec.replicas.
		total, stale := current, false
		for _, o := range r.old {
			all = append(all, o.rs)
			n := max(*o.rs.Spec.Replicas, o.rs.Status.Replicas)
			if seenPods != nil {
				n = max(n, o.seen)
			}
			total += n
			stale = stale || o.rs.Status.ObservedGeneration < o.rs.Generation
		}
		maxTotal := desired + fp.MaxSurge
		got := NewReplicaSetReplicas(r.d, all, newRS, seenPods)
		after := total - current + got
		switch {
		case got < current:
			t.Fatalf("new RS %d → %d: it only ever grows here: %s", current, got, r)
		case stale && got != current:
			t.Fatalf("new RS %d → %d while an old RS has not observed its size: %s", current, got, r)
		case got > max(current, desired):
			t.Fatalf("new RS %d → %d, above replicas: %s", current, got, r)
		case got > current && after > maxTotal:
			t.Fatalf("new RS %d → %d makes %d pods, above replicas+maxSurge %d: %s", current, got, after, maxTotal, r)
		case !stale && got < desired && after < maxTotal:
			t.Fatalf("new RS %d → %d leaves room: %d pods of replicas+maxSurge %d: %s", current, got, after, maxTotal, r)
		}
	})
}

func FuzzOldReplicaSetScaleDown(f *testing.F) {
	addRolloutSeeds(f)
	f.Fuzz(func(t *testing.T, replicas uint16, surge int16, surgePct bool, unavail int16, unavailPct bool, rss []byte) {
		r := decodeRollout(replicas, surge, surgePct, unavail, unavailPct, rss)
		fp := checkFenceposts(t, r)
		minAvailable := DesiredReplicas(r.d) - fp.MaxUnavailable
		var newRS *appsv1.ReplicaSet
		var newSpec, newUnavailable, newAvailable int32
		if r.newRS.flags&fuzzRSVariant == 0 { // else: no new RS yet
			newRS = r.newRS.rs
			newSpec = *newRS.Spec.Replicas
			newUnavailable = newSpec - newRS.Status.AvailableReplicas
			newAvailable = min(newSpec, newRS.Status.AvailableReplicas)
		}
		old := make([]*appsv1.ReplicaSet, len(r.old))
		var oldSpec, oldUnavailable, availableBefore int32
		for i, o := range r.old {
			old[i] = o.rs
			spec := *o.rs.Spec.Replicas
			oldSpec += spec
			oldUnavailable += max(0, spec-o.rs.Status.AvailableReplicas)
			availableBefore += min(spec, o.rs.Status.AvailableReplicas)
		}
		availableBefore += newAvailable
		// The doc's budget: Σ spec − (replicas − maxUnavailable) − unavailable new pods.
		budget := oldSpec + newSpec - minAvailable - newUnavailable
		excess := availableBefore - minAvailable

		plan := OldReplicaSetScaleDown(r.d, old, newRS)
		to := make([]int32, len(old))
		planned := make([]bool, len(old))
		var removed int32
		for i, rs := range old {
			to[i] = *rs.Spec.Replicas
		}
		for _, s := range plan {
			i := slices.IndexFunc(old, func(rs *appsv1.ReplicaSet) bool { return rs.Name == s.ReplicaSet })
			if i < 0 || planned[i] {
				t.Fatalf("plan %+v: %q is not an old ReplicaSet, or twice: %s", plan, s.ReplicaSet, r)
			}
			planned[i] = true
			if s.From != to[i] || s.To < 0 || s.To >= s.From {
				t.Fatalf("plan %+v: %+v is not a scale-down of %s from its spec to ≥ 0: %s", plan, s, s.ReplicaSet, r)
			}
			to[i] = s.To
			removed += s.From - s.To
		}
		if (oldSpec == 0 || budget <= 0) && len(plan) > 0 {
			t.Fatalf("plan %+v with no old pods or no budget (%d): %s", plan, budget, r)
		}
		if removed > max(0, budget) {
			t.Fatalf("plan %+v removes %d, more than the budget %d: %s", plan, removed, budget, r)
		}
		if removed > oldUnavailable+max(0, excess) {
			t.Fatalf("plan %+v removes %d, more than the %d unavailable old pods and %d available beyond %d: %s",
				plan, removed, oldUnavailable, max(0, excess), minAvailable, r)
		}
		if len(plan) == 0 && budget > 0 && oldSpec > 0 && (oldUnavailable > 0 || excess > 0) {
			t.Fatalf("no plan with a budget of %d, %d unavailable old pods and %d available beyond %d: %s", budget, oldUnavailable, excess, minAvailable, r)
		}
		// An RS scaled down keeps its available pods as long as it has room for them
		// (its own controller removes unavailable pods first).
		availableAfter := newAvailable
		for i, rs := range old {
			availableAfter += min(to[i], rs.Status.AvailableReplicas)
		}
		if availableAfter < min(availableBefore, minAvailable) {
			t.Fatalf("plan %+v leaves %d available of %d, fewer than %d: %s", plan, availableAfter, availableBefore, minAvailable, r)
		}
		// Oldest first: a newer RS loses pods only once older ones have no unavailable pod
		// left, and loses available pods only once older ones are at 0.
		for j, b := range old {
			for i, a := range old {
				if !fuzzOlder(a, b) || to[j] == *b.Spec.Replicas {
					continue
				}
				if to[i] > a.Status.AvailableReplicas {
					t.Fatalf("plan %+v scales %s down while the older %s keeps unavailable pods: %s", plan, b.Name, a.Name, r)
				}
				if to[j] < min(*b.Spec.Replicas, b.Status.AvailableReplicas) && to[i] > 0 {
					t.Fatalf("plan %+v removes available pods of %s while the older %s keeps pods: %s", plan, b.Name, a.Name, r)
				}
			}
		}
	})
}

func FuzzProportionalScale(f *testing.F) {
	addRolloutSeeds(f)
	f.Fuzz(func(t *testing.T, replicas uint16, surge int16, surgePct bool, unavail int16, unavailPct bool, rss []byte) {
		r := decodeRollout(replicas, surge, surgePct, unavail, unavailPct, rss)
		fp := checkFenceposts(t, r)
		desired := DesiredReplicas(r.d)
		var newRS *appsv1.ReplicaSet
		all := ptrs(r.old)
		if r.newRS.flags&fuzzRSVariant == 0 { // else: no new RS
			newRS = r.newRS.rs
			all = append(all, &r.newRS)
		}
		old := make([]*appsv1.ReplicaSet, len(r.old))
		for i, o := range r.old {
			old[i] = o.rs
		}
		var active []*fuzzRS
		activeOld := 0
		for _, rs := range all {
			if *rs.rs.Spec.Replicas > 0 {
				active = append(active, rs)
				if rs.rs != newRS {
					activeOld++
				}
			}
		}
		saturated := newRS != nil && newRS.Annotations[DesiredReplicasAnnotation] == strconv.Itoa(int(desired)) &&
			*newRS.Spec.Replicas == desired && newRS.Status.AvailableReplicas == desired
		if IsSaturated(r.d, newRS) != saturated {
			t.Fatalf("IsSaturated = %v, want %v: %s", !saturated, saturated, r)
		}

		plan, ok := ProportionalScale(r.d, newRS, old)
		if ok != (len(plan) > 0) {
			t.Fatalf("ok %v with plan %+v: %s", ok, plan, r)
		}
		to := map[string]int32{}
		var sum int32
		for _, s := range plan {
			i := slices.IndexFunc(all, func(rs *fuzzRS) bool { return rs.rs.Name == s.ReplicaSet })
			if _, twice := to[s.ReplicaSet]; i < 0 || twice {
				t.Fatalf("plan %+v: %q is not one of the ReplicaSets, or twice: %s", plan, s.ReplicaSet, r)
			}
			if s.From != *all[i].rs.Spec.Replicas || s.To < 0 {
				t.Fatalf("plan %+v: %+v does not start at its spec or goes below 0: %s", plan, s, r)
			}
			to[s.ReplicaSet] = s.To
			sum += s.To
		}

		switch {
		case len(all) == 0:
			if ok {
				t.Fatalf("plan %+v without ReplicaSets", plan)
			}
		case len(active) <= 1:
			// The one RS with pods takes it all; with none, the new RS, else the newest.
			var target *appsv1.ReplicaSet
			switch {
			case len(active) == 1:
				target = active[0].rs
			case newRS != nil:
				target = newRS
			default:
				for _, rs := range old {
					if target == nil || fuzzOlder(target, rs) {
						target = rs
					}
				}
			}
			if from := *target.Spec.Replicas; from == desired {
				if ok {
					t.Fatalf("plan %+v though %s is already at %d: %s", plan, target.Name, desired, r)
				}
			} else if want := []Scale{{ReplicaSet: target.Name, From: from, To: desired}}; !slices.Equal(plan, want) {
				t.Fatalf("plan %+v, want %+v: %s", plan, want, r)
			}
		case saturated:
			// Every old RS with pods goes to 0, and nothing else moves.
			if _, listed := to[newRS.Name]; listed || len(plan) != activeOld || sum != 0 {
				t.Fatalf("plan %+v: a saturated new RS should take every active old one to 0: %s", plan, r)
			}
		default:
			// Every RS with pods is listed, an empty one never.
			var activeSpec int32
			for _, a := range active {
				if _, listed := to[a.rs.Name]; !listed {
					t.Fatalf("plan %+v leaves out %s: %s", plan, a.rs.Name, r)
				}
				activeSpec += *a.rs.Spec.Replicas
			}
			if len(plan) != len(active) {
				t.Fatalf("plan %+v lists an empty ReplicaSet: %s", plan, r)
			}
			allowed := int32(0)
			if desired > 0 {
				allowed = desired + fp.MaxSurge
			}
			toAdd := allowed - activeSpec
			// The largest RS takes the leftover: newest on a tie when adding, oldest when
			// removing.
			var largest *appsv1.ReplicaSet
			for _, a := range active {
				if largest == nil || *a.rs.Spec.Replicas > *largest.Spec.Replicas ||
					*a.rs.Spec.Replicas == *largest.Spec.Replicas && fuzzOlder(a.rs, largest) == (toAdd < 0) {
					largest = a.rs
				}
			}
			if sum != allowed {
				// The only way not to land on replicas+maxSurge: removing, the leftover of
				// rounding is more than the largest RS has left.
				if toAdd >= 0 || sum < allowed || to[largest.Name] != 0 {
					t.Fatalf("plan %+v sums to %d, want replicas+maxSurge %d: %s", plan, sum, allowed, r)
				}
			}
			// Any other RS moves toward round(size·allowed/sizedFor), never past it (it
			// stops short when nothing is left to hand out), and stays put when its
			// sizedFor is 0.
			for _, a := range active {
				size, got, sizedFor := int64(*a.rs.Spec.Replicas), int64(to[a.rs.Name]), int64(a.sizedFor)
				if a.rs == largest || toAdd == 0 || desired == 0 {
					continue
				}
				proportional := size
				if sizedFor > 0 {
					proportional = (2*size*int64(allowed) + sizedFor) / (2 * sizedFor) // rounded half up
				}
				if got < min(size, proportional) || got > max(size, proportional) {
					t.Fatalf("plan %+v: %s goes to %d, not between %d and round(%d·%d/%d) = %d: %s",
						plan, a.rs.Name, got, size, size, allowed, sizedFor, proportional, r)
				}
			}
			// Scaling up, an RS only shrinks if it was sized for more than now allowed;
			// scaling down, it only grows if it was sized for less.
			up, down := toAdd > 0, toAdd < 0
			for _, a := range active {
				if up && a.sizedFor > allowed || down && desired > 0 && a.sizedFor < allowed {
					up, down = false, false
				}
			}
			for _, s := range plan {
				switch {
				case toAdd == 0 && s.To != s.From, up && s.To < s.From, down && s.To > s.From, desired == 0 && s.To != 0:
					t.Fatalf("plan %+v: %+v goes the wrong way adding %d: %s", plan, s, toAdd, r)
				}
			}
		}
	})
}

// A fuzzed pod is fuzzPodRecord bytes: a flags byte (node: bits 0-1, 0 unscheduled;
// phase: bits 2-3, Pending, Unknown, Running, Running; Ready: bits 4-5, none, False,
// True, True; deletion cost: bits 6-7, none, the next byte as an int8, unparseable, the
// next byte mod 4), the cost byte, ready since (n² seconds ago, 0 for an unknown
// instant), restarts (0 for no container status; else two containers, n mod 5 and n/16
// restarts), created n² minutes ago (255: unknown) and the first letter of its UID.
const fuzzPodRecord = 6

type fuzzPod struct{ node, phase, ready, costKind, cost, readyAgo, restarts, age, uid byte }

func (p fuzzPod) bytes() []byte {
	return []byte{p.node | p.phase<<2 | p.ready<<4 | p.costKind<<6, p.cost, p.readyAgo, p.restarts, p.age, p.uid}
}

func fuzzPods(pods ...fuzzPod) []byte {
	var b []byte
	for _, p := range pods {
		b = append(b, p.bytes()...)
	}
	return b
}

// podKey is a pod's place in PodsToDelete's documented order, worked out from what it
// was built from: the lower goes first. Levels 6 and 8 are the plain order of instants
// used without now (unknown first, then the more recent); with now they compare log2
// buckets and then UIDs, which is not a consistent order (a tie of instants falls
// through to restarts, a tie of buckets does not), so only the first 5 levels hold.
type podKey [8]int64

var podKeyLevels = [8]string{"scheduled", "phase", "ready", "deletion cost", "fewer related pods on its node",
	"ready since", "restarts", "age"}

// before tells whether k goes before o on its first levels, and on which level.
func (k podKey) before(o podKey, levels int) (bool, string) {
	for l := range levels {
		if k[l] != o[l] {
			return k[l] < o[l], podKeyLevels[l]
		}
	}
	return false, ""
}

// instantKey orders instants as PodsToDelete does without now.
func instantKey(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return -t.UnixNano()
}

func fuzzNode(b byte) string {
	if b&3 == 0 {
		return ""
	}
	return "node-" + string(rune('a'+b&3-1))
}

// decodePod builds candidate i and its key (but for co-location, added once all related
// pods are known).
func decodePod(i int, b []byte, now time.Time) (*corev1.Pod, podKey) {
	phases := [4]corev1.PodPhase{corev1.PodPending, corev1.PodUnknown, corev1.PodRunning, corev1.PodRunning}
	phase := b[0] >> 2 & 3
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i), UID: types.UID(string(rune('a'+b[5]%16)) + strconv.Itoa(i))},
		Spec:       corev1.PodSpec{NodeName: fuzzNode(b[0])},
		Status:     corev1.PodStatus{Phase: phases[phase]},
	}
	var k podKey
	if p.Spec.NodeName != "" {
		k[0] = 1
	}
	k[1] = int64(min(phase, 2))
	if ready := b[0] >> 4 & 3; ready > 0 {
		c := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
		if ready > 1 {
			c.Status = corev1.ConditionTrue
			k[2] = 1
		}
		if b[2] != 0 {
			c.LastTransitionTime = metav1.NewTime(now.Add(-time.Duration(b[2]) * time.Duration(b[2]) * time.Second))
		}
		if ready > 1 {
			k[5] = instantKey(c.LastTransitionTime.Time)
		}
		p.Status.Conditions = []corev1.PodCondition{c}
	}
	switch b[0] >> 6 {
	case 1:
		p.Annotations = map[string]string{PodDeletionCostAnnotation: strconv.Itoa(int(int8(b[1])))}
		k[3] = int64(int8(b[1]))
	case 2: // counts as 0, as upstream
		bad := "x"
		if b[1]&1 != 0 {
			bad = "3000000000" // beyond int32
		}
		p.Annotations = map[string]string{PodDeletionCostAnnotation: bad}
	case 3:
		p.Annotations = map[string]string{PodDeletionCostAnnotation: strconv.Itoa(int(b[1] % 4))}
		k[3] = int64(b[1] % 4)
	}
	if b[3] != 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: int32(b[3] % 5)}, {RestartCount: int32(b[3] >> 4)}}
		k[6] = -int64(max(b[3]%5, b[3]>>4))
	}
	if b[4] != 255 {
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(b[4]) * time.Duration(b[4]) * time.Minute))
	}
	k[7] = instantKey(p.CreationTimestamp.Time)
	return p, k
}

// decodeRelated builds another pod of the same owner from one byte: its node (bits 0-1)
// and whether it is Running (0, 1), Succeeded (2) or being deleted (3).
func decodeRelated(i int, b byte) (p *corev1.Pod, active bool) {
	p = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "r" + strconv.Itoa(i), UID: types.UID("r" + strconv.Itoa(i))},
		Spec:       corev1.PodSpec{NodeName: fuzzNode(b)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	switch b >> 2 & 3 {
	case 2:
		p.Status.Phase = corev1.PodSucceeded
	case 3:
		p.DeletionTimestamp = &metav1.Time{Time: now}
	default:
		return p, true
	}
	return p, false
}

func FuzzPodsToDelete(f *testing.F) {
	running := fuzzPod{node: 1, phase: 2, ready: 2, readyAgo: 60, age: 8, uid: 1}
	with := func(p fuzzPod, edit func(*fuzzPod)) fuzzPod { edit(&p); return p }
	f.Add(fuzzPods(running, with(running, func(p *fuzzPod) { p.node, p.phase = 0, 0 })), []byte(nil), uint8(1), false)
	f.Add(fuzzPods(running, with(running, func(p *fuzzPod) { p.ready = 1 }), with(running, func(p *fuzzPod) { p.phase = 0 })), []byte(nil), uint8(2), false)
	f.Add(fuzzPods(with(running, func(p *fuzzPod) { p.costKind, p.cost = 1, 10 }), with(running, func(p *fuzzPod) { p.costKind, p.cost = 1, 0xfb })), []byte(nil), uint8(1), false)
	// Doubled up on node-b, where another pod of the owner runs and a finished one does not count.
	f.Add(fuzzPods(running, with(running, func(p *fuzzPod) { p.node = 2 }), with(running, func(p *fuzzPod) { p.node = 3 })), []byte{2, 2 | 2<<2, 3 | 3<<2}, uint8(1), false)
	// Ready since, restarts and age; also without now, where they are plain orders.
	later := fuzzPods(with(running, func(p *fuzzPod) { p.readyAgo = 190 }), with(running, func(p *fuzzPod) { p.readyAgo = 8; p.uid = 3 }),
		with(running, func(p *fuzzPod) { p.readyAgo = 0; p.restarts = 0x71 }), with(running, func(p *fuzzPod) { p.age = 255 }),
		with(running, func(p *fuzzPod) { p.restarts = 3 }), with(running, func(p *fuzzPod) { p.age = 2 }))
	f.Add(later, []byte(nil), uint8(2), false)
	f.Add(later, []byte(nil), uint8(3), true)
	f.Add(fuzzPods(with(running, func(p *fuzzPod) { p.costKind = 2 }), with(running, func(p *fuzzPod) { p.phase = 1 })), []byte(nil), uint8(1), true)
	f.Add([]byte(nil), []byte(nil), uint8(0), false)
	f.Add(fuzzPods(running, running), []byte(nil), uint8(4), false)
	f.Fuzz(func(t *testing.T, podBytes, relatedBytes []byte, n uint8, zeroNow bool) {
		at, levels := now, 5
		if zeroNow {
			at, levels = time.Time{}, 8 // plain instants instead of log2 buckets
		}
		count := min(30, len(podBytes)/fuzzPodRecord)
		candidates := make([]*corev1.Pod, count)
		keys := make([]podKey, count)
		related := make([]*corev1.Pod, count, count+min(30, len(relatedBytes)))
		onNode := map[string]int64{}
		for i := range candidates {
			candidates[i], keys[i] = decodePod(i, podBytes[i*fuzzPodRecord:], now)
			related[i] = candidates[i] // a pod is related to itself
			onNode[candidates[i].Spec.NodeName]++
		}
		for i, b := range relatedBytes[:min(30, len(relatedBytes))] {
			p, active := decodeRelated(i, b)
			related = append(related, p)
			if active {
				onNode[p.Spec.NodeName]++
			}
		}
		for i, p := range candidates {
			keys[i][4] = -onNode[p.Spec.NodeName]
		}
		k := int(n) % (count + 3)

		check := func(candidates []*corev1.Pod, keyOf func(int) podKey, got []*corev1.Pod) {
			if len(got) != min(k, len(candidates)) {
				t.Fatalf("%d of %d candidates picked, want %d", len(got), len(candidates), min(k, len(candidates)))
			}
			chosen := make([]bool, len(candidates))
			for _, p := range got {
				i := slices.Index(candidates, p)
				if i < 0 || chosen[i] {
					t.Fatalf("picked %s, not a candidate or twice: %v", p.Name, podNames(got))
				}
				chosen[i] = true
			}
			for c := range candidates {
				for kept := range candidates {
					if !chosen[c] || chosen[kept] {
						continue
					}
					if first, level := keyOf(kept).before(keyOf(c), levels); first {
						t.Fatalf("picked %s %v but kept %s %v, which goes first by %s: %v",
							candidates[c].Name, keyOf(c), candidates[kept].Name, keyOf(kept), level, podNames(got))
					}
				}
			}
		}

		orig := slices.Clone(candidates)
		got := PodsToDelete(candidates, related, k, at)
		if !slices.Equal(candidates, orig) {
			t.Fatal("PodsToDelete reordered its candidates")
		}
		check(candidates, func(i int) podKey { return keys[i] }, got)
		if again := PodsToDelete(candidates, related, k, at); !slices.Equal(got, again) {
			t.Fatalf("same input, picked %v then %v", podNames(got), podNames(again))
		}
		// The guarantee does not depend on the order candidates come in.
		slices.Reverse(orig)
		check(orig, func(i int) podKey { return keys[len(keys)-1-i] }, PodsToDelete(orig, related, k, at))
	})
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}
