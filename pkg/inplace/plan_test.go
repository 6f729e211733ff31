package inplace

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

var planNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// rsOf is ReplicaSet name of Deployment web at image: replicas in its spec, available
// as its status reports, its controller caught up with its spec (observed) or not.
func rsOf(name, image string, replicas, available int32, observed bool) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 2,
			Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "web-uid", Controller: ptr(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		}},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, AvailableReplicas: available, ObservedGeneration: 1},
	}
	if observed {
		rs.Status.ObservedGeneration = 2
	}
	return rs
}

func ptr[T any](v T) *T { return &v }

// with sets rs's hand-over record (pod names, comma-separated; "" for none).
func with(rs *appsv1.ReplicaSet, leaving, arriving string) *appsv1.ReplicaSet {
	rs.Annotations = map[string]string{}
	if leaving != "" {
		rs.Annotations[LeavingAnnotation] = leaving
	}
	if arriving != "" {
		rs.Annotations[ArrivingAnnotation] = arriving
	}
	return rs
}

// podState is how a test pod is: serving (running its image, ready for an hour),
// notReady, gated (created with the in-place readiness gate, which is True unless
// out), out (gate False with a State recorded since `since`).
type podState struct {
	notReady, gated, out bool
	since                time.Duration // how long ago the State was recorded
	image                string        // the image it runs, when not its ReplicaSet's
}

// podOf is a pod of rs.
func podOf(rs *appsv1.ReplicaSet, name string, st podState) *corev1.Pod {
	image := rs.Spec.Template.Spec.Containers[0].Image
	runs := image
	if st.image != "" {
		runs = st.image
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(planNow.Add(-time.Hour))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: runs, Ready: !st.notReady,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if st.notReady {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	if st.gated || st.out {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ReadinessGate}}
		gate := corev1.ConditionTrue
		if st.out {
			gate = corev1.ConditionFalse
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: ReadinessGate, Status: gate})
	}
	if st.out {
		state := OutOfService(p, "b", map[string]string{"app": "nginx:2"}, planNow.Add(-st.since))
		p.Annotations = map[string]string{StateAnnotation: state.Encode()}
		if st.notReady {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
	}
	return p
}

func pods(rs *appsv1.ReplicaSet, st podState, names ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range names {
		out = append(out, podOf(rs, n, st))
	}
	return out
}

// view is a 4-replica Deployment (maxUnavailable 1) rolling from A to B in place.
func view(b ReplicaSetPods, old ...ReplicaSetPods) HandOverView {
	return HandOverView{Desired: 4, MaxUnavailable: 1, Now: planNow, InPlace: true, Start: true, New: &b, Old: old, TakenOut: sets.New[types.UID]()}
}

// describe renders a plan as one line per write, in order.
func describe(p HandOverPlan) string {
	var lines []string
	names := func(ps []*corev1.Pod) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name)
		}
		return strings.Join(n, ",")
	}
	if len(p.PutBack) > 0 {
		lines = append(lines, "put back "+names(p.PutBack))
	}
	for _, o := range p.TakeOut {
		lines = append(lines, "take out "+o.Pod.Name)
	}
	for _, r := range p.Records {
		given := ""
		if len(r.GivenAway) > 0 {
			given = " (gives away " + names(r.GivenAway) + ")"
		}
		lines = append(lines, fmt.Sprintf("%s: %d replicas, leaving [%s], arriving [%s]%s", r.RS.Name, r.Replicas, EncodeNames(r.Leaving), EncodeNames(r.Arriving), given))
	}
	if len(p.Resize) > 0 {
		lines = append(lines, "resize "+names(p.Resize))
	}
	for _, r := range p.Recreate {
		lines = append(lines, "recreate "+r.Pod.Name+": "+r.Why)
	}
	for _, b := range p.Blocked {
		lines = append(lines, "blocked: "+b)
	}
	if p.RequeueAfter > 0 {
		lines = append(lines, "again in "+p.RequeueAfter.String())
	}
	return strings.Join(lines, "\n")
}

