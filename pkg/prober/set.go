package prober

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event is an event the kubelet posts about a container's probes.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string // Unhealthy, Killing
	Message string
}

// Set is the probes of one container instance: startup, liveness and readiness, each
// nil when the container has none. A restarted container gets a new Set.
type Set struct {
	kinds  [3]Kind
	probes [3]*corev1.Probe
	timing [3]Timing
	state  [3]State
}

// Status is what a container's probes say.
type Status struct {
	// Started: the startup probe has passed, or there is none.
	Started bool
	// Ready: started, and the readiness probe reports Success (or there is none).
	Ready bool
	// Kill is the Killing event's message when a liveness or startup probe failed and
	// the container must be killed and restarted; empty otherwise. KilledBy is that
	// probe (Liveness or Startup) and KilledAt the run that decided it.
	Kill     string
	KilledBy Kind
	KilledAt time.Time
}

// NewSet is c's probes for an instance started at started.
func NewSet(c *corev1.Container, started time.Time) *Set {
	s := &Set{kinds: [3]Kind{Startup, Liveness, Readiness}, probes: [3]*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe}}
	for i, p := range s.probes {
		if p != nil {
			s.timing[i] = TimingOf(p)
			s.state[i] = NewState(s.kinds[i], s.timing[i], started)
		}
	}
	return s
}

// Empty tells a container without probes.
func (s *Set) Empty() bool { return s.probes == [3]*corev1.Probe{} }

// Resume moves every probe due before now to now: the probes of an instance that was
// already running when it was first seen (a restarted node) start at once, as a
// restarted kubelet's do, rather than replaying the runs it missed.
func (s *Set) Resume(now time.Time) {
	for i := range s.state {
		if d := s.state[i].Due; s.probes[i] != nil && !d.IsZero() && d.Before(now) {
			s.state[i].Due = now
		}
	}
}

// Status is what the probes report now.
func (s *Set) Status(container string) Status {
	st := Status{Started: s.probes[0] == nil || s.state[0].Result == Success}
	st.Ready = st.Started && (s.probes[2] == nil || s.state[2].Result == Success)
	for i := 0; i < 2; i++ {
		if s.probes[i] != nil && s.state[i].Result == Failure {
			st.Ready = false
			st.Kill = fmt.Sprintf("Container %s failed %s probe, will be restarted", container, lower(s.kinds[i]))
			st.KilledBy, st.KilledAt = s.kinds[i], s.state[i].Changed
		}
	}
	return st
}

func lower(k Kind) string {
	switch k {
	case Startup:
		return "startup"
	case Liveness:
		return "liveness"
	}
	return "readiness"
}

// Next is when a probe next runs; ok false when none will (no probes, or all hold).
func (s *Set) Next() (time.Time, bool) {
	var next time.Time
	for i := range s.probes {
		if d := s.state[i].Due; s.probes[i] != nil && !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// maxRunsPerAdvance bounds the runs one Advance catches up on: a caller far behind
// (a paused process) resumes with the probes' current period rather than replaying
// every missed run.
const maxRunsPerAdvance = 64

// Advance runs every probe due by now, in time order, against t (container c of a pod
// at podIP): the events the runs produced and whether the Status changed. Probes are
// gated as the kubelet gates them: the startup probe runs until it has passed, liveness
// and readiness only after; a gated probe's run is skipped, not deferred.
func (s *Set) Advance(now time.Time, c *corev1.Container, podIP string, t Target) (events []Event, changed bool) {
	before := s.Status(c.Name)
	for n := 0; n < maxRunsPerAdvance; n++ {
		i, due := s.earliest()
		if i < 0 || due.After(now) {
			break
		}
		started := s.probes[0] == nil || s.state[0].Result == Success
		if (s.kinds[i] == Startup) == started {
			s.state[i].Due = due.Add(s.timing[i].Period)
			continue
		}
		out := Run(s.probes[i], c, podIP, t, due)
		if out.Result == Failure {
			msg := fmt.Sprintf("%s probe failed: %s", s.kinds[i], out.Output)
			if out.Errored {
				msg = fmt.Sprintf("%s probe errored and resulted in unknown state: %s", s.kinds[i], out.Output)
			}
			events = append(events, Event{Type: corev1.EventTypeWarning, Reason: "Unhealthy", Message: msg})
		}
		var flipped bool
		s.state[i], flipped = s.state[i].Observe(s.kinds[i], s.timing[i], out.Result, due)
		if flipped && out.Result == Failure && s.kinds[i] != Readiness {
			events = append(events, Event{Type: corev1.EventTypeNormal, Reason: "Killing", Message: s.Status(c.Name).Kill})
			break // the container is killed: no more probes of this instance
		}
	}
	if i, due := s.earliest(); i >= 0 && now.Sub(due) > s.timing[i].Period {
		s.Resume(now)
	}
	return events, s.Status(c.Name) != before
}

// earliest is the probe due first (-1 when none is scheduled).
func (s *Set) earliest() (int, time.Time) {
	best, at := -1, time.Time{}
	for i := range s.probes {
		if d := s.state[i].Due; s.probes[i] != nil && !d.IsZero() && (best < 0 || d.Before(at)) {
			best, at = i, d
		}
	}
	return best, at
}
