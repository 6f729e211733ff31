package cluster

import (
	"sync"
	_ "unsafe" // for go:linkname

	"k8s.io/client-go/tools/cache"
)

// kube-controller-manager reserves the informer name "kube-controller-manager" in a
// process-wide registry of client-go and never releases it, so a second
// kube-controller-manager in the same process (a cluster stopped and started again in
// one test binary) fails with "informer name ... is already registered".
// releaseInformerName frees the name once the previous controller manager has stopped.
//
//go:linkname informerNameRegistry k8s.io/client-go/tools/cache.informerNameRegistry
var informerNameRegistry struct {
	sync.Mutex
	names map[string]*cache.InformerName
}

func releaseInformerName(name string) {
	informerNameRegistry.Lock()
	n := informerNameRegistry.names[name]
	informerNameRegistry.Unlock()
	n.Release() // nil-safe
}