func TestPlanHandOver(t *testing.T) {
	a := func(replicas, available int32, observed bool) *appsv1.ReplicaSet {
		return rsOf("a", "nginx:1", replicas, available, observed)
	}
	b := func(replicas, available int32, observed bool) *appsv1.ReplicaSet {
		return rsOf("b", "nginx:2", replicas, available, observed)
	}
	serving := podState{}
	// bothArrived: a1 and a2 have moved from A to B, both serving and reported; a3 and
	// a4 are left on A; then change.
	bothArrived := func(change func(*HandOverView)) func() HandOverView {
		return func() HandOverView {
			A := with(a(2, 2, true), "a1,a2", "")
			B := with(b(2, 2, true), "", "a1,a2")
			v := view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1", "a2")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a3", "a4")})
			change(&v)
			return v
		}
	}
	// lastArrived: a3 and a4, the last of A's pods, have moved to B, which holds all
	// four, reported; then change B.
	lastArrived := func(change func(B *appsv1.ReplicaSet)) func() HandOverView {
		return func() HandOverView {
			A := with(a(0, 0, true), "a3,a4", "")
			B := with(b(4, 4, true), "", "a3,a4")
			change(B)
			return view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1", "a2", "a3", "a4")}, ReplicaSetPods{RS: A})
		}
	}
	tests := []struct {
		name string
		view func() HandOverView
		want string
	}{
		{
			name: "hand-over 1/4 starts: A gives away one serving pod (maxUnavailable 1) and shrinks past it; B waits for A to observe it",
			view: func() HandOverView {
				A := a(4, 4, true)
				return view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "hand-over 1/4: A gives away its 3 pods that are not available first, at no cost, and no serving one (4 − 1 serving > maxUnavailable)",
			view: func() HandOverView {
				A := a(4, 1, true)
				return view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: append(pods(A, podState{notReady: true}, "a1", "a2", "a3"), podOf(A, "a4", serving))})
			},
			want: "a: 1 replicas, leaving [a1,a2,a3], arriving [] (gives away a1,a2,a3)",
		},
		{
			name: "hand-over 1/4 with maxUnavailable 2 of 4: two serving pods go at once",
			view: func() HandOverView {
				A := a(4, 4, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.MaxUnavailable = 2
				return v
			},
			want: "a: 2 replicas, leaving [a1,a2], arriving [] (gives away a1,a2)",
		},
		{
			name: "partition 3 of 4 with maxUnavailable 2: one pod goes, three stay old",
			view: func() HandOverView {
				A := a(4, 4, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.MaxUnavailable, v.Partition = 2, 3
				return v
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "at partition 2 (a1, a2 gone, B holds them): no more is picked, B counts desired − partition",
			view: func() HandOverView {
				A := a(2, 2, true)
				B := b(2, 2, true)
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1", "a2")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a3", "a4")})
				v.MaxUnavailable, v.Partition = 2, 2
				return v
			},
			want: "",
		},
		{
			name: "maxUnavailable 0 still moves one pod at a time: an in-place update needs one out of service",
			view: func() HandOverView {
				A := a(4, 4, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.MaxUnavailable = 0
				return v
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "hand-over 2/4: A has observed a1 leaving, so B names it arriving and grows to count it (it creates no pod for it)",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				return view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
			},
			want: "b: 1 replicas, leaving [], arriving [a1]",
		},
		{
			name: "the next pick waits while the last is recorded: B does not name a1 arriving yet, so a2 stays though maxUnavailable 2 leaves room",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.MaxUnavailable = 2
				return v
			},
			want: "b: 1 replicas, leaving [], arriving [a1]",
		},
		{
			name: "an older ReplicaSet with no pod leaving has not observed its spec: the pick does not wait for it",
			view: func() HandOverView {
				A := a(4, 4, true)
				Z := rsOf("z", "nginx:0", 0, 0, false)
				return view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: Z}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "a1 and a2 are on their way and room for one more frees: a pick under half of maxUnavailable 3 waits for them",
			view: func() HandOverView {
				A := with(a(2, 2, true), "a1,a2", "")
				B := with(b(2, 0, true), "", "a1,a2")
				v := view(ReplicaSetPods{RS: B}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.MaxUnavailable = 3
				return v
			},
			want: "",
		},
		{
			name: "a1 and a2 have arrived and are not available yet: the one pod there is room for goes, and B's record keeps their names until it names a3",
			view: func() HandOverView {
				A := with(a(2, 2, true), "a1,a2", "")
				B := with(b(2, 0, true), "", "a1,a2")
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, podState{notReady: true}, "a1", "a2")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a3", "a4")})
				v.MaxUnavailable = 3
				return v
			},
			want: "a: 1 replicas, leaving [a3], arriving [] (gives away a3)",
		},
		{
			name: "a1 and a2 have arrived, B has not reported them yet (its status counts neither): a pick under half of maxUnavailable 3 waits for its report, and the records for its writes",
			view: func() HandOverView {
				A := with(a(2, 2, true), "a1,a2", "")
				B := with(b(2, 0, true), "", "a1,a2")
				B.Status.Replicas = 0
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1", "a2")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a3", "a4")})
				v.MaxUnavailable = 3
				return v
			},
			want: "",
		},
		{
			name: "a1 has arrived, a2 is on its way: both stay named, no record is written for a1 alone",
			view: func() HandOverView {
				A := with(a(2, 2, true), "a1,a2", "")
				B := with(b(2, 0, true), "", "a1,a2")
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
				v.Start = false
				return v
			},
			want: "",
		},
		{
			name: "a1 and a2 have both arrived, and the partition keeps a3 and a4: the records are cleared",
			view: bothArrived(func(v *HandOverView) { v.Partition = 2 }),
			want: "a: 2 replicas, leaving [], arriving []\nb: 2 replicas, leaving [], arriving []",
		},
		{
			name: "hand-over 2/4: A has not observed its newest record, so B takes in only the pod it was told of before",
			view: func() HandOverView {
				A := with(a(2, 2, false), "a1,a2", "")
				B := with(b(1, 0, true), "", "a1")
				return view(ReplicaSetPods{RS: B}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
			},
			want: "",
		},
		{
			name: "hand-over 2/4: A reports a1 and a2 gone from its availability, so the budget is spent: nothing more goes",
			view: func() HandOverView {
				A := with(a(3, 2, true), "a1", "")
				B := with(b(1, 0, true), "", "a1")
				return view(ReplicaSetPods{RS: B}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
			},
			want: "",
		},
		{
			name: "hand-over 3/4: a1 has moved to B, and the next pod goes once B reports a1 available: A's record names it in a1's place, B's keeps a1 until it names a2",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				B := with(b(1, 1, true), "", "a1")
				return view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
			},
			want: "a: 2 replicas, leaving [a2], arriving [] (gives away a2)",
		},
		{
			name: "hand-over 4/4: a taken-over pod restarting on its new image is out of service: nothing more goes",
			view: func() HandOverView {
				A := a(3, 3, true)
				B := b(1, 0, true)
				return view(ReplicaSetPods{RS: B, Pods: pods(B, podState{image: "docker.io/library/nginx:1"}, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
			},
			want: "",
		},
		{
			name: "grace period: a serving pod with the gate is taken out of service first, and looked at again when its period is over",
			view: func() HandOverView {
				A := a(4, 4, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, podState{gated: true}, "a1", "a2", "a3", "a4")})
				v.Grace = 5 * time.Second
				return v
			},
			want: "take out a1\nagain in 5s",
		},
		{
			name: "grace period running (2 of 5 s): the pod waits, looked at again in 3 s; nothing else goes meanwhile",
			view: func() HandOverView {
				A := a(4, 3, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: append(pods(A, podState{out: true, notReady: true, since: 2 * time.Second}, "a1"), pods(A, podState{gated: true}, "a2", "a3", "a4")...)})
				v.Grace = 5 * time.Second
				return v
			},
			want: "again in 3s",
		},
		{
			name: "grace period over: the pod taken out is given away",
			view: func() HandOverView {
				A := a(4, 3, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: append(pods(A, podState{out: true, notReady: true, since: 6 * time.Second}, "a1"), pods(A, podState{gated: true}, "a2", "a3", "a4")...)})
				v.Grace = 5 * time.Second
				return v
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "a State recorded without the gate going False (an older kroll): the pod is taken out again first",
			view: func() HandOverView {
				A := a(4, 4, true)
				p := podOf(A, "a1", podState{out: true, since: time.Second})
				p.Status.Conditions[1].Status = corev1.ConditionTrue
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: append([]*corev1.Pod{p}, pods(A, podState{gated: true}, "a2", "a3", "a4")...)})
				v.Grace = 5 * time.Second
				return v
			},
			want: "take out a1",
		},
		{
			name: "an arrived pod with a State, running its new image and ready, is put back once B's observed size counts it",
			view: func() HandOverView {
				A := a(3, 3, true)
				B := b(1, 0, true)
				return view(ReplicaSetPods{RS: B, Pods: pods(B, podState{out: true, since: time.Minute}, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
			},
			want: "put back a1",
		},
		{
			name: "an arrived pod with a State is not put back while B's observed size does not count it (its State keeps B from deleting it)",
			view: func() HandOverView {
				A := a(3, 3, true)
				B := b(1, 0, false)
				return view(ReplicaSetPods{RS: B, Pods: pods(B, podState{out: true, since: time.Minute}, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
			},
			want: "",
		},
		{
			name: "undo mid-hand-over: a1, which A gave away and B was told to take over, still goes to B (first); nothing else moves meanwhile",
			view: func() HandOverView {
				// The template went back to A's: A is the new ReplicaSet, B an old one.
				A := with(a(3, 2, true), "a1", "")
				B := with(b(2, 1, true), "", "a1")
				return view(ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3")}, ReplicaSetPods{RS: B, Pods: pods(B, serving, "b1")})
			},
			want: "",
		},
		{
			name: "undo mid-hand-over, A not yet told: B keeps b1 leaving, A names it arriving once B has observed",
			view: func() HandOverView {
				A := a(2, 2, true)
				B := with(b(1, 1, true), "b1", "")
				return view(ReplicaSetPods{RS: A, Pods: pods(A, serving, "a3", "a4")}, ReplicaSetPods{RS: B, Pods: pods(B, serving, "b1", "b2")})
			},
			want: "a: 3 replicas, leaving [], arriving [b1]",
		},
		{
			name: "a pod deleted mid-move: nothing is written while no pod can go (B's controller replaces it; the names are left for the next pick's writes)",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				B := with(b(1, 0, true), "", "a1")
				return view(ReplicaSetPods{RS: B}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
			},
			want: "",
		},
		{
			name: "the last old pods are picked: B's record keeps a1 and a2 until it names a3 and a4",
			view: bothArrived(func(v *HandOverView) { v.MaxUnavailable = 2 }),
			want: "a: 0 replicas, leaving [a3,a4], arriving [] (gives away a3,a4)",
		},
		{
			name: "the last old pods picked, A has not observed its record yet: B's record keeps a1 and a2 until it names a3 and a4",
			view: bothArrived(func(v *HandOverView) { v.Old[0].RS = with(a(0, 2, false), "a3,a4", "") }),
			want: "",
		},
		{
			name: "the last pods have arrived, none left to pick: the records are cleared",
			view: lastArrived(func(*appsv1.ReplicaSet) {}),
			want: "a: 0 replicas, leaving [], arriving []\nb: 4 replicas, leaving [], arriving []",
		},
		{
			name: "the last pods have arrived, B has not reported them yet (it waits for them to come back): the records wait for its report",
			view: lastArrived(func(B *appsv1.ReplicaSet) { B.Status.Replicas, B.Status.AvailableReplicas = 2, 2 }),
			want: "",
		},
		{
			name: "B never grows to create a pod while old pods may still arrive: A has a pod leaving",
			view: func() HandOverView {
				A := with(a(2, 2, true), "a1", "")
				B := with(b(1, 1, true), "", "a1")
				return view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "x1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3")})
			},
			want: "b: 2 replicas, leaving [], arriving [a1]",
		},
		{
			name: "paused (Start false): a pod on its way arrives, none is picked",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.Start = false
				return v
			},
			want: "b: 1 replicas, leaving [], arriving [a1]",
		},
		{
			name: "a pod taken out by a write the cache does not show yet: not serving, not picked again",
			view: func() HandOverView {
				A := a(4, 4, true)
				v := view(ReplicaSetPods{RS: b(0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a1", "a2", "a3", "a4")})
				v.TakenOut.Insert("uid-a1")
				return v
			},
			want: "",
		},
		{
			name: "the rollout is over: every pod on B, serving: nothing to write",
			view: func() HandOverView {
				B := b(4, 4, true)
				return view(ReplicaSetPods{RS: B, Pods: pods(B, serving, "a1", "a2", "a3", "a4")}, ReplicaSetPods{RS: a(0, 0, true)})
			},
			want: "",
		},
		{
			name: "not in place (the change fell back to a rolling update): names of pods that moved leave the records, first",
			view: func() HandOverView {
				A := with(a(3, 3, true), "a1", "")
				B := with(b(1, 0, true), "", "a1")
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, podState{out: true, since: time.Minute}, "a1")}, ReplicaSetPods{RS: A, Pods: pods(A, serving, "a2", "a3", "a4")})
				v.InPlace = false
				return v
			},
			want: "b: 1 replicas, leaving [], arriving []\na: 3 replicas, leaving [], arriving []",
		},
		{
			name: "not in place, records clean: pods are put back where they are, on the old ReplicaSet too",
			view: func() HandOverView {
				A := a(3, 3, true)
				B := b(1, 0, true)
				v := view(ReplicaSetPods{RS: B, Pods: pods(B, podState{out: true, since: time.Minute}, "b1")},
					ReplicaSetPods{RS: A, Pods: append(pods(A, podState{gated: true}, "a2", "a3"), podOf(A, "a4", podState{out: true, since: time.Minute, image: "nginx:1"}))})
				v.InPlace = false
				return v
			},
			want: "put back b1,a4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(PlanHandOver(tt.view())); got != tt.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// The plan never names a pod twice, and never shrinks an old ReplicaSet below the pods
// it keeps: stepping a 10-replica rollout through its passes, as the controllers
// would, moves every pod once and never has more than maxUnavailable out of service.
func TestPlanHandOverStepsThroughARollout(t *testing.T) {
	A := rsOf("a", "nginx:1", 10, 10, true)
	B := rsOf("b", "nginx:2", 0, 0, true)
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("a%02d", i))
	}
	world := map[string]*corev1.Pod{}
	for _, p := range pods(A, podState{}, names...) {
		world[p.Name] = p
	}
	moved := map[string]int{}
	for pass := range 200 {
		var ap, bp []*corev1.Pod
		for _, p := range world {
			if p.OwnerReferences[0].UID == A.UID {
				ap = append(ap, p)
			} else {
				bp = append(bp, p)
			}
		}
		sort.Slice(ap, func(i, j int) bool { return ap[i].Name < ap[j].Name })
		sort.Slice(bp, func(i, j int) bool { return bp[i].Name < bp[j].Name })
		v := view(ReplicaSetPods{RS: B, Pods: bp}, ReplicaSetPods{RS: A, Pods: ap})
		v.Desired, v.MaxUnavailable = 10, 3
		plan := PlanHandOver(v)
		if plan.Empty() {
			if len(bp) != 10 || *B.Spec.Replicas != 10 || *A.Spec.Replicas != 0 {
				t.Fatalf("pass %d: nothing to do with A %d/%d pods, B %d/%d", pass, *A.Spec.Replicas, len(ap), *B.Spec.Replicas, len(bp))
			}
			for _, n := range names {
				if moved[n] != 1 {
					t.Errorf("pod %s moved %d times", n, moved[n])
				}
			}
			return
		}
		// Apply the records; the ReplicaSet controllers observe them, B takes over its
		// arrivals (they restart and are serving again), and report availability.
		for _, r := range plan.Records {
			r.RS.Spec.Replicas = ptr(r.Replicas)
			SetNames(r.RS, LeavingAnnotation, r.Leaving)
			SetNames(r.RS, ArrivingAnnotation, r.Arriving)
		}
		for name := range Names(B, ArrivingAnnotation) {
			if p := world[name]; p != nil && p.OwnerReferences[0].UID == A.UID && Names(A, LeavingAnnotation).Has(name) {
				moved[name]++
				world[name] = podOf(B, name, podState{})
			}
		}
		out := 0
		for _, p := range world {
			if p.OwnerReferences[0].UID == A.UID && Names(A, LeavingAnnotation).Has(p.Name) {
				out++
			}
		}
		if out > 3 {
			t.Fatalf("pass %d: %d pods out of service, maxUnavailable 3", pass, out)
		}
		for _, rs := range []*appsv1.ReplicaSet{A, B} {
			n := int32(0)
			for _, p := range world {
				if p.OwnerReferences[0].UID == rs.UID && !Names(rs, LeavingAnnotation).Has(p.Name) {
					n++
				}
			}
			rs.Status.AvailableReplicas = n
		}
	}
	t.Fatal("the rollout did not finish in 200 passes")
}

// cpuRS is rs with its template's container asking for cpu, with resizePolicy policy
// for cpu (memory: 64Mi requested, NotRequired).
func cpuRS(rs *appsv1.ReplicaSet, cpu string, policy corev1.ResourceResizeRestartPolicy) *appsv1.ReplicaSet {
	c := &rs.Spec.Template.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}}
	c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: policy},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	return rs
}

