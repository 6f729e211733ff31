package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The steps scenarios share: create Deployments, roll them, wait until they are done.

// sync starts inf (with the run's other informers) and waits for its cache.
func (r *run) sync(ctx context.Context, inf cache.SharedIndexInformer) error {
	r.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

// createDeployments creates ds and waits until every one is complete.
func (r *run) createDeployments(ctx context.Context, ds []*appsv1.Deployment) error {
	inf := r.informers.Apps().V1().Deployments().Informer()
	if err := r.sync(ctx, inf); err != nil {
		return err
	}
	if err := inParallel(ctx, len(ds), 16, func(ctx context.Context, i int) error {
		_, err := r.client.AppsV1().Deployments(namespace).Create(ctx, ds[i], metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	ok, state := r.deploymentsDone(names, oldImage)
	return until(ctx, inf, 30*time.Minute, "deployments created", ok, state)
}

// rollDeployments changes the image of the named Deployments at once and returns the
// seconds until every one is complete, and their least availability margin meanwhile.
func (r *run) rollDeployments(ctx context.Context, names []string) (float64, *int32, error) {
	if err := r.sync(ctx, r.informers.Apps().V1().Deployments().Informer()); err != nil {
		return 0, nil, err
	}
	ok, state := r.deploymentsDone(names, newImage)
	return r.roll(ctx, names, func(ctx context.Context) error {
		return inParallel(ctx, len(names), 16, func(ctx context.Context, i int) error {
			_, err := r.client.AppsV1().Deployments(namespace).Patch(ctx, names[i], types.StrategicMergePatchType, imagePatch, metav1.PatchOptions{})
			return err
		})
	}, ok, state)
}

// roll makes change and returns the seconds until done holds, and the least
// availability margin of the named Deployments meanwhile; state describes where it got.
func (r *run) roll(ctx context.Context, names []string, change func(context.Context) error, done func() bool, state func() string) (float64, *int32, error) {
	inf := r.informers.Apps().V1().Deployments().Informer()
	stopWatch, err := watchAvailability(inf, names)
	if err != nil {
		return 0, nil, err
	}
	began := time.Now()
	if err := change(ctx); err != nil {
		stopWatch()
		return 0, nil, err
	}
	err = until(ctx, inf, 30*time.Minute, "deployments rolled", done, state)
	secs, margin := time.Since(began).Seconds(), stopWatch()
	if err != nil {
		return 0, nil, err
	}
	return secs, margin, nil
}

// deploymentsDone tells whether every named Deployment is complete at image, and
// describes the first one that is not.
func (r *run) deploymentsDone(names []string, image string) (func() bool, func() string) {
	lister := r.informers.Apps().V1().Deployments().Lister().Deployments(namespace)
	firstNotDone := func() (string, *appsv1.Deployment) {
		for _, name := range names {
			d, err := lister.Get(name)
			if err != nil || !deploymentDone(d, image) {
				return name, d
			}
		}
		return "", nil
	}
	return func() bool { name, _ := firstNotDone(); return name == "" },
		func() string {
			name, d := firstNotDone()
			if d == nil {
				return name + " not seen"
			}
			s := d.Status
			return fmt.Sprintf("%s: replicas=%d updated=%d available=%d observedGeneration=%d/%d",
				name, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, s.ObservedGeneration, d.Generation)
		}
}
