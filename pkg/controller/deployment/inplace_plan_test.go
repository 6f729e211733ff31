package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// inPlacePass is a pass of a Deployment of 10 (surge 3, unavailable 2) moving from
// nginx:1.25 to nginx:1.26 with mode (an empty mode: not opted in), the new ReplicaSet
// existing when withNew, with verdict when judged.
func inPlacePassOf(mode inplace.Mode, withNew, judged bool, verdict inplace.Verdict) *pass {
	d := newDeployment(10, "nginx:1.26", "3", "2")
	d.Annotations = map[string]string{}
	if mode != "" {
		d.Annotations[inplace.StrategyAnnotation] = string(mode)
	}
	rss := []*appsv1.ReplicaSet{replicaSetOf(d, "nginx:1.25", 1, 10, 10, time.Hour)}
	if withNew {
		rss = append(rss, replicaSetOf(d, "nginx:1.26", 2, 0, 0, time.Minute))
	}
	p := newPass(d, rss)
	p.judged, p.verdict = judged, verdict
	return p
}

func TestHandOverSettings(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	proceeds := inplace.Verdict{Reason: inplace.ReasonInPlace}
	rolls := inplace.Verdict{Reason: inplace.ReasonFallback}
	tests := []struct {
		name              string
		p                 *pass
		wantInPlace, only bool
	}{
		{"not opted in: nothing in place", inPlacePassOf("", true, false, inplace.Verdict{}), false, false},
		{"opted in, no new ReplicaSet yet: nothing to hand over to", inPlacePassOf(inplace.IfPossible, false, false, inplace.Verdict{}), false, false},
		{"opted in, nothing judged (no old pods): in place, to put arrived pods back", inPlacePassOf(inplace.IfPossible, true, false, inplace.Verdict{}), true, false},
		{"opted in, the verdict proceeds: in place", inPlacePassOf(inplace.IfPossible, true, true, proceeds), true, false},
		{"IfPossible, the change cannot be made in place: the rolling update", inPlacePassOf(inplace.IfPossible, true, true, rolls), false, false},
		{"InPlaceOnly, proceeds: in place, only in place", inPlacePassOf(inplace.Only, true, true, proceeds), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.staged = staging.Decision{Partition: 4}
			v := handOverSettings(tt.p, true, now)
			if v.InPlace != tt.wantInPlace || v.OnlyInPlace != tt.only {
				t.Errorf("InPlace %v, OnlyInPlace %v; want %v, %v", v.InPlace, v.OnlyInPlace, tt.wantInPlace, tt.only)
			}
			if v.Desired != 10 || v.MaxUnavailable != 2 || v.Partition != 4 || !v.Start || !v.Now.Equal(now) || v.TakenOut == nil {
				t.Errorf("desired %d, maxUnavailable %d, partition %d, start %v, now %v, takenOut %v; want 10, 2, 4, true, %v, an empty set",
					v.Desired, v.MaxUnavailable, v.Partition, v.Start, v.Now, v.TakenOut, now)
			}
		})
	}
}

func TestInPlaceOutcome(t *testing.T) {
	blocked := inplace.Verdict{Reason: inplace.ReasonBlocked}
	complete := func(p *pass) *pass {
		p.d.Status.Replicas, p.d.Status.UpdatedReplicas, p.d.Status.AvailableReplicas = 10, 10, 10
		p.d.Status.ObservedGeneration = p.d.Generation
		return p
	}
	tests := []struct {
		name                 string
		p                    *pass
		inPlace, acted       bool
		wantHandled, cleanup bool
	}{
		{"in place, wrote something: handled, no clean-up yet", complete(inPlacePassOf(inplace.IfPossible, true, false, inplace.Verdict{})), true, true, true, false},
		{"in place, nothing written, complete: handled, old ReplicaSets cleaned up", complete(inPlacePassOf(inplace.IfPossible, true, false, inplace.Verdict{})), true, false, true, true},
		{"in place, nothing written, not complete: handled", inPlacePassOf(inplace.IfPossible, true, false, inplace.Verdict{}), true, false, true, false},
		{"InPlaceOnly blocked: handled (the rolling update must not run), nothing cleaned", inPlacePassOf(inplace.Only, true, true, blocked), false, false, true, false},
		{"not in place: the rolling update runs", inPlacePassOf("", true, false, inplace.Verdict{}), false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handled, cleanup := inPlaceOutcome(tt.p, tt.inPlace, tt.acted)
			if handled != tt.wantHandled || cleanup != tt.cleanup {
				t.Errorf("handled %v, cleanup %v; want %v, %v", handled, cleanup, tt.wantHandled, tt.cleanup)
			}
		})
	}
}

func TestStatusHold(t *testing.T) {
	since := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		recording bool
		after     time.Duration
		hold      bool
		left      time.Duration
	}{
		{"no pick half recorded: the status goes", false, 0, false, 0},
		{"half recorded, first pass: held a second", true, 0, true, time.Second},
		{"half recorded, held 0.3 s: 0.7 s left", true, 300 * time.Millisecond, true, 700 * time.Millisecond},
		{"half recorded, held 1 s: the status goes as it is", true, time.Second, false, 0},
		{"half recorded, held 5 s: it goes every pass", true, 5 * time.Second, false, -4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hold, left := statusHold(tt.recording, since, since.Add(tt.after))
			if hold != tt.hold || left != tt.left {
				t.Errorf("hold %v, left %v; want %v, %v", hold, left, tt.hold, tt.left)
			}
		})
	}
}
