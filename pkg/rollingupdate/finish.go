package rollingupdate

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cleanup ends an update whose pods have all moved: the controller scaled down is
// deleted first, and only then are the survivor's recovery annotations removed, so a
// crash in between still finds the update and finishes it.
func (u *updater) cleanup(ctx context.Context, res *resolution) error {
	if res.rename && !res.rollback {
		fmt.Fprintf(u.out, "Update succeeded. Deleting old controller: %s\n", res.from.Name)
		return u.rename(ctx, res)
	}
	fmt.Fprintf(u.out, "Update succeeded. Deleting %s\n", res.from.Name)
	if err := u.delete(ctx, res.from, metav1.DeletePropagationBackground); err != nil {
		return err
	}
	res.finish = res.to
	return u.finish(ctx, res)
}

// finish strips the recovery annotations from the update's survivor and reports it.
func (u *updater) finish(ctx context.Context, res *resolution) error {
	rc, err := u.updateRC(ctx, res.finish.Name, res.finish.UID, func(rc *corev1.ReplicationController) bool {
		if !hasRecoveryAnnotations(rc) {
			return false
		}
		rc.Annotations = withoutRecovery(rc.Annotations)
		return true
	})
	if err != nil {
		return err
	}
	switch {
	case res.rollback:
		fmt.Fprintf(u.out, "replicationcontroller/%s rolled back\n", rc.Name)
	default:
		fmt.Fprintf(u.out, "replicationcontroller/%s rolling updated to %q\n", rc.Name, rc.Name)
	}
	return nil
}

// rename gives the new controller (res.to) the old name, in steps that each leave a state
// the next run recognises (see the package doc): delete old (at 0 pods); create a
// stand-in under the old name — the new controller's spec at size 0, with a selector no
// pod matches; delete the new controller, orphaning its pods; finally give the
// stand-in the real selector and size, whereupon it adopts the orphans.
func (u *updater) rename(ctx context.Context, res *resolution) error {
	oldName := u.o.OldName
	if res.standIn == nil {
		if res.from != nil {
			if err := u.delete(ctx, res.from, metav1.DeletePropagationBackground); err != nil {
				return err
			}
			res.from = nil
			u.hit("rolling-update/after-delete-old")
		}
		fmt.Fprintf(u.out, "Renaming %s to %s\n", res.to.Name, oldName)
		standIn, err := u.rcs.Create(ctx, standInFor(res.to, oldName), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create replicationcontroller/%s: %w", oldName, err)
		}
		res.standIn = standIn
		u.hit("rolling-update/after-create-standin")
	} else {
		fmt.Fprintf(u.out, "Renaming %s to %s\n", res.standIn.Annotations[RenameFromAnnotation], oldName)
	}
	if res.to != nil {
		if err := u.delete(ctx, res.to, metav1.DeletePropagationOrphan); err != nil {
			return err
		}
		u.hit("rolling-update/after-orphan-new")
	}
	desired, err := strconv.Atoi(res.standIn.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return fmt.Errorf("replicationcontroller/%s: annotation %s=%q is not a number", oldName, DesiredReplicasAnnotation, res.standIn.Annotations[DesiredReplicasAnnotation])
	}
	renamed, err := u.updateRC(ctx, oldName, res.standIn.UID, func(rc *corev1.ReplicationController) bool {
		n := int32(desired)
		rc.Spec.Replicas = &n
		delete(rc.Spec.Selector, RenamingLabel)
		delete(rc.Spec.Template.Labels, RenamingLabel)
		rc.Annotations = withoutRecovery(rc.Annotations)
		return true
	})
	if err != nil {
		return err
	}
	if err := u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+oldName+" to adopt its pods", func() (bool, string) { return u.view.settled(oldName) }); err != nil {
		return err
	}
	fmt.Fprintf(u.out, "replicationcontroller/%s rolling updated\n", renamed.Name)
	return nil
}

// standInFor is the controller holding name while to is renamed to it: to's spec at
// size 0, selecting no pod (RenamingLabel), with the size to restore and to's name.
func standInFor(to *corev1.ReplicationController, name string) *corev1.ReplicationController {
	desired := replicasOf(to)
	if n, err := strconv.Atoi(to.Annotations[DesiredReplicasAnnotation]); err == nil {
		desired = int32(n)
	}
	zero := int32(0)
	rc := &corev1.ReplicationController{ObjectMeta: objectMetaFrom(to, name), Spec: *to.Spec.DeepCopy()}
	rc.Spec.Replicas = &zero
	rc.Spec.Selector, rc.Spec.Template = labelled(to.Spec.Selector, to.Spec.Template, RenamingLabel, "true")
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	rc.Annotations[RenameFromAnnotation] = to.Name
	rc.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(desired))
	return rc
}
