// Package gates holds the Kubernetes feature gates kroll's workload controllers read,
// as upstream's controllers read them (k8s.io/kubernetes/pkg/features, v1.36): a gate
// that changes what a controller writes or how fast it rolls must change kroll's the
// same way, or a cluster whose API server has the gate off would see kroll fight it
// (a status field the API server drops, written again at every sync).
//
// The names are Kubernetes'; this package does not import Kubernetes' feature list
// (controllers stay free of k8s.io/kubernetes). Which names exist is checked where
// the gates are set: `kroll up --feature-gates` checks them against Kubernetes' list.
package gates

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The gates kroll's controllers read.
const (
	// MaxUnavailableStatefulSet: a StatefulSet's rollingUpdate.maxUnavailable takes
	// that many pods down at once. Off, the StatefulSet controller updates one pod at a
	// time whatever the field says (the API server also drops the field from sets that
	// do not use it yet). Beta and off by default in Kubernetes v1.36; on in `kroll up`.
	MaxUnavailableStatefulSet = "MaxUnavailableStatefulSet"
	// DeploymentReplicaSetTerminatingReplicas: Deployments and ReplicaSets report
	// status.terminatingReplicas. Off, the field is left out (the API server drops it
	// too). Beta and on by default in v1.36.
	DeploymentReplicaSetTerminatingReplicas = "DeploymentReplicaSetTerminatingReplicas"
)

// Gates are the gates kroll's controllers read, on or off.
type Gates struct {
	MaxUnavailableStatefulSet               bool
	DeploymentReplicaSetTerminatingReplicas bool
}

// Defaults are the gates as `kroll up` sets them for every component: Kubernetes
// v1.36's defaults, with MaxUnavailableStatefulSet on (so that the API server keeps
// the field and kroll's maxUnavailable rollouts can be tried).
func Defaults() Gates {
	return Gates{MaxUnavailableStatefulSet: true, DeploymentReplicaSetTerminatingReplicas: true}
}

// With is g with the gates of m that kroll's controllers read set as m says; other
// names are for other components and left to them.
func (g Gates) With(m map[string]bool) Gates {
	for name, on := range m {
		switch name {
		case MaxUnavailableStatefulSet:
			g.MaxUnavailableStatefulSet = on
		case DeploymentReplicaSetTerminatingReplicas:
			g.DeploymentReplicaSetTerminatingReplicas = on
		}
	}
	return g
}

// Parse reads a --feature-gates value as Kubernetes components and kind's
// featureGates do: comma-separated Name=true|false pairs ("" is none). It checks the
// form only; which names exist is the caller's to check.
//
//	MaxUnavailableStatefulSet=false,InPlacePodVerticalScalingExclusiveCPUs=true
func Parse(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not Name=true or Name=false", pair)
		}
		on, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: the value must be true or false", name, value)
		}
		if prev, dup := out[name]; dup && prev != on {
			return nil, fmt.Errorf("%s is set both true and false", name)
		}
		out[name] = on
	}
	return out, nil
}

// Format is m as Parse reads it, names sorted: "A=true,B=false".
func Format(m map[string]bool) string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, name := range names {
		pairs[i] = name + "=" + strconv.FormatBool(m[name])
	}
	return strings.Join(pairs, ",")
}
