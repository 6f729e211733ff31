package inplace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResizeText(t *testing.T) {
	// sized is one container app, cpu 100m/500m and memory 64Mi/128Mi, cpu resized
	// without a restart and memory with one; edit changes a copy.
	sized := func(edit func(c *corev1.Container)) *corev1.PodTemplateSpec {
		c := corev1.Container{Name: "app", Image: "nginx:1.25",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
			ResizePolicy: []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
			}}
		if edit != nil {
			edit(&c)
		}
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	from := sized(nil)
	cases := []struct {
		name string
		to   *corev1.PodTemplateSpec
		want string
	}{
		{"nothing changes: no text", sized(nil), ""},
		{"an image change is not a resize", sized(func(c *corev1.Container) { c.Image = "nginx:1.26" }), ""},
		{"cpu 0.1 is 100m: no resize", sized(func(c *corev1.Container) { c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1") }), ""},
		{"cpu request 100m → 200m, NotRequired: no restart",
			sized(func(c *corev1.Container) { c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m") }),
			"app: cpu request 100m → 200m (no restart)"},
		{"memory limit 128Mi → 256Mi, RestartContainer: restarts app",
			sized(func(c *corev1.Container) { c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi") }),
			"app: memory limit 128Mi → 256Mi (restarts app)"},
		{"cpu request and limit both: one entry, request first",
			sized(func(c *corev1.Container) {
				c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
				c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
			}),
			"app: cpu request 100m → 200m, cpu limit 500m → 1 (no restart)"},
		{"a limit removed reads (none)",
			sized(func(c *corev1.Container) { delete(c.Resources.Limits, corev1.ResourceCPU) }),
			"app: cpu limit 500m → (none) (no restart)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResizeText(from, tc.to); got != tc.want {
				t.Errorf("ResizeText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResourceChangesNamesInitContainersFirst(t *testing.T) {
	tmpl := func(initMem, appCPU string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(initMem)}}}},
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(appCPU)}}}},
		}}
	}
	got := ResourceChanges(tmpl("64Mi", "100m"), tmpl("128Mi", "250m"))
	want := []string{"init setup: memory limit 64Mi → 128Mi", "app: cpu request 100m → 250m"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ResourceChanges = %q, want %q", got, want)
	}
}
