package rolloutplan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// TestText renders one plan per story and compares it with testdata/<story>.txt
// (go test -update rewrites them).
func TestText(t *testing.T) {
	web := newDeployment("web", 10, "25%", "25%")
	deployment := func(tc deploymentCase) func() (Plan, error) {
		return func() (Plan, error) {
			cur, rss, pods, next := tc.objects()
			return Deployment(cur, rss, pods, next, now)
		}
	}
	statefulSet := func(cur *appsv1.StatefulSet, notReady []int, edit func(*appsv1.StatefulSet)) func() (Plan, error) {
		return func() (Plan, error) {
			return StatefulSet(cur, setPods(cur, int(*cur.Spec.Replicas), notReady...), nil, changed(cur, edit), now)
		}
	}
	nodes := []string{"node-1", "node-2", "node-3", "node-4"}
	daemonSet := func(cur *appsv1.DaemonSet, notReady []string, edit func(*appsv1.DaemonSet)) func() (Plan, error) {
		return func() (Plan, error) {
			return DaemonSet(cur, newNodes(nodes...), daemonPods(cur, nodes, notReady...), nil, changed(cur, edit), now)
		}
	}
	envChange := func(mode inplace.Mode) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
			inPlaceMode(mode)(d)
		}
	}
	imageInPlace := func(d *appsv1.Deployment) {
		setImage("nginx:1.26")(d)
		inPlaceMode(inplace.IfPossible)(d)
	}
	annotate := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// web with cpu 100m/500m and memory 64Mi/128Mi (Burstable), cpu resized without a
	// restart and memory with one.
	sized := changed(web, func(d *appsv1.Deployment) { withResources(&d.Spec.Template) })
	cpu := func(request string) func(*corev1.PodTemplateSpec) {
		return func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(request)
		}
	}
	resized := func(mode inplace.Mode, edits ...func(*corev1.PodTemplateSpec)) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			for _, e := range edits {
				e(&d.Spec.Template)
			}
			inPlaceMode(mode)(d)
		}
	}
	memoryLimit := func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	}
	// Requests equal to limits for both: Burstable → Guaranteed, which pods/resize refuses.
	guaranteed := func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Resources.Requests = t.Spec.Containers[0].Resources.Limits.DeepCopy()
	}
	stories := []struct {
		name string
		plan func() (Plan, error)
	}{
		{"deployment-rolling-10-replicas-25-25", deployment(deploymentCase{cur: web, sizes: []int32{10}, edit: setImage("nginx:1.26")})},
		{"deployment-rolling-budget-allows-1", func() (Plan, error) {
			tc := deploymentCase{cur: web, sizes: []int32{10}, edit: setImage("nginx:1.26")}
			cur, rss, pods, next := tc.objects()
			plan, err := Deployment(cur, rss, pods, next, now)
			plan.AccountBudgets(annotate(disruption.Annotation, "Respect"), pods, []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 1, 9, 10)}, now)
			return plan, err
		}},
		{"deployment-rolling-20-replicas-long-batches", deployment(deploymentCase{cur: newDeployment("web", 20, "25%", "25%"), sizes: []int32{20}, edit: setImage("nginx:1.26")})},
		{"deployment-recreate", deployment(deploymentCase{cur: newDeployment("web", 3, "", ""), sizes: []int32{3}, edit: setImage("nginx:1.26")})},
		{"deployment-scale-3-to-5", deployment(deploymentCase{cur: newDeployment("web", 3, "25%", "25%"), sizes: []int32{3},
			edit: func(d *appsv1.Deployment) { *d.Spec.Replicas = 5 }})},
		{"deployment-rollback-mid-rollout", deployment(deploymentCase{cur: web, sizes: []int32{8, 3}, notReady: 3, edit: setImage("nginx:1.24")})},
		{"deployment-in-place-2-unavailable-first", deployment(deploymentCase{cur: web, sizes: []int32{10}, notReady: 2, edit: imageInPlace})},
		{"deployment-in-place-fallback", deployment(deploymentCase{cur: web, sizes: []int32{10}, edit: envChange(inplace.IfPossible)})},
		{"deployment-in-place-blocked", deployment(deploymentCase{cur: web, sizes: []int32{10}, edit: envChange(inplace.Only)})},
		{"deployment-in-place-resize-cpu", deployment(deploymentCase{cur: sized, sizes: []int32{10}, edit: resized(inplace.IfPossible, cpu("200m"))})},
		{"deployment-in-place-resize-memory-restarts", deployment(deploymentCase{cur: sized, sizes: []int32{10}, edit: resized(inplace.IfPossible, memoryLimit)})},
		{"deployment-in-place-resize-qos-fallback", deployment(deploymentCase{cur: sized, sizes: []int32{10}, edit: resized(inplace.IfPossible, guaranteed)})},
		{"deployment-resize-rolling", deployment(deploymentCase{cur: sized, sizes: []int32{10}, edit: func(d *appsv1.Deployment) { cpu("200m")(&d.Spec.Template) }})},
		{"statefulset-in-place-resize", statefulSet(changed(newStatefulSet("web", 3, 0, ""), func(s *appsv1.StatefulSet) { withResources(&s.Spec.Template) }), nil, func(s *appsv1.StatefulSet) {
			setImageOf("nginx:1.26")(s)
			cpu("200m")(&s.Spec.Template)
			s.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		})},
		{"daemonset-in-place-resize", daemonSet(changed(newDaemonSet("logs", "1", "0"), func(ds *appsv1.DaemonSet) { withResources(&ds.Spec.Template) }), nil, func(ds *appsv1.DaemonSet) {
			memoryLimit(&ds.Spec.Template)
			ds.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		})},
		{"deployment-unchanged", deployment(deploymentCase{cur: web, sizes: []int32{10}, edit: func(*appsv1.Deployment) {}})},
		{"statefulset-partition-2-of-5", statefulSet(newStatefulSet("web", 5, 2, ""), nil, setImageOf("nginx:1.26"))},
		{"statefulset-max-unavailable-2", statefulSet(newStatefulSet("web", 5, 0, "2"), nil, setImageOf("nginx:1.26"))},
		{"statefulset-in-place", statefulSet(newStatefulSet("web", 3, 0, ""), nil, func(s *appsv1.StatefulSet) {
			setImageOf("nginx:1.26")(s)
			s.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		})},
		{"statefulset-on-delete", statefulSet(changed(newStatefulSet("web", 3, 0, ""), func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}), nil, setImageOf("nginx:1.26"))},
		{"statefulset-ordered-ready-waits", statefulSet(newStatefulSet("web", 3, 0, ""), []int{1}, setImageOf("nginx:1.26"))},
		{"daemonset-max-unavailable-1", daemonSet(newDaemonSet("logs", "1", "0"), nil, dsImage("fluentd:v2"))},
		{"daemonset-max-surge-1", daemonSet(newDaemonSet("logs", "0", "1"), nil, dsImage("fluentd:v2"))},
		{"daemonset-in-place", daemonSet(newDaemonSet("logs", "1", "0"), []string{"node-2"}, func(ds *appsv1.DaemonSet) {
			dsImage("fluentd:v2")(ds)
			ds.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		})},
		{"deployment-on-failure-rollback", deployment(deploymentCase{cur: web, sizes: []int32{10}, edit: func(d *appsv1.Deployment) {
			setImage("nginx:1.26")(d)
			d.Annotations = annotate(failure.OnFailureAnnotation, "Rollback", failure.ThresholdAnnotation, "25%")
			deadline := int32(120)
			d.Spec.ProgressDeadlineSeconds = &deadline
		}})},
		{"statefulset-on-failure-pause", statefulSet(newStatefulSet("web", 3, 0, ""), nil, func(s *appsv1.StatefulSet) {
			setImageOf("nginx:1.26")(s)
			s.Annotations = annotate(failure.OnFailureAnnotation, "Pause", failure.RestartsAnnotation, "5",
				failure.ReadyTimeoutAnnotation, "90s", failure.ProgressDeadlineAnnotation, "300")
		})},
		{"statefulset-steps", statefulSet(newStatefulSet("web", 5, 0, ""), nil, func(s *appsv1.StatefulSet) {
			setImageOf("nginx:1.26")(s)
			s.Annotations = annotate("kroll.dev/rollout-steps", "20%, pause, 60%, pause: 2m, 100%")
		})},
		{"daemonset-partition", daemonSet(newDaemonSet("logs", "1", "0"), nil, func(ds *appsv1.DaemonSet) {
			dsImage("fluentd:v2")(ds)
			ds.Annotations = annotate("kroll.dev/partition", "2")
		})},
		{"daemonset-on-failure-invalid", daemonSet(newDaemonSet("logs", "1", "0"), nil, func(ds *appsv1.DaemonSet) {
			dsImage("fluentd:v2")(ds)
			ds.Annotations = annotate(failure.OnFailureAnnotation, "Sometimes")
		})},
	}
	for _, s := range stories {
		t.Run(s.name, func(t *testing.T) {
			plan, err := s.plan()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, s.name, plan.Text())
		})
	}
}

