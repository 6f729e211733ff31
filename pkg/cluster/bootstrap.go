package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The API server's bootstrap: how many clusters of this process bootstrap at once, and
// why a cluster is not stopped under its post-start hooks.

// bootstrapSlots bounds how many clusters of this process start their API servers at
// once. An API server's post-start hooks have fixed deadlines, and a missed one ends the
// process (rbac/bootstrap-roles gives itself 30 s to create the default roles): on two
// cores, several API servers bootstrapping at once beside other work can miss it.
// "Ready" (/readyz) comes after every hook has run.
var bootstrapSlots = make(chan struct{}, 2)

// bootstrapSlot waits for one of bootstrapSlots and returns its release, which may be
// called more than once.
func bootstrapSlot(ctx context.Context) (release func(), err error) {
	select {
	case bootstrapSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another cluster of this process to start: %w", ctx.Err())
	}
	var once sync.Once
	return func() { once.Do(func() { <-bootstrapSlots }) }, nil
}

// awaitBootstrap waits, at most bootstrapTimeout, for an API server still running its
// post-start hooks to finish them. A hook that fails ends the process
// (k8s.io/apiserver's runPostStartHook calls klog.Fatalf), and a hook fails when its
// server is stopped under it ("crd-informer-synced": context canceled): a Start
// interrupted by its caller — `kroll bench` on SIGINT — would exit there, before the
// caller could say what it kept. The hooks need seconds; a failed component or a
// server that does not come up within the bound is stopped anyway.
func (c *Cluster) awaitBootstrap() {
	if !c.bootstrapping.Load() || c.Client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootstrapTimeout)
	defer cancel()
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return c.Err() != nil || c.apiReady(ctx), nil
	})
}

// bootstrapTimeout bounds awaitBootstrap: rbac/bootstrap-roles, the slowest hook, gives
// itself 30 s.
const bootstrapTimeout = 30 * time.Second

// apiReady: the API server answers /readyz with 200, every post-start hook done.
func (c *Cluster) apiReady(ctx context.Context) bool {
	status := 0
	c.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
	return status == 200
}