// cpuSized is p with cpu requested in its spec and reported by the kubelet (allocated and
// actuated), the generation observed unless a resize condition is given (state): a
// written resize the kubelet has not made.
func cpuSized(p *corev1.Pod, spec, reported string, state ResizeState) *corev1.Pod {
	req := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req(spec)}
	p.Generation, p.Status.ObservedGeneration = 2, 2
	p.Status.ContainerStatuses[0].AllocatedResources = req(reported)
	p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: req(reported)}
	switch state {
	case ResizeInProgress:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
	case ResizeDeferred, ResizeInfeasible:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: string(state)})
	}
	if state != ResizeSettled {
		p.Generation = 3
	}
	return p
}

// roomFor is an Unfit whose nodes (one per pod, named in nodes; n1 otherwise) can each
// make room resizes to more than the pods hold, counting the pods already resized there
// this pass; and none on node "full".
func roomFor(room int, nodes map[string]string) func(*corev1.Pod, *corev1.PodTemplateSpec, []*corev1.Pod) string {
	nodeOf := func(p *corev1.Pod) string {
		if n, ok := nodes[p.Name]; ok {
			return n
		}
		return "n1"
	}
	return func(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized []*corev1.Pod) string {
		if PlanResize(pod, to).Empty() {
			if state, _ := ResizeStateOf(pod); state != ResizeDeferred {
				return ""
			}
		}
		node := nodeOf(pod)
		used := 0
		for _, r := range resized {
			if r.UID != pod.UID && nodeOf(r) == node {
				used++
			}
		}
		if node == "full" || used >= room {
			return fmt.Sprintf("pod %s: the resize cannot be made on node %s: needs cpu 200m, 100m free", pod.Name, node)
		}
		return ""
	}
}

