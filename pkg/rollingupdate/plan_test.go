package rollingupdate

import "testing"

func TestScaleUpTo(t *testing.T) {
	tests := []struct {
		name string
		step Step
		want int32
	}{
		{"start, 3 replicas surge 1: one new pod", Step{Desired: 3, MaxSurge: 1, Old: 3, New: 0}, 1},
		{"surge used up: wait", Step{Desired: 3, MaxSurge: 1, Old: 3, New: 1}, 1},
		{"old scaled to 2: second new pod", Step{Desired: 3, MaxSurge: 1, Old: 2, New: 1}, 2},
		{"old at 0: all the way", Step{Desired: 3, MaxSurge: 1, Old: 0, New: 1}, 3},
		{"surge 3 on 10: three at once", Step{Desired: 10, MaxSurge: 3, Old: 10, New: 0}, 3},
		{"never past desired", Step{Desired: 3, MaxSurge: 5, Old: 3, New: 0}, 3},
		{"surge 0, unavailable 1: waits for old to go first", Step{Desired: 3, MaxUnavailable: 1, Old: 3, New: 0}, 0},
		{"surge 0: fills what old gave up", Step{Desired: 3, MaxUnavailable: 1, Old: 2, New: 0}, 1},
		{"already there", Step{Desired: 3, MaxSurge: 1, Old: 1, New: 3}, 3},
		{"desired 0", Step{Desired: 0, MaxSurge: 1, Old: 2, New: 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScaleUpTo(tt.step); got != tt.want {
				t.Errorf("ScaleUpTo(%+v) = %d, want %d", tt.step, got, tt.want)
			}
		})
	}
}

func TestScaleDownTo(t *testing.T) {
	tests := []struct {
		name string
		step Step
		want int32
	}{
		{"new pod not yet available: keep 3", Step{Desired: 3, MaxSurge: 1, Old: 3, New: 1}, 3},
		{"new pod available: old 3 → 2", Step{Desired: 3, MaxSurge: 1, Old: 3, New: 1, NewAvailable: 1}, 2},
		{"two available of two: old 2 → 1", Step{Desired: 3, MaxSurge: 1, Old: 2, New: 2, NewAvailable: 2}, 1},
		{"all new available: old to 0", Step{Desired: 3, MaxSurge: 1, Old: 1, New: 3, NewAvailable: 3}, 0},
		{"unavailable 1, surge 0: one old pod may go at once", Step{Desired: 3, MaxUnavailable: 1, Old: 3, New: 0}, 2},
		{"unavailable 1: a new pod not ready yet holds the rest", Step{Desired: 3, MaxUnavailable: 1, Old: 2, New: 1}, 2},
		{"25% of 8 unavailable, 2 of 4 new available: 6 must serve, old 6 → 4", Step{Desired: 8, MaxSurge: 2, MaxUnavailable: 2, Old: 6, New: 4, NewAvailable: 2}, 4},
		{"available counted at most up to new's size", Step{Desired: 3, MaxSurge: 1, Old: 3, New: 1, NewAvailable: 2}, 2},
		{"desired 0: everything may go", Step{Desired: 0, Old: 4}, 0},
		{"old already at 0", Step{Desired: 3, Old: 0, New: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScaleDownTo(tt.step); got != tt.want {
				t.Errorf("ScaleDownTo(%+v) = %d, want %d", tt.step, got, tt.want)
			}
		})
	}
}

// A whole update with surge 1 and unavailable 0, new pods available as soon as they
// exist: the sizes never exceed 4 and available pods never drop below 3.
func TestStepsKeepTheBounds(t *testing.T) {
	s := Step{Desired: 3, MaxSurge: 1, Old: 3}
	var trail []int32
	for i := 0; i < 20 && (s.New != s.Desired || s.Old != 0); i++ {
		s.New = ScaleUpTo(s)
		if s.Old+s.New > s.MaxTotal() {
			t.Fatalf("step %d: %d+%d pods, more than %d", i, s.Old, s.New, s.MaxTotal())
		}
		s.NewAvailable = s.New
		s.Old = ScaleDownTo(s)
		if s.Old+s.NewAvailable < s.MinAvailable() {
			t.Fatalf("step %d: %d available, fewer than %d", i, s.Old+s.NewAvailable, s.MinAvailable())
		}
		trail = append(trail, s.Old, s.New)
	}
	if s.New != 3 || s.Old != 0 {
		t.Fatalf("did not finish: trail %v", trail)
	}
}
