// Package chart holds kroll's Helm chart (the directory kroll/) and renders it with
// Helm's own Go SDK, so that tests check the manifests `helm install` would send without
// a helm binary. The chart's files are embedded: what the tests render is what ships.
package chart

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// Dir is the chart's directory, relative to this package's.
const Dir = "kroll"

// files is the chart as it ships; "all:" keeps .helmignore.
//
//go:embed all:kroll
var files embed.FS

// Load reads the embedded chart as `helm install deploy/chart/kroll` reads the directory.
func Load() (*chartv2.Chart, error) {
	var buffered []*archive.BufferedFile
	err := fs.WalkDir(files, Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		buffered = append(buffered, &archive.BufferedFile{Name: strings.TrimPrefix(p, Dir+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded chart: %w", err)
	}
	return loader.LoadFiles(buffered)
}

// Render renders the chart as release "kroll" installed into namespace with values
// over values.yaml (as `helm template kroll deploy/chart/kroll -n NAMESPACE --set …`),
// and returns the manifests by template path ("kroll/templates/rbac.yaml"), empty
// ones and NOTES.txt left out.
func Render(namespace string, values map[string]any) (map[string]string, error) {
	ch, err := Load()
	if err != nil {
		return nil, err
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "kroll", Namespace: namespace, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	manifests := map[string]string{}
	for name, text := range out {
		if path.Base(name) == "NOTES.txt" || strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(text) == "" {
			continue
		}
		manifests[name] = text
	}
	return manifests, nil
}

// Objects decodes rendered manifests into objects, in the order of their template
// paths and of the documents in each.
func Objects(manifests map[string]string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(manifests)) {
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests[name]), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj) == 0 {
				continue // a document of comments only
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out, nil
}

// YAML is the manifests as one multi-document stream, as `helm template` prints it.
func YAML(manifests map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(manifests)) {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, strings.TrimSpace(manifests[name]))
	}
	return b.String()
}
