package cluster

import (
	"runtime/debug"
	"strings"
	_ "unsafe" // for go:linkname

	"k8s.io/component-base/version"
)

// The embedded components report their version from these variables, which the
// Kubernetes build stamps with -ldflags. A plain `go build` or `go run` leaves them at
// "v0.0.0-master"; kroll sets them at start-up to the version of the k8s.io/kubernetes
// module it was built from, so the API server reports a real version to kubectl.
var (
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
	gitTreeState string
)

// fallbackKubernetesVersion is used when the build carries no module information (a
// test binary's has none of its dependencies). A variable, not a constant, so that a
// test can build kroll with it set to something else (-ldflags -X) and see the module's
// version reported instead; a unit test keeps it equal to go.mod's.
var fallbackKubernetesVersion = "v1.36.3"

// KubernetesVersion is the version of the embedded Kubernetes components, "v1.36.3".
var KubernetesVersion = kubernetesModuleVersion(debug.ReadBuildInfo())

// kubernetesModuleVersion is the version of k8s.io/kubernetes among the build's
// dependencies, or fallbackKubernetesVersion when the build lists no release of it.
func kubernetesModuleVersion(info *debug.BuildInfo, ok bool) string {
	if ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" && strings.HasPrefix(dep.Version, "v1.") {
				return dep.Version
			}
		}
	}
	return fallbackKubernetesVersion
}

func init() {
	if !strings.HasPrefix(gitVersion, "v0.0.0") {
		return // stamped by the build; keep it
	}
	gitVersion, gitTreeState = KubernetesVersion, "clean"
	parts := strings.SplitN(strings.TrimPrefix(KubernetesVersion, "v"), ".", 3)
	if len(parts) >= 2 {
		gitMajor, gitMinor = parts[0], parts[1]
	}
	// Get() reads the git version from an atomic copy taken at its package's init; the
	// setter accepts it now that the default it validates against is the same version.
	if err := version.SetDynamicVersion(KubernetesVersion); err != nil {
		panic(err)
	}
}
