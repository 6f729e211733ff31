package rollingupdate

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// start readies from and creates to: the deployment label on from's template, pods and
// selector; the partner and original-size annotations on from; to, at size 0.
func (u *updater) start(ctx context.Context, res *resolution) error {
	if res.fromLabel != "" {
		if err := u.labelFrom(ctx, res); err != nil {
			return err
		}
	}
	toName := res.toName()
	from, err := u.updateRC(ctx, res.from.Name, res.from.UID, func(rc *corev1.ReplicationController) bool {
		changed := setAnnotation(rc, NextControllerAnnotation, toName)
		if _, ok := rc.Annotations[OriginalReplicasAnnotation]; !ok {
			changed = setAnnotation(rc, OriginalReplicasAnnotation, strconv.Itoa(int(replicasOf(rc)))) || changed
		}
		return changed
	})
	if err != nil {
		return err
	}
	res.from = from
	if res.to != nil {
		fmt.Fprintf(u.out, "Continuing update with existing controller %s.\n", res.to.Name)
		return nil
	}
	u.hit("rolling-update/before-create-new")
	create := res.create.DeepCopy()
	if create.Annotations == nil {
		create.Annotations = map[string]string{}
	}
	create.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(res.desired))
	create.Annotations[SourceIDAnnotation] = sourceID(from.Name, from.UID)
	zero := int32(0)
	create.Spec.Replicas = &zero
	to, err := u.rcs.Create(ctx, create, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create replicationcontroller/%s: %w", create.Name, err)
	}
	res.to = to
	fmt.Fprintf(u.out, "Created %s\n", to.Name)
	u.hit("rolling-update/after-create-new")
	return nil
}

// labelFrom adds the deployment label to from's template, then to its pods (in place),
// then to its selector — in that order, so from never stops selecting a pod it runs. A
// pod from's controller created from the unlabelled template meanwhile is labelled too.
func (u *updater) labelFrom(ctx context.Context, res *resolution) error {
	key, value := u.o.DeploymentKey, res.fromLabel
	original := res.from.Spec.Selector
	from, err := u.updateRC(ctx, res.from.Name, res.from.UID, func(rc *corev1.ReplicationController) bool {
		if rc.Spec.Template.Labels[key] == value {
			return false
		}
		_, rc.Spec.Template = labelled(nil, rc.Spec.Template, key, value)
		return true
	})
	if err != nil {
		return err
	}
	if err := u.labelPods(ctx, from, original, key, value); err != nil {
		return err
	}
	if from, err = u.updateRC(ctx, from.Name, from.UID, func(rc *corev1.ReplicationController) bool {
		if rc.Spec.Selector[key] == value {
			return false
		}
		rc.Spec.Selector, _ = labelled(rc.Spec.Selector, rc.Spec.Template, key, value)
		return true
	}); err != nil {
		return err
	}
	if err := u.labelPods(ctx, from, original, key, value); err != nil {
		return err
	}
	res.from = from
	return nil
}

// labelPods sets key=value on the pods selector matches that rc controls or nobody does.
func (u *updater) labelPods(ctx context.Context, rc *corev1.ReplicationController, selector map[string]string, key, value string) error {
	pods, err := u.client.CoreV1().Pods(rc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selectorString(selector)})
	if err != nil {
		return fmt.Errorf("list the pods of replicationcontroller/%s: %w", rc.Name, err)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ref := metav1.GetControllerOf(pod); (ref != nil && ref.UID != rc.UID) || pod.Labels[key] == value {
			continue
		}
		_, err := u.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("label pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// startRollback turns the update around: to (the controller the update started from)
// becomes the one scaled up, back to its original size.
func (u *updater) startRollback(ctx context.Context, res *resolution) error {
	fmt.Fprintf(u.out, "Setting %q replicas to %d\n", res.to.Name, res.desired)
	to, err := u.updateRC(ctx, res.to.Name, res.to.UID, func(rc *corev1.ReplicationController) bool {
		changed := setAnnotation(rc, DesiredReplicasAnnotation, strconv.Itoa(int(res.desired)))
		changed = setAnnotation(rc, SourceIDAnnotation, sourceID(res.from.Name, res.from.UID)) || changed
		return setAnnotation(rc, NextControllerAnnotation, res.from.Name) || changed
	})
	if err != nil {
		return err
	}
	res.to = to
	fmt.Fprintf(u.out, "Continuing update with existing controller %s.\n", to.Name)
	return nil
}
