package rollingupdate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// scale moves pods from from to to: it scales to up as far as the surge allows, pauses
// UpdatePeriod, scales from down as far as availability allows, and repeats until to is
// at desired and from at 0. Each resize is waited for (the controller has observed it
// and the pods exist or are gone), so the bounds hold for pods, not only for sizes.
// When no step is possible it waits for a pod to become available; after Timeout
// without any step it gives up, leaving the update resumable.
func (u *updater) scale(ctx context.Context, res *resolution) error {
	fp, err := rollout.ResolveFenceposts(&u.o.MaxSurge, &u.o.MaxUnavailable, res.desired)
	if err != nil {
		return err
	}
	step := Step{Desired: res.desired, MaxSurge: fp.MaxSurge, MaxUnavailable: fp.MaxUnavailable, Old: replicasOf(res.from), New: replicasOf(res.to)}
	fmt.Fprintf(u.out, "Scaling up %s from %d to %d, scaling down %s from %d to 0 (keep %d pods available, don't exceed %d pods)\n",
		res.to.Name, step.New, step.Desired, res.from.Name, step.Old, step.MinAvailable(), step.MaxTotal())
	for _, name := range []string{res.from.Name, res.to.Name} {
		if err := u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+name+" to settle", func() (bool, string) { return u.view.settled(name) }); err != nil {
			return err
		}
	}
	movedOnce := false
	lastProgress := time.Now()
	for {
		from, to, err := u.current(ctx, res)
		if err != nil {
			return err
		}
		step.Old, step.New = replicasOf(from), replicasOf(to)
		if step.New == step.Desired && step.Old == 0 {
			return nil
		}
		progressed := false
		if next := ScaleUpTo(step); next != step.New {
			fmt.Fprintf(u.out, "Scaling %s up to %d\n", to.Name, next)
			if err := u.resize(ctx, to, next); err != nil {
				return err
			}
			step.New, progressed = next, true
			if err := sleep(ctx, u.o.UpdatePeriod); err != nil {
				return err
			}
		}
		step.NewAvailable = u.view.countPods(to.Spec.Selector, to.Spec.MinReadySeconds).available
		if next := ScaleDownTo(step); next != step.Old {
			fmt.Fprintf(u.out, "Scaling %s down to %d\n", from.Name, next)
			if err := u.resize(ctx, from, next); err != nil {
				return err
			}
			step.Old, progressed = next, true
			if !movedOnce && next > 0 {
				movedOnce = true
				u.hit("rolling-update/mid-scale")
			}
		}
		if progressed {
			lastProgress = time.Now()
			continue
		}
		// Nothing could move: wait until a pod of to becomes available.
		remaining := u.o.Timeout - time.Since(lastProgress)
		waitFor := func() (bool, string) {
			s := step
			c := u.view.countPods(to.Spec.Selector, to.Spec.MinReadySeconds)
			s.NewAvailable = c.available
			return ScaleDownTo(s) != s.Old || ScaleUpTo(s) != s.New,
				fmt.Sprintf("%s has %d of %d pods available, and %d pods must stay available", to.Name, c.available, s.New, s.MinAvailable())
		}
		if err := u.view.until(ctx, max(remaining, 0), "pods of "+to.Name+" to become available", waitFor); err != nil {
			var te *timeoutError
			if errors.As(err, &te) {
				return fmt.Errorf("rolling update of replicationcontroller/%s made no progress for %s: %s; fix the cause and run the same command again to resume, or roll back with --rollback",
					u.o.OldName, u.o.Timeout, te.state)
			}
			return err
		}
	}
}

// current re-reads both controllers of res.
func (u *updater) current(ctx context.Context, res *resolution) (from, to *corev1.ReplicationController, err error) {
	if from, err = u.get(ctx, res.from.Name); err == nil && from == nil {
		err = fmt.Errorf("replicationcontroller/%s was deleted during the update; run the same command again to finish it", res.from.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	if to, err = u.get(ctx, res.to.Name); err == nil && to == nil {
		err = fmt.Errorf("replicationcontroller/%s was deleted during the update; run the same command again to start over", res.to.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	res.from, res.to = from, to
	return from, to, nil
}

// resize sets rc's size and waits until its controller has acted on it.
func (u *updater) resize(ctx context.Context, rc *corev1.ReplicationController, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := u.rcs.Patch(ctx, rc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scale replicationcontroller/%s to %d: %w", rc.Name, replicas, err)
	}
	return u.view.until(ctx, u.o.Timeout, fmt.Sprintf("replicationcontroller/%s to reach %d pods", rc.Name, replicas), func() (bool, string) {
		ok, state := u.view.settled(rc.Name)
		if cached, err := u.view.rcs.Get(rc.Name); err != nil || replicasOf(cached) != replicas {
			return false, state
		}
		return ok, state
	})
}
