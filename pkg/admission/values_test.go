package admission

import (
	"strconv"
	"strings"
	"testing"
)

// Every row of the table, on every kind it holds for, through the controllers' parsers:
// a valid value gives no problem; an invalid one exactly one, which names the annotation
// and its value (quoted as the policy quotes it). The policy's
// test (e2e/admission_test.go) asserts that the API server refuses the same values with
// these very lines.
func TestValuesThroughTheParsers(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Values {
		for _, kind := range v.KindsOf() {
			problems := Problems(kind, v.Annotations())
			name := kind + " " + v.Key + "=" + strconv.Quote(v.Value)
			seen[v.Key] = true
			if v.Valid {
				if len(problems) != 0 {
					t.Errorf("%s: valid in the table, but the parsers say %q", name, problems)
				}
				continue
			}
			if len(problems) != 1 {
				t.Errorf("%s: invalid in the table; want one problem, got %q", name, problems)
				continue
			}
			if p := problems[0]; !strings.HasPrefix(p, v.Key+"="+strconv.Quote(v.Value)+" is ") {
				t.Errorf("%s: problem %q does not begin with the annotation and its value", name, p)
			}
		}
	}
	// Every setting the policy checks has rows (kroll's records are not settings).
	for _, key := range Settings {
		if !seen[key] {
			t.Errorf("%s: no rows in the table", key)
		}
	}
}
