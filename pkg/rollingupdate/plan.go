package rollingupdate

// Step is where a rolling update stands between two scaling operations: the sizes the
// two controllers are asked for, and how many of the new controller's pods serve.
type Step struct {
	// Desired is the number of replicas the update ends with, all on the new controller.
	Desired int32
	// MaxSurge is how many pods above Desired may exist; MaxUnavailable how many of
	// Desired may be unavailable (both resolved from --max-surge/--max-unavailable).
	MaxSurge, MaxUnavailable int32
	// Old and New are the controllers' spec.replicas now.
	Old, New int32
	// NewAvailable is how many of the new controller's pods are available (ready for
	// its minReadySeconds); at most New counts.
	NewAvailable int32
}

// MinAvailable is the fewest pods that must stay available: Desired − MaxUnavailable,
// not below 0. With Desired 0 nothing need stay.
func (s Step) MinAvailable() int32 {
	if s.Desired == 0 {
		return 0
	}
	return max(0, s.Desired-s.MaxUnavailable)
}

// MaxTotal is the most pods that may exist: Desired + MaxSurge.
func (s Step) MaxTotal() int32 { return s.Desired + s.MaxSurge }

// ScaleUpTo is the next size of the new controller: as far towards Desired as the surge
// allows with both controllers' sizes counted, or all the way once the old one is at 0.
// With Desired 3, surge 1: old 3 new 0 → 1; old 2 new 1 → 2; old 0 new 2 → 3.
func ScaleUpTo(s Step) int32 {
	if s.New >= s.Desired {
		return s.New
	}
	if s.Old == 0 {
		return s.Desired
	}
	room := s.MaxTotal() - (s.Old + s.New)
	if room <= 0 {
		return s.New
	}
	return min(s.New+room, s.Desired)
}

// ScaleDownTo is the next size of the old controller: as low as keeps MinAvailable pods
// available, counting the new controller's available pods and the old controller's
// pods as serving. Old pods that are not available do not lower that count when they
// go, because a ReplicationController removes unavailable pods before available ones.
// With Desired 3, unavailable 0: old 3, new 1 of which 0 available → 3 (wait);
// 1 available → 2. Once the new controller has Desired available, old goes to 0.
func ScaleDownTo(s Step) int32 {
	if s.Old == 0 {
		return 0
	}
	available := min(s.NewAvailable, s.New)
	if s.New >= s.Desired && available >= s.Desired {
		return 0
	}
	decrement := s.Old + available - s.MinAvailable()
	if decrement <= 0 {
		return s.Old
	}
	return max(0, s.Old-decrement)
}