func TestPlanHandOverResizes(t *testing.T) {
	a := func(replicas, available int32) *appsv1.ReplicaSet {
		return cpuRS(rsOf("a", "nginx:1", replicas, available, true), "100m", corev1.NotRequired)
	}
	b := func(replicas, available int32, policy corev1.ResourceResizeRestartPolicy) *appsv1.ReplicaSet {
		// The change is cpu alone: B runs A's image.
		return cpuRS(rsOf("b", "nginx:1", replicas, available, true), "200m", policy)
	}
	old := func(A *appsv1.ReplicaSet, names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range pods(A, podState{gated: true}, names...) {
			out = append(out, cpuSized(p, "100m", "100m", ResizeSettled))
		}
		return out
	}
	arrived := func(B *appsv1.ReplicaSet, name, spec, reported string, state ResizeState) *corev1.Pod {
		return cpuSized(podOf(B, name, podState{gated: true}), spec, reported, state)
	}
	tests := []struct {
		name string
		view func() HandOverView
		want string
	}{
		{
			name: "cpu 100m → 200m, a1 arrived with 100m: it is resized, and does not serve until the kubelet reports 200m, so nothing more goes (maxUnavailable 1)",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "100m", "100m", ResizeSettled)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit = roomFor(4, nil)
				return v
			},
			want: "resize a1",
		},
		{
			name: "a1's resize written, in progress, Ready throughout (NotRequired): still not serving, nothing more goes",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "200m", "100m", ResizeInProgress)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit = roomFor(4, nil)
				return v
			},
			want: "",
		},
		{
			name: "a1's resize actuated but its generation not yet observed by the kubelet: not done, nothing more goes",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				p := arrived(B, "a1", "200m", "200m", ResizeSettled)
				p.Generation = 3
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{p}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit = roomFor(4, nil)
				return v
			},
			want: "",
		},
		{
			name: "a1 reports 200m, no condition, generation observed: it serves again and a2 goes",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "200m", "200m", ResizeSettled)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit = roomFor(4, nil)
				return v
			},
			want: "a: 2 replicas, leaving [a2], arriving [] (gives away a2)",
		},
		{
			name: "InPlaceIfPossible, a1's node cannot make its resize: never written; a1 is recreated (it is out of service already, nothing more goes)",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "100m", "100m", ResizeSettled)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit = roomFor(4, map[string]string{"a1": "full"})
				return v
			},
			want: "recreate a1: pod a1: the resize cannot be made on node full: needs cpu 200m, 100m free",
		},
		{
			name: "InPlaceOnly, a1 arrived on a node that cannot make its resize (an undo's way back, say): nothing is written to it, it blocks naming it",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "100m", "100m", ResizeSettled)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit, v.OnlyInPlace = roomFor(4, map[string]string{"a1": "full"}), true
				return v
			},
			want: "blocked: pod a1: the resize cannot be made on node full: needs cpu 200m, 100m free",
		},
		{
			name: "InPlaceOnly, a1's node cannot make the resize: a1 is not picked (it stays old, named), a2 goes in its place",
			view: func() HandOverView {
				A := a(4, 4)
				v := view(ReplicaSetPods{RS: b(0, 0, corev1.NotRequired)}, ReplicaSetPods{RS: A, Pods: old(A, "a1", "a2", "a3", "a4")})
				v.Unfit, v.OnlyInPlace = roomFor(4, map[string]string{"a1": "full"}), true
				return v
			},
			want: "a: 3 replicas, leaving [a2], arriving [] (gives away a2)\nblocked: pod a1: the resize cannot be made on node full: needs cpu 200m, 100m free",
		},
		{
			name: "InPlaceIfPossible, a1's node cannot make the resize: a1 goes like any pod (to be recreated once it has arrived)",
			view: func() HandOverView {
				A := a(4, 4)
				v := view(ReplicaSetPods{RS: b(0, 0, corev1.NotRequired)}, ReplicaSetPods{RS: A, Pods: old(A, "a1", "a2", "a3", "a4")})
				v.Unfit = roomFor(4, map[string]string{"a1": "full"})
				return v
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "maxUnavailable 3, node n1 has room for one more resize and a1 arrived there: a2 (n1) waits, a3 (n2) and a4 (n2) go",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 1, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "a1", "100m", "100m", ResizeSettled)}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Unfit, v.MaxUnavailable = roomFor(1, map[string]string{"a3": "n2", "a4": "n2"}), 3
				return v
			},
			// 4 desired, 3 serving, a1 resizing: 2 more may go; a2 is dropped as n1 is
			// full with a1's resize, so only a3 (the budget of 2 was spent on a2 and a3).
			want: "a: 2 replicas, leaving [a3], arriving [] (gives away a3)\nresize a1",
		},
		{
			name: "a written resize the kubelet defers: waited for while the node can make it, recreated once it cannot",
			view: func() HandOverView {
				B := b(4, 2, corev1.NotRequired)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{
					arrived(B, "a1", "200m", "100m", ResizeDeferred), arrived(B, "a2", "200m", "100m", ResizeDeferred),
					arrived(B, "a3", "200m", "200m", ResizeSettled), arrived(B, "a4", "200m", "200m", ResizeSettled)}},
					ReplicaSetPods{RS: a(0, 0)})
				v.Unfit = roomFor(1, map[string]string{"a3": "n3", "a4": "n4"})
				return v
			},
			want: "recreate a2: pod a2: the resize cannot be made on node n1: needs cpu 200m, 100m free",
		},
		{
			name: "grace period, a cpu resize that restarts nothing: the pod is handed over at once, not taken out",
			view: func() HandOverView {
				A := a(4, 4)
				v := view(ReplicaSetPods{RS: b(0, 0, corev1.NotRequired)}, ReplicaSetPods{RS: A, Pods: old(A, "a1", "a2", "a3", "a4")})
				v.Grace, v.Unfit = 5*time.Second, roomFor(4, nil)
				return v
			},
			want: "a: 3 replicas, leaving [a1], arriving [] (gives away a1)",
		},
		{
			name: "grace period, a cpu resize with RestartContainer: the pod is taken out of service first, as for an image",
			view: func() HandOverView {
				A := a(4, 4)
				v := view(ReplicaSetPods{RS: b(0, 0, corev1.RestartContainer)}, ReplicaSetPods{RS: A, Pods: old(A, "a1", "a2", "a3", "a4")})
				v.Grace, v.Unfit = 5*time.Second, roomFor(4, nil)
				return v
			},
			want: "take out a1\nagain in 5s",
		},
		{
			name: "an arrived pod taken out for a restarting resize is not put back before the resize is made; it is resized",
			view: func() HandOverView {
				A, B := a(3, 3), b(1, 0, corev1.RestartContainer)
				p := cpuSized(podOf(B, "a1", podState{out: true, since: time.Minute}), "100m", "100m", ResizeSettled)
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{p}}, ReplicaSetPods{RS: A, Pods: old(A, "a2", "a3", "a4")})
				v.Grace, v.Unfit = 5*time.Second, roomFor(4, nil)
				return v
			},
			want: "resize a1",
		},
		{
			name: "a change undone and redone mid-hand-over: x1, still on its way from B to A, is not resized to B; x2, staying, is",
			view: func() HandOverView {
				A, B := with(a(2, 2), "", "x1"), with(b(2, 0, corev1.NotRequired), "x1", "")
				v := view(ReplicaSetPods{RS: B, Pods: []*corev1.Pod{arrived(B, "x1", "100m", "100m", ResizeSettled), arrived(B, "x2", "100m", "100m", ResizeSettled)}},
					ReplicaSetPods{RS: A, Pods: old(A, "a3", "a4")})
				v.Unfit = roomFor(4, nil)
				return v
			},
			want: "resize x2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(PlanHandOver(tt.view())); got != tt.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestPlanHandOverRecording(t *testing.T) {
	cases := []struct {
		name      string
		a, b      *appsv1.ReplicaSet
		want      string
		recording bool
	}{
		{
			name: "the pick: A names a0 leaving, B's record waits for A to observe it",
			a:    rsOf("a", "nginx:1", 4, 4, true), b: rsOf("b", "nginx:2", 0, 0, true),
			want:      "a: 3 replicas, leaving [a0], arriving [] (gives away a0)",
			recording: true,
		},
		{
			name: "A has not observed its record yet: nothing to write, the pick still half recorded",
			a:    with(rsOf("a", "nginx:1", 3, 3, false), "a0", ""), b: rsOf("b", "nginx:2", 0, 0, true),
			recording: true,
		},
		{
			name: "A observed it: B names a0 arriving, the pick recorded",
			a:    with(rsOf("a", "nginx:1", 3, 3, true), "a0", ""), b: rsOf("b", "nginx:2", 0, 0, true),
			want: "b: 1 replicas, leaving [], arriving [a0]",
		},
		{
			name: "under way: both records name a0",
			a:    with(rsOf("a", "nginx:1", 3, 3, true), "a0", ""), b: with(rsOf("b", "nginx:2", 1, 0, true), "", "a0"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanHandOver(view(ReplicaSetPods{RS: tc.b}, ReplicaSetPods{RS: tc.a, Pods: pods(tc.a, podState{}, "a0", "a1", "a2", "a3")}))
			if got := describe(plan); got != tc.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.want)
			}
			if plan.Recording != tc.recording {
				t.Errorf("Recording = %v, want %v", plan.Recording, tc.recording)
			}
		})
	}
}
