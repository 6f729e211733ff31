package gates

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]bool
		err      string
	}{
		{"none", "", map[string]bool{}, ""},
		{"one gate off", "MaxUnavailableStatefulSet=false", map[string]bool{"MaxUnavailableStatefulSet": false}, ""},
		{"two, with spaces and a trailing comma", " A=true , B=false,", map[string]bool{"A": true, "B": false}, ""},
		{"strconv's forms, as kube's flags take them", "A=1,B=F", map[string]bool{"A": true, "B": false}, ""},
		{"the same twice agrees", "A=true,A=true", map[string]bool{"A": true}, ""},
		{"no value", "MaxUnavailableStatefulSet", nil, `"MaxUnavailableStatefulSet" is not Name=true or Name=false`},
		{"no name", "=true", nil, `"=true" is not Name=true or Name=false`},
		{"not a bool", "A=yes", nil, "A=yes: the value must be true or false"},
		{"empty value", "A=", nil, "A=: the value must be true or false"},
		{"both ways", "A=true,A=false", nil, "A is set both true and false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Parse(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestWith(t *testing.T) {
	got := Defaults().With(map[string]bool{MaxUnavailableStatefulSet: false, "SomeAPIServerGate": true})
	want := Gates{MaxUnavailableStatefulSet: false, DeploymentReplicaSetTerminatingReplicas: true}
	if got != want {
		t.Errorf("defaults with MaxUnavailableStatefulSet=false: %+v, want %+v", got, want)
	}
	if got := Defaults().With(map[string]bool{DeploymentReplicaSetTerminatingReplicas: false}); got.DeploymentReplicaSetTerminatingReplicas || !got.MaxUnavailableStatefulSet {
		t.Errorf("defaults with DeploymentReplicaSetTerminatingReplicas=false: %+v", got)
	}
}

func TestFormat(t *testing.T) {
	m := map[string]bool{"B": false, "A": true}
	if got := Format(m); got != "A=true,B=false" {
		t.Errorf("Format = %q", got)
	}
	if back, err := Parse(Format(m)); err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("Parse(Format(m)) = %v, %v", back, err)
	}
}
