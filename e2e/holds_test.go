package e2e

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// holdsFor checks cond every poll for the whole window, from now, and fails t the
// first time it does not hold, with what cond last said. It stands where a test would
// sleep and look once ("and it stays so"): a state that holds at the end of a window
// may have left and come back within it, and one that only holds at its start may
// never be looked at. It returns once the window is over.
func holdsFor(t testing.TB, window, poll time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	// A check is not bounded by the window: one in flight at its end finishes.
	ctx, cancel := context.WithTimeout(context.Background(), window+time.Minute)
	defer cancel()
	began := time.Now()
	for checks := 1; ; checks++ {
		ok, state := cond(ctx)
		if !ok {
			t.Fatalf("%s did not hold for %s: after %s (check %d), %s", what, window, time.Since(began).Round(time.Millisecond), checks, state)
		}
		if time.Since(began) >= window {
			return
		}
		time.Sleep(min(poll, window-time.Since(began)))
	}
}

// podHolds is holdsFor of pred on pod namespace/name, polled every 100ms: the pod must
// exist and pred hold of it for the whole window.
func podHolds(t testing.TB, client kubernetes.Interface, namespace, name string, window time.Duration, what string, pred func(*corev1.Pod) bool) {
	t.Helper()
	holdsFor(t, window, 100*time.Millisecond, "pod "+name+" "+what, func(ctx context.Context) (bool, string) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pred(p), podState(p)
	})
}

func TestHoldsFor(t *testing.T) {
	t.Parallel()
	t.Run("a state that holds throughout", func(t *testing.T) {
		t.Parallel()
		checks := 0
		began := time.Now()
		holdsFor(t, 300*time.Millisecond, 50*time.Millisecond, "the state", func(context.Context) (bool, string) {
			checks++
			return true, ""
		})
		if elapsed := time.Since(began); elapsed < 300*time.Millisecond || checks < 5 {
			t.Errorf("returned after %s and %d checks; want the whole 300ms window, polled every 50ms", elapsed, checks)
		}
	})
	t.Run("a state that leaves within the window and comes back", func(t *testing.T) {
		t.Parallel()
		var failed bool
		fake := &fatalRecorder{TB: t, failed: &failed}
		began := time.Now()
		done := make(chan struct{})
		go func() { // Fatalf ends the goroutine, as it ends a test
			defer close(done)
			holdsFor(fake, 400*time.Millisecond, 20*time.Millisecond, "the state", func(context.Context) (bool, string) {
				elapsed := time.Since(began)
				return elapsed < 100*time.Millisecond || elapsed > 200*time.Millisecond, "gone"
			})
		}()
		<-done
		if !failed {
			t.Error("a state gone from 100ms to 200ms of a 400ms window passed")
		}
	})
}

// fatalRecorder is a testing.TB whose Fatalf records the failure and ends the
// goroutine instead of failing the test.
type fatalRecorder struct {
	testing.TB
	failed *bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	*f.failed = true
	runtime.Goexit()
}
