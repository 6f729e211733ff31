package statefulset

import "testing"

func TestParentAndOrdinal(t *testing.T) {
	tests := []struct {
		name    string
		parent  string
		ordinal int
		ok      bool
	}{
		{"web-0", "web", 0, true},
		{"web-12", "web", 12, true},
		{"my-web-3", "my-web", 3, true},
		{"web-007", "web", 7, true},
		{"-4", "", 4, true},
		{"web", "", 0, false},
		{"web-", "", 0, false},
		{"web-1a", "", 0, false},
		{"web-1-b", "", 0, false},
		{"web-+1", "", 0, false},
		{"web-99999999999999999999", "", 0, false}, // beyond int
	}
	for _, tt := range tests {
		parent, ordinal, ok := parentAndOrdinal(tt.name)
		if parent != tt.parent || ordinal != tt.ordinal || ok != tt.ok {
			t.Errorf("%q: got %q, %d, %v; want %q, %d, %v", tt.name, parent, ordinal, ok, tt.parent, tt.ordinal, tt.ok)
		}
	}
}
