package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/rolloutplan"
)

// fieldManager is who the plan's server-side dry run applies as.
const fieldManager = "kroll-rollout-plan"

// readManifest reads one workload manifest (YAML or JSON) from path, or stdin for "-".
func readManifest(path string, stdin io.Reader) (*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s is not a valid manifest: %w", path, err)
		}
		if len(u.Object) > 0 {
			docs = append(docs, u)
		}
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s holds %d objects: a plan is for one Deployment, StatefulSet or DaemonSet", path, len(docs))
	}
	return docs[0], nil
}

// manifestRef names the workload a manifest holds.
func manifestRef(u *unstructured.Unstructured, namespace string) (workloadRef, error) {
	gvk := u.GroupVersionKind()
	if gvk.Group != appsv1.GroupName || gvk.Version != "v1" {
		return workloadRef{}, fmt.Errorf("holds %s %q: a plan is for apps/v1 Deployments, StatefulSets and DaemonSets", u.GetAPIVersion()+" "+u.GetKind(), u.GetName())
	}
	kind, ok := kindAliases[strings.ToLower(gvk.Kind)]
	if !ok {
		return workloadRef{}, fmt.Errorf("holds a %s: a plan is for Deployments, StatefulSets and DaemonSets", gvk.Kind)
	}
	if u.GetName() == "" {
		return workloadRef{}, fmt.Errorf("the %s has no metadata.name", gvk.Kind)
	}
	if ns := u.GetNamespace(); ns != "" {
		namespace = ns
	}
	return workloadRef{kind: kind, namespace: namespace, name: u.GetName()}, nil
}

// dryRunApply is the workload as the API server would store it with the manifest
// applied (server-side apply, forced, dry run): defaults filled in, nothing written.
func (r workloadRef) dryRunApply(ctx context.Context, client kubernetes.Interface, u *unstructured.Unstructured) (runtime.Object, error) {
	u = u.DeepCopy()
	u.SetNamespace(r.namespace)
	u.SetResourceVersion("")
	u.SetManagedFields(nil)
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager, Force: &force}
	apps := client.AppsV1()
	switch r.kind {
	case kindDeployment:
		return apps.Deployments(r.namespace).Patch(ctx, r.name, types.ApplyPatchType, data, opts)
	case kindStatefulSet:
		return apps.StatefulSets(r.namespace).Patch(ctx, r.name, types.ApplyPatchType, data, opts)
	default:
		return apps.DaemonSets(r.namespace).Patch(ctx, r.name, types.ApplyPatchType, data, opts)
	}
}

// withImages is cur with images set as `kubectl set image` sets them: CONTAINER=IMAGE
// for a container or init container by name, *=IMAGE for all.
func withImages(cur runtime.Object, ref workloadRef, images []string) (runtime.Object, error) {
	next := cur.DeepCopyObject()
	template, err := templateOf(next)
	if err != nil {
		return nil, err
	}
	for _, spec := range images {
		name, image, ok := strings.Cut(spec, "=")
		if !ok || name == "" || image == "" {
			return nil, fmt.Errorf("--image %q: want CONTAINER=IMAGE", spec)
		}
		found := false
		for _, cs := range [][]corev1.Container{template.Spec.InitContainers, template.Spec.Containers} {
			for i := range cs {
				if name == "*" || cs[i].Name == name {
					cs[i].Image, found = image, true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%s has no container %q (containers: %s)", ref, name, strings.Join(containerNames(template), ", "))
		}
	}
	return next, nil
}

func templateOf(obj runtime.Object) (*corev1.PodTemplateSpec, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template, nil
	case *appsv1.StatefulSet:
		return &o.Spec.Template, nil
	case *appsv1.DaemonSet:
		return &o.Spec.Template, nil
	}
	return nil, fmt.Errorf("no pod template in %T", obj)
}

func containerNames(t *corev1.PodTemplateSpec) []string {
	var names []string
	for _, c := range append(append([]corev1.Container(nil), t.Spec.InitContainers...), t.Spec.Containers...) {
		names = append(names, c.Name)
	}
	return names
}

// plan computes what changing r to next would do, from r's state now, with the
// controllers running under feature gates g, and what the namespace's
// PodDisruptionBudgets let its first step that takes old pods down do now.
func (r workloadRef) plan(ctx context.Context, client kubernetes.Interface, next runtime.Object, g gates.Gates) (rolloutplan.Plan, error) {
	snap, err := r.snapshot(ctx, client)
	if err != nil {
		return rolloutplan.Plan{}, err
	}
	now := time.Now()
	var plan rolloutplan.Plan
	switch cur := snap.Object.(type) {
	case *appsv1.Deployment:
		d := next.(*appsv1.Deployment)
		live, lerr := liveConfiguration(ctx, client, d.Namespace, d.Annotations, &d.Spec.Template)
		if lerr != nil {
			return rolloutplan.Plan{}, lerr
		}
		plan, err = rolloutplan.DeploymentWithConfig(cur, snap.ReplicaSets, snap.Pods, d, live, now)
	case *appsv1.StatefulSet:
		plan, err = rolloutplan.StatefulSetWithGates(cur, snap.Pods, snap.Revisions, next.(*appsv1.StatefulSet), g, now)
	case *appsv1.DaemonSet:
		plan, err = rolloutplan.DaemonSet(cur, snap.Nodes, snap.Pods, snap.Revisions, next.(*appsv1.DaemonSet), now)
	default:
		return rolloutplan.Plan{}, fmt.Errorf("no plan for %T", snap.Object)
	}
	if err != nil {
		return plan, err
	}
	annotations := next.(metav1.Object).GetAnnotations()
	if m, _ := disruption.ModeOf(annotations, disruption.Respect); m == disruption.Ignore {
		return plan, nil
	}
	// A user who may not read the budgets still gets the plan, with a note.
	list, err := client.PolicyV1().PodDisruptionBudgets(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("PodDisruptionBudgets of namespace %s not read (%v): the plan does not account for them", r.namespace, err))
		return plan, nil
	}
	pdbs := make([]*policyv1.PodDisruptionBudget, len(list.Items))
	for i := range list.Items {
		pdbs[i] = &list.Items[i]
	}
	plan.AccountBudgets(annotations, snap.Pods, pdbs, now)
	return plan, nil
}

// liveConfiguration reads the ConfigMaps and Secrets t references when annotations opt
// into configuration rollout (nil otherwise): the plan decides with them as the
// controller does. One that does not exist is left out; one that cannot be read
// (a user who may not read Secrets) is an error naming it.
func liveConfiguration(ctx context.Context, client kubernetes.Interface, namespace string, annotations map[string]string, t *corev1.PodTemplateSpec) (*rolloutplan.Configuration, error) {
	if on, _ := configrollout.Enabled(annotations); !on {
		return nil, nil
	}
	live := &rolloutplan.Configuration{ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{}}
	for _, ref := range configrollout.Refs(&t.Spec) {
		var err error
		if ref.Kind == configrollout.ConfigMap {
			var cm *corev1.ConfigMap
			if cm, err = client.CoreV1().ConfigMaps(namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				live.ConfigMaps[ref.Name] = cm
			}
		} else {
			var s *corev1.Secret
			if s, err = client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				live.Secrets[ref.Name] = s
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cannot read %s, which the configuration rollout of the plan depends on: %w", ref.Key(), err)
		}
	}
	return live, nil
}
