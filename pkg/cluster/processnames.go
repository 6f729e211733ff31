package cluster

import (
	"context"
	"errors"
	"sync"
	"time"
	_ "unsafe" // for go:linkname

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// Two upstream components claim names that are unique per process as they start:
// kube-controller-manager its /configz entry and its client-go informer name,
// kube-scheduler its /configz entry. A second claim of a name still held fails: the
// scheduler's and the controller manager's /configz claims return an error, and a
// second informer name makes kube-controller-manager exit the whole process. So that
// clusters can run side by side in one process (the end-to-end tests run several at
// once) and a cluster can be stopped and started again, every claim goes through
// claimNames, one at a time: it releases the names from their holders, starts the
// component and waits until the component holds them; and a component that claims
// them stops only between claims (stopsBetweenClaims). A holder loses nothing it uses:
// the components run without a serving port, so no /configz is served, and an informer
// name only labels the informers' metrics.

// processNames are the names one component claims.
type processNames struct {
	configz  string // its /configz entry
	informer string // its client-go informer name, or ""
}

var (
	controllerManagerNames = processNames{configz: kcmapp.ConfigzName, informer: "kube-controller-manager"}
	schedulerNames         = processNames{configz: "componentconfig"}
)

// claiming serializes claimNames.
var claiming sync.Mutex

// claimTimeout bounds how long a component may take to claim its names: the controller
// manager claims its informer name once it has reached the API server.
const claimTimeout = 2 * time.Minute

// claimNames releases names, calls start, which starts a component claiming them, and
// returns once the component holds them. It fails if the component stops first
// (stopped is closed), ctx ends or claimTimeout passes; the component is then still the
// caller's to stop.
func claimNames(ctx context.Context, names processNames, start func() (stopped <-chan struct{})) error {
	claiming.Lock()
	defer claiming.Unlock()
	names.release()
	stopped := start()
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-stopped:
			return false, errors.New("stopped before it had started")
		default:
			return names.held(), nil
		}
	})
}

// stopsBetweenClaims wraps a component that claims names so that it stops, once ctx
// ends, only while no claim is under way. A kube-controller-manager that stops releases
// its informer name by name (its informer factory's Shutdown): if another component had
// claimed the name meanwhile, the release would take it from that new holder, whose
// claim would then never show and time out, and the new holder's own stop would do the
// same to the next.
func stopsBetweenClaims(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		done, exited := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(exited)
			select {
			case <-ctx.Done():
				// Held from the stop until run has returned, its names released.
				claiming.Lock()
				defer claiming.Unlock()
				cancel()
				<-done
			case <-done:
			}
		}()
		err := run(runCtx)
		close(done)
		<-exited
		return err
	}
}

func (n processNames) release() {
	configz.Delete(n.configz)
	if n.informer != "" {
		informerNameRegistry.Lock()
		name := informerNameRegistry.names[n.informer]
		informerNameRegistry.Unlock()
		name.Release() // nil-safe
	}
}

func (n processNames) held() bool {
	configzGuard.RLock()
	_, held := configzConfigs[n.configz]
	configzGuard.RUnlock()
	if n.informer != "" {
		informerNameRegistry.Lock()
		_, informer := informerNameRegistry.names[n.informer]
		informerNameRegistry.Unlock()
		held = held && informer
	}
	return held
}

// The registries themselves: client-go's informer names (a released name leaves it) and
// component-base's /configz entries. Neither package says whether a name is held.
//
//go:linkname informerNameRegistry k8s.io/client-go/tools/cache.informerNameRegistry
var informerNameRegistry struct {
	sync.Mutex
	names map[string]*cache.InformerName
}

//go:linkname configzGuard k8s.io/component-base/configz.configsGuard
var configzGuard sync.RWMutex

//go:linkname configzConfigs k8s.io/component-base/configz.configs
var configzConfigs map[string]*configz.Config
