package failpoint

import (
	"testing"
	"time"
)

// Given KROLL_FAILPOINTS naming a failpoint, Hit stops there only once Arm has read it:
// a process that never calls Arm (the kroll command) runs through.
func TestHit_onlyArmedFailpointsStop(t *testing.T) {
	t.Setenv(EnvVar, "rolling-update/mid-scale")
	armed = nil
	t.Cleanup(func() { armed = nil })
	done := make(chan struct{})
	go func() { Hit("rolling-update/mid-scale"); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Hit stopped at a failpoint nothing armed")
	}
	Arm()
	if !armed["rolling-update/mid-scale"] || len(armed) != 1 {
		t.Errorf("Arm armed %v, want the one failpoint the variable names", armed)
	}
}
