package rollout

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStatefulSetMaxUnavailable(t *testing.T) {
	set := func(replicas int32, maxUnavailable string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: &replicas,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}}
		if maxUnavailable != "" {
			v := intstr.Parse(maxUnavailable)
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &v}
		}
		return s
	}
	tests := []struct {
		name   string
		set    *appsv1.StatefulSet
		gateOn bool
		want   string // "nil", a number, or "error"
	}{
		{"no maxUnavailable: one at a time, each waited for", set(5, ""), true, "nil"},
		{"maxUnavailable 2 of 5", set(5, "2"), true, "2"},
		{"25% of 10 rounds down to 2", set(10, "25%"), true, "2"},
		{"10% of 3 rounds down to 0, raised to 1", set(3, "10%"), true, "1"},
		{"maxUnavailable 0 is raised to 1", set(3, "0"), true, "1"},
		{"gate off: maxUnavailable 2 is ignored, as upstream", set(5, "2"), false, "nil"},
		{"gate off without the field: nil", set(5, ""), false, "nil"},
		{"a percentage that does not parse is an error", set(5, "x%"), true, "error"},
	}
	for _, tt := range tests {
		got, err := StatefulSetMaxUnavailable(tt.set, tt.gateOn)
		s := "nil"
		switch {
		case err != nil:
			s = "error"
		case got != nil:
			s = fmt.Sprint(*got)
		}
		if s != tt.want {
			t.Errorf("%s: got %s (%v), want %s", tt.name, s, err, tt.want)
		}
	}
}
