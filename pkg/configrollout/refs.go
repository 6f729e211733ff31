package configrollout

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a referenced object, as change-causes and keys spell it.
type Kind string

// The kinds a pod template references configuration by.
const (
	ConfigMap Kind = "configmap"
	Secret    Kind = "secret"
)

// Ref is one ConfigMap or Secret a pod template references.
type Ref struct {
	Kind Kind
	Name string
	// Optional is true when every reference to the object is optional: a missing
	// object then holds nothing back. One required reference makes it required.
	Optional bool
}

// Key is "configmap/app-config": the ref's key in Snapshots and in change-causes.
func (r Ref) Key() string { return string(r.Kind) + "/" + r.Name }

// Refs lists the ConfigMaps and Secrets spec references — volumes (projected sources
// included), envFrom and env[].valueFrom of its init (sidecars among them), app and
// ephemeral containers — once each, sorted by kind then name.
func Refs(spec *corev1.PodSpec) []Ref {
	seen := map[Ref]int{} // ref without Optional → index in out
	var out []Ref
	add := func(k Kind, name string, optional *bool) {
		if name == "" {
			return
		}
		opt := optional != nil && *optional
		key := Ref{Kind: k, Name: name}
		if i, ok := seen[key]; ok {
			out[i].Optional = out[i].Optional && opt
			return
		}
		seen[key] = len(out)
		out = append(out, Ref{Kind: k, Name: name, Optional: opt})
	}
	for _, v := range spec.Volumes {
		if cm := v.ConfigMap; cm != nil {
			add(ConfigMap, cm.Name, cm.Optional)
		}
		if s := v.Secret; s != nil {
			add(Secret, s.SecretName, s.Optional)
		}
		if p := v.Projected; p != nil {
			for _, src := range p.Sources {
				if cm := src.ConfigMap; cm != nil {
					add(ConfigMap, cm.Name, cm.Optional)
				}
				if s := src.Secret; s != nil {
					add(Secret, s.Name, s.Optional)
				}
			}
		}
	}
	env := func(envFrom []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, e := range envFrom {
			if cm := e.ConfigMapRef; cm != nil {
				add(ConfigMap, cm.Name, cm.Optional)
			}
			if s := e.SecretRef; s != nil {
				add(Secret, s.Name, s.Optional)
			}
		}
		for _, e := range vars {
			if e.ValueFrom == nil {
				continue
			}
			if cm := e.ValueFrom.ConfigMapKeyRef; cm != nil {
				add(ConfigMap, cm.Name, cm.Optional)
			}
			if s := e.ValueFrom.SecretKeyRef; s != nil {
				add(Secret, s.Name, s.Optional)
			}
		}
	}
	for _, c := range spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	slices.SortFunc(out, func(a, b Ref) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Substitute makes spec reference the snapshot names snaps gives (keyed by Ref.Key)
// instead of the objects' own names, in every place Refs reads; references snaps does
// not name are left alone. It changes spec in place.
func Substitute(spec *corev1.PodSpec, snaps Snapshots) {
	if len(snaps) == 0 {
		return
	}
	name := func(k Kind, n string) string {
		if s, ok := snaps[string(k)+"/"+n]; ok && s.Name != "" {
			return s.Name
		}
		return n
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if cm := v.ConfigMap; cm != nil {
			cm.Name = name(ConfigMap, cm.Name)
		}
		if s := v.Secret; s != nil {
			s.SecretName = name(Secret, s.SecretName)
		}
		if p := v.Projected; p != nil {
			for j := range p.Sources {
				if cm := p.Sources[j].ConfigMap; cm != nil {
					cm.Name = name(ConfigMap, cm.Name)
				}
				if s := p.Sources[j].Secret; s != nil {
					s.Name = name(Secret, s.Name)
				}
			}
		}
	}
	env := func(envFrom []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for i := range envFrom {
			if cm := envFrom[i].ConfigMapRef; cm != nil {
				cm.Name = name(ConfigMap, cm.Name)
			}
			if s := envFrom[i].SecretRef; s != nil {
				s.Name = name(Secret, s.Name)
			}
		}
		for i := range vars {
			vf := vars[i].ValueFrom
			if vf == nil {
				continue
			}
			if cm := vf.ConfigMapKeyRef; cm != nil {
				cm.Name = name(ConfigMap, cm.Name)
			}
			if s := vf.SecretKeyRef; s != nil {
				s.Name = name(Secret, s.Name)
			}
		}
	}
	for i := range spec.InitContainers {
		env(spec.InitContainers[i].EnvFrom, spec.InitContainers[i].Env)
	}
	for i := range spec.Containers {
		env(spec.Containers[i].EnvFrom, spec.Containers[i].Env)
	}
	for i := range spec.EphemeralContainers {
		env(spec.EphemeralContainers[i].EnvFrom, spec.EphemeralContainers[i].Env)
	}
}
