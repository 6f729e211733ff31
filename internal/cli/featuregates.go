package cli

import (
	"fmt"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/gates"
)

// parseFeatureGates reads a --feature-gates value as every kroll command that takes
// one reads it (kroll up, kroll controller-manager, kroll rollout plan): the form of
// Kubernetes components' flag (gates.Parse), checked against Kubernetes' own list of
// gates (a name it does not have, or a locked gate set the other way, is refused as
// kube-apiserver would refuse it). Every error is one line starting --feature-gates.
func parseFeatureGates(v string) (map[string]bool, error) {
	set, err := gates.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("--feature-gates: %w", err)
	}
	if err := cluster.ValidateFeatureGates(set); err != nil {
		return nil, err
	}
	return set, nil
}
