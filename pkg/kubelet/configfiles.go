package kubelet

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// A container's configuration as a node gives it: its environment (plain values,
// envFrom and env[].valueFrom of ConfigMaps and Secrets) and the files its ConfigMap,
// Secret and projected volumes mount, read from the objects when the container starts
// (an exec or a log read of an instance started earlier reads them then too: the
// objects kroll's configuration rollout gives pods are immutable snapshots, so the
// difference does not show). A pod whose volume mounts a ConfigMap or Secret that does
// not exist (and is not optional) is held back by the volume gate (volumes.go:
// FailedMount, ContainerCreating) until it does, as a real kubelet holds it. A
// container whose environment names a ConfigMap or Secret, or a key of one, that does
// not exist (and is not optional) is not created: it waits in CreateContainerConfigError
// with the kubelet's message (envConfigError) until the object or key appears.

// configLookup reads ConfigMaps and Secrets (from the kubelet's caches); a nil func
// finds nothing.
type configLookup struct {
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
}

func (l configLookup) configMap(ns, name string) map[string]string {
	if l.configMaps == nil {
		return nil
	}
	cm, err := l.configMaps.ConfigMaps(ns).Get(name)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = v
	}
	for k, v := range cm.BinaryData {
		out[k] = string(v)
	}
	return out
}

func (l configLookup) secret(ns, name string) map[string]string {
	if l.secrets == nil {
		return nil
	}
	s, err := l.secrets.Secrets(ns).Get(name)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// containerConfig is c's environment and mounted configuration files in pod.
// Environment: envFrom first (each source's keys, with its prefix), then env in order,
// a later value replacing an earlier one, as the kubelet builds it.
func containerConfig(pod *corev1.Pod, c *corev1.Container, look configLookup) (env, files map[string]string) {
	env = map[string]string{}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			data = look.configMap(pod.Namespace, from.ConfigMapRef.Name)
		case from.SecretRef != nil:
			data = look.secret(pod.Namespace, from.SecretRef.Name)
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			if v, ok := look.configMap(pod.Namespace, e.ValueFrom.ConfigMapKeyRef.Name)[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
				env[e.Name] = v
			}
		case e.ValueFrom.SecretKeyRef != nil:
			if v, ok := look.secret(pod.Namespace, e.ValueFrom.SecretKeyRef.Name)[e.ValueFrom.SecretKeyRef.Key]; ok {
				env[e.Name] = v
			}
		}
	}
	files = map[string]string{}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			continue
		}
		vol := volumeFiles(pod.Namespace, &pod.Spec.Volumes[i], look)
		if m.SubPath != "" {
			if v, ok := vol[m.SubPath]; ok {
				files[m.MountPath] = v
			}
			continue
		}
		for rel, v := range vol {
			files[path.Join(m.MountPath, rel)] = v
		}
	}
	return env, files
}

// envConfigError is why a kubelet cannot build c's environment in pod, in its words and
// in its order (envFrom sources, then env): `configmap "x" not found`, `couldn't find
// key k in ConfigMap ns/x`, and the same of Secrets. "" when it can, or when look cannot
// tell (no caches).
func envConfigError(pod *corev1.Pod, c *corev1.Container, look configLookup) string {
	if look.configMaps == nil || look.secrets == nil {
		return ""
	}
	opt := func(b *bool) bool { return b != nil && *b }
	// source checks one reference: the object's data, or the message naming what is missing.
	source := func(kind, name, key string, optional bool) string {
		var data map[string]string
		if kind == "ConfigMap" {
			data = look.configMap(pod.Namespace, name)
		} else {
			data = look.secret(pod.Namespace, name)
		}
		switch {
		case optional:
			return ""
		case data == nil:
			return fmt.Sprintf("%s %q not found", strings.ToLower(kind), name)
		case key == "":
			return ""
		}
		if _, ok := data[key]; !ok {
			return fmt.Sprintf("couldn't find key %s in %s %s/%s", key, kind, pod.Namespace, name)
		}
		return ""
	}
	var problems []string
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			problems = append(problems, source("ConfigMap", from.ConfigMapRef.Name, "", opt(from.ConfigMapRef.Optional)))
		case from.SecretRef != nil:
			problems = append(problems, source("Secret", from.SecretRef.Name, "", opt(from.SecretRef.Optional)))
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			problems = append(problems, source("ConfigMap", ref.Name, ref.Key, opt(ref.Optional)))
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			problems = append(problems, source("Secret", ref.Name, ref.Key, opt(ref.Optional)))
		}
	}
	for _, p := range problems {
		if p != "" {
			return p
		}
	}
	return ""
}

// volumeFiles are the files of a ConfigMap, Secret or projected volume, by path in
// the volume: every key, or the items listed.
func volumeFiles(ns string, v *corev1.Volume, look configLookup) map[string]string {
	out := map[string]string{}
	add := func(data map[string]string, items []corev1.KeyToPath) {
		if len(items) == 0 {
			for k, val := range data {
				out[k] = val
			}
			return
		}
		for _, it := range items {
			if val, ok := data[it.Key]; ok {
				out[it.Path] = val
			}
		}
	}
	switch {
	case v.ConfigMap != nil:
		add(look.configMap(ns, v.ConfigMap.Name), v.ConfigMap.Items)
	case v.Secret != nil:
		add(look.secret(ns, v.Secret.SecretName), v.Secret.Items)
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				add(look.configMap(ns, src.ConfigMap.Name), src.ConfigMap.Items)
			case src.Secret != nil:
				add(look.secret(ns, src.Secret.Name), src.Secret.Items)
			}
		}
	}
	return out
}

// configSource is a ConfigMap or Secret a volume mounts.
type configSource struct {
	kind, name string // "configmap" or "secret"
	optional   bool
}

// key is the source's key in the pods' claimIndex: "configmap:ns/name".
func (c configSource) key(namespace string) string { return c.kind + ":" + namespace + "/" + c.name }

// configSources are the ConfigMaps and Secrets volume v mounts (projected sources too).
func configSources(v *corev1.Volume) []configSource {
	opt := func(b *bool) bool { return b != nil && *b }
	var out []configSource
	switch {
	case v.ConfigMap != nil:
		out = append(out, configSource{"configmap", v.ConfigMap.Name, opt(v.ConfigMap.Optional)})
	case v.Secret != nil:
		out = append(out, configSource{"secret", v.Secret.SecretName, opt(v.Secret.Optional)})
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				out = append(out, configSource{"configmap", src.ConfigMap.Name, opt(src.ConfigMap.Optional)})
			}
			if src.Secret != nil {
				out = append(out, configSource{"secret", src.Secret.Name, opt(src.Secret.Optional)})
			}
		}
	}
	return out
}

// missingConfig names the first ConfigMap or Secret volume v mounts that does not
// exist and is not optional, as the kubelet's FailedMount says it (configmap "x");
// "" when none is missing, or when look cannot tell (no caches).
func missingConfig(namespace string, v *corev1.Volume, look configLookup) string {
	for _, src := range configSources(v) {
		if src.optional {
			continue
		}
		switch {
		case src.kind == "configmap" && look.configMaps != nil:
			if _, err := look.configMaps.ConfigMaps(namespace).Get(src.name); err != nil {
				return fmt.Sprintf("configmap %q", src.name)
			}
		case src.kind == "secret" && look.secrets != nil:
			if _, err := look.secrets.Secrets(namespace).Get(src.name); err != nil {
				return fmt.Sprintf("secret %q", src.name)
			}
		}
	}
	return ""
}