// The JSON plan carries the policy and, when an annotation does not parse, the one
// line that names it.
func TestFailurePolicyInPlan(t *testing.T) {
	cur := newDaemonSet("logs", "1", "0")
	nodes := []string{"node-1", "node-2"}
	for _, tt := range []struct {
		annotations             map[string]string
		wantPolicy, wantProblem string
	}{
		{nil, "none (a failing rollout waits, as upstream's does)", ""},
		{map[string]string{failure.OnFailureAnnotation: "Rollback"}, "Rollback when 1 new pods fail (a container waiting in an error, 3 restarts)", ""},
		{map[string]string{failure.OnFailureAnnotation: "Rollback", failure.ThresholdAnnotation: "abc"}, "invalid: " + failure.PolicyOf(map[string]string{failure.ThresholdAnnotation: "abc"}).Problem(),
			`kroll.dev/failure-threshold="abc" is not valid: want a whole number of pods of at least 1 (2) or a percentage of the replicas (25%); the rollout is not watched for failure (as with kroll.dev/on-failure=None)`},
	} {
		next := changed(cur, func(ds *appsv1.DaemonSet) { ds.Annotations = tt.annotations })
		plan, err := DaemonSet(cur, newNodes(nodes...), daemonPods(cur, nodes), nil, next, now)
		if err != nil {
			t.Fatal(err)
		}
		if plan.FailurePolicy != tt.wantPolicy || plan.FailurePolicyProblem != tt.wantProblem {
			t.Errorf("%v: policy %q, problem %q; want %q, %q", tt.annotations, plan.FailurePolicy, plan.FailurePolicyProblem, tt.wantPolicy, tt.wantProblem)
		}
	}
}
