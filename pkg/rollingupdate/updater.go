package rollingupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

// Run performs the rolling update o describes, or resumes it: every step leaves state
// from which running the same command again finishes the update (see the package doc).
func Run(ctx context.Context, client kubernetes.Interface, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	u := &updater{client: client, rcs: client.CoreV1().ReplicationControllers(o.Namespace), o: o, out: o.Out}
	if u.out == nil {
		u.out = io.Discard
	}
	if o.DryRun {
		res, err := u.resolve(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(u.out, "Rolling from:\n%s\nTo:\n%s\n", res.fromName(), res.toName())
		return nil
	}

	// Lock the controller named first, so that a second client is told so rather than
	// anything about the state the first is changing; then, once the state says which
	// other controllers take part, those too, and read the state again under the lock.
	u.lock = newLock(client, o.Namespace, o.Command)
	defer u.lock.release()
	if err := u.lock.acquire(ctx, o.OldName); err != nil {
		return err
	}
	res, err := u.resolve(ctx)
	if err != nil {
		return err
	}
	if err := u.lock.acquire(ctx, res.names()...); err != nil {
		return err
	}
	if res, err = u.resolve(ctx); err != nil {
		return err
	}
	if err := u.lock.acquire(ctx, res.names()...); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-u.lock.lost:
			cancel(err)
		case <-ctx.Done():
		}
	}()
	if u.view, err = startView(ctx, client, o.Namespace, o.PollInterval); err != nil {
		return u.stopped(ctx, err)
	}
	defer u.view.stop()
	err = u.stopped(ctx, u.execute(ctx, res))
	var te *timeoutError
	if errors.As(err, &te) {
		err = fmt.Errorf("%w; fix the cause and run the same command again to resume, or roll back with --rollback", err)
	}
	return err
}

// stopped turns an error caused by the command being stopped into one that says how to go on.
func (u *updater) stopped(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		return fmt.Errorf("interrupted; the update of replicationcontroller/%s is recorded on its controllers: run the same command again to resume it, or roll it back with --rollback", u.o.OldName)
	}
	return cause
}

// updater is one run of a rolling update: the options, the client, the locks it holds
// and the informer view it waits on.
type updater struct {
	client kubernetes.Interface
	rcs    typedcorev1.ReplicationControllerInterface
	o      Options
	out    io.Writer
	lock   *lock
	view   *view
}

// get reads a controller; nil when it does not exist.
func (u *updater) get(ctx context.Context, name string) (*corev1.ReplicationController, error) {
	rc, err := u.rcs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get replicationcontroller/%s: %w", name, err)
	}
	return rc, nil
}

// partnerOf finds the controller an update from name is rolling to, by its source
// annotation (after a crash the old controller may be gone, or may not name it).
func (u *updater) partnerOf(ctx context.Context, name string) (*corev1.ReplicationController, error) {
	list, err := u.rcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list replication controllers in %s: %w", u.o.Namespace, err)
	}
	for i := range list.Items {
		if rc := &list.Items[i]; rc.Name != name && isSourcedFrom(rc, name) {
			return rc, nil
		}
	}
	return nil, nil
}

// execute carries out what resolve found: it finishes or renames what an earlier run
// left, or starts (or turns around) the update, scales, and cleans up: files start.go,
// scale.go and finish.go, in that order.
func (u *updater) execute(ctx context.Context, res *resolution) error {
	switch {
	case res.finish != nil:
		return u.finish(ctx, res)
	case res.standIn != nil || (res.rename && res.from == nil):
		return u.rename(ctx, res)
	}
	if res.rollback {
		if err := u.startRollback(ctx, res); err != nil {
			return err
		}
	} else if err := u.start(ctx, res); err != nil {
		return err
	}
	if err := u.scale(ctx, res); err != nil {
		return err
	}
	return u.cleanup(ctx, res)
}

// delete deletes rc (if it is still the same object) and waits until it is gone.
func (u *updater) delete(ctx context.Context, rc *corev1.ReplicationController, propagation metav1.DeletionPropagation) error {
	err := u.rcs.Delete(ctx, rc.Name, metav1.DeleteOptions{PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &rc.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete replicationcontroller/%s: %w", rc.Name, err)
	}
	return u.view.until(ctx, u.o.Timeout, "replicationcontroller/"+rc.Name+" to be deleted", func() (bool, string) {
		cur, err := u.view.rcs.Get(rc.Name)
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != rc.UID) {
			return true, ""
		}
		return false, "still there"
	})
}

// updateRC applies mutate to the latest rc (which must still have uid), retrying on
// conflicts; mutate returns false when there is nothing to change.
func (u *updater) updateRC(ctx context.Context, name string, uid types.UID, mutate func(*corev1.ReplicationController) bool) (*corev1.ReplicationController, error) {
	var out *corev1.ReplicationController
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rc, err := u.rcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid != "" && rc.UID != uid {
			return fmt.Errorf("replicationcontroller/%s was replaced during the update; run the same command again", name)
		}
		if !mutate(rc) {
			out = rc
			return nil
		}
		out, err = u.rcs.Update(ctx, rc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update replicationcontroller/%s: %w", name, err)
	}
	return out, nil
}

func setAnnotation(rc *corev1.ReplicationController, key, value string) bool {
	if v, ok := rc.Annotations[key]; ok && v == value {
		return false
	}
	if rc.Annotations == nil {
		rc.Annotations = map[string]string{}
	}
	rc.Annotations[key] = value
	return true
}

// hit marks the named point between two writes (see Options.Hit).
func (u *updater) hit(name string) {
	if u.o.Hit != nil {
		u.o.Hit(name)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
