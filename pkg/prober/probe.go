package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is which probe: the word the kubelet starts its messages with.
type Kind string

const (
	Startup   Kind = "Startup"
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
)

// Timing is a probe's schedule and thresholds, with the API's defaults for fields left
// zero (period 10s, timeout 1s, success and failure thresholds 1 and 3).
type Timing struct {
	InitialDelay     time.Duration
	Period           time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// TimingOf is p's timing with defaults applied.
func TimingOf(p *corev1.Probe) Timing {
	t := Timing{
		InitialDelay:     time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second,
		Period:           time.Duration(p.PeriodSeconds) * time.Second,
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if t.Period <= 0 {
		t.Period = 10 * time.Second
	}
	if t.SuccessThreshold <= 0 {
		t.SuccessThreshold = 1
	}
	if t.FailureThreshold <= 0 {
		t.FailureThreshold = 3
	}
	return t
}

// State is one probe of one container instance. The kubelet's rules, in its order:
//   - The result starts as Failure for readiness (not ready until a probe passes),
//     Success for liveness (alive until proven dead) and Unknown for startup.
//   - The probe first runs InitialDelay after the container started, then every Period.
//   - A result is reported only after SuccessThreshold consecutive successes or
//     FailureThreshold consecutive failures (a run of equal results).
//   - Once a liveness probe reports Failure (the container will be killed) or a startup
//     probe reports anything, the probe holds: it runs no more for this instance. A
//     restarted container is a new instance with a new State.
//
// Worked numbers: liveness with initialDelay 5s, period 10s, failureThreshold 3 on a
// container started at 0 that always fails runs at 5s, 15s and 25s, and reports
// Failure at 25s. Readiness with initialDelay 20s that always passes reports Success at
// 20s, not before.
type State struct {
	Result Result    // the reported result
	Due    time.Time // when the probe next runs; zero while it holds
	// Changed is the run at which Result last changed; zero while it has not.
	Changed time.Time
	last    Result // the last run's result
	run     int    // how many runs in a row gave last
}

// NewState is kind's probe of an instance started at started.
func NewState(kind Kind, t Timing, started time.Time) State {
	s := State{Due: started.Add(t.InitialDelay)}
	switch kind {
	case Readiness:
		s.Result = Failure
	case Liveness:
		s.Result = Success
	}
	return s
}

// Observe records a run's result r at now (the run that was Due): the next state and
// whether the reported result changed.
func (s State) Observe(kind Kind, t Timing, r Result, now time.Time) (State, bool) {
	next := s.Due.Add(t.Period)
	if !next.After(now) {
		next = now.Add(t.Period) // the caller ran late: keep the period from now
	}
	s.Due = next
	if r == s.last {
		s.run++
	} else {
		s.last, s.run = r, 1
	}
	if (r == Failure && s.run < t.FailureThreshold) || (r == Success && s.run < t.SuccessThreshold) {
		return s, false
	}
	changed := s.Result != r
	s.Result = r
	if changed {
		s.Changed = now
	}
	if (kind == Liveness && r == Failure) || kind == Startup {
		s.Due, s.run = time.Time{}, 0
	}
	return s, changed
}
