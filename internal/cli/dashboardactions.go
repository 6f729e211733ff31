package cli

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/kroll-dev/kroll/pkg/dashboard"
)

// dashboardActions make the dashboard's writes with the CLI verbs' own functions:
// promote and abort as `kroll rollout promote/abort`, pause, resume and restart with
// the pausers kubectl's verbs take (kroll's for what kroll pauses), undo with the
// rollbacker `kroll rollout undo` takes, set image as `kubectl set image` edits the
// pod template. Each writes through the client it is given: in-cluster, one
// impersonating the dashboard's user.
type dashboardActions struct{}

var _ dashboard.Actions = dashboardActions{}

func (dashboardActions) Do(ctx context.Context, client kubernetes.Interface, a dashboard.Action) (string, error) {
	ref := workloadRef{kind: workloadKind(a.Kind), namespace: a.Namespace, name: a.Name}
	if _, ok := kindAliases[a.Kind]; !ok {
		return "", fmt.Errorf("%s: the dashboard's actions are for deployments, statefulsets and daemonsets", ref)
	}
	named := fmt.Sprintf("%s.apps/%s", ref.kind, ref.name)
	switch a.Verb {
	case dashboard.VerbPromote, dashboard.VerbPromoteAll:
		record, err := promote(ctx, client, ref, a.Verb == dashboard.VerbPromoteAll, time.Now())
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s promoted to step %s", named, record), nil
	case dashboard.VerbAbort:
		revision, err := abort(ctx, client, ref)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s abort of revision %s requested", named, revision), nil
	case dashboard.VerbPause:
		return named + " paused", patchWorkload(ctx, client, ref, pauseObject)
	case dashboard.VerbResume:
		return named + " resumed", patchWorkload(ctx, client, ref, resumeObject)
	case dashboard.VerbRestart:
		return named + " restarted", patchWorkload(ctx, client, ref, polymorphichelpers.ObjectRestarterFn)
	case dashboard.VerbSetImage:
		return named + " image updated", patchWorkload(ctx, client, ref, func(obj runtime.Object) ([]byte, error) {
			return setImage(obj, a.Container, a.Image)
		})
	case dashboard.VerbUndo:
		return undoWorkload(ctx, client, ref, a.Revision)
	}
	return "", fmt.Errorf("unknown action %q", a.Verb)
}

// setImage sets container's image in obj's pod template and encodes obj, as `kubectl
// set image` does; a container the template lacks is an error.
func setImage(obj runtime.Object, container, image string) ([]byte, error) {
	found := false
	_, err := polymorphichelpers.UpdatePodSpecForObjectFn(obj, func(spec *corev1.PodSpec) error {
		for i := range spec.Containers {
			if spec.Containers[i].Name == container {
				spec.Containers[i].Image, found = image, true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("unable to find container named %q", container)
	}
	return encodeApps(obj)
}

// patchWorkload reads ref, lets change return its new encoding, and writes the
// difference as one strategic merge patch, as kubectl's rollout verbs do. change's
// error is the verb's refusal ("is already paused").
func patchWorkload(ctx context.Context, client kubernetes.Interface, ref workloadRef, change func(runtime.Object) ([]byte, error)) error {
	obj, err := ref.get(ctx, client)
	if err != nil {
		return err
	}
	before, err := encodeApps(obj)
	if err != nil {
		return err
	}
	after, err := change(obj.DeepCopyObject())
	if err != nil {
		return fmt.Errorf("%s.apps/%s %w", ref.kind, ref.name, err)
	}
	var schema any
	switch obj.(type) {
	case *appsv1.Deployment:
		schema = appsv1.Deployment{}
	case *appsv1.StatefulSet:
		schema = appsv1.StatefulSet{}
	default:
		schema = appsv1.DaemonSet{}
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, schema)
	if err != nil {
		return err
	}
	if string(patch) == "{}" {
		return nil
	}
	apps := client.AppsV1()
	opts := metav1.PatchOptions{}
	switch ref.kind {
	case kindDeployment:
		_, err = apps.Deployments(ref.namespace).Patch(ctx, ref.name, types.StrategicMergePatchType, patch, opts)
	case kindStatefulSet:
		_, err = apps.StatefulSets(ref.namespace).Patch(ctx, ref.name, types.StrategicMergePatchType, patch, opts)
	case kindDaemonSet:
		_, err = apps.DaemonSets(ref.namespace).Patch(ctx, ref.name, types.StrategicMergePatchType, patch, opts)
	}
	return err
}

// undoWorkload is `kroll rollout undo [--to-revision=N]`: kubectl's rollbacker, and for
// a Deployment kroll paused on failure the one write that rolls back and resumes.
func undoWorkload(ctx context.Context, client kubernetes.Interface, ref workloadRef, toRevision int64) (string, error) {
	obj, err := ref.get(ctx, client)
	if err != nil {
		return "", err
	}
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	switch ref.kind {
	case kindDeployment:
		gk.Group, gk.Kind = "apps", "Deployment"
	case kindStatefulSet:
		gk.Group, gk.Kind = "apps", "StatefulSet"
	case kindDaemonSet:
		gk.Group, gk.Kind = "apps", "DaemonSet"
	}
	inner, err := polymorphichelpers.RollbackerFor(gk, client)
	if err != nil {
		return "", err
	}
	var rb polymorphichelpers.Rollbacker = inner
	if ref.kind == kindDeployment {
		rb = &pausedOnFailureRollbacker{client: client, kubectl: inner}
	}
	line, err := rb.Rollback(obj, nil, toRevision, cmdutil.DryRunNone)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.apps/%s %s", ref.kind, ref.name, line), nil
}
