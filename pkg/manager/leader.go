package manager

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// lead runs work while this process holds the Lease le names, and returns when ctx ends
// (nil), when the lease is lost (an error) or when work fails (its error).
//
// Handing over on shutdown is ordered: when ctx ends, work is stopped while the lease
// is still renewed, and released after, so that the next leader cannot start while
// this one still writes. (client-go's ReleaseOnCancel stops renewing at once and
// releases while work is still stopping.) A released lease lets a standby take over
// within a retry period or two instead of waiting out the lease duration.
func lead(ctx context.Context, cfg *rest.Config, le LeaderElection, h *health, work func(context.Context) error) error {
	c := withProtobuf(cfg)
	c.Wrap(metrics.InstrumentTransport("leader-election"))
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(c, "kroll/leader-election"))
	if err != nil {
		return err
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name, client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{
			Identity:      le.Identity,
			EventRecorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kroll-controller-manager"}),
		})
	if err != nil {
		return err
	}
	held := &heldLock{Interface: lock}
	logger := klog.FromContext(ctx)
	leaderMetric := metrics.Leader.WithLabelValues(le.Name)
	leaderMetric.Set(0)

	// The elector runs on a context of its own, so that it keeps renewing while work
	// stops. It ends when work has stopped, or at once when ctx ends before work began.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var mu sync.Mutex
	working := false
	stopOnCancel := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !working {
			stopElector()
		}
	})
	defer stopOnCancel()
	workDone := make(chan struct{})
	var workErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          held,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		WatchDog:      h.lease,
		Name:          le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				defer close(workDone)
				defer stopElector()
				mu.Lock()
				working = ctx.Err() == nil
				mu.Unlock()
				if !working {
					return
				}
				// Work stops when the lease is lost or when ctx ends.
				workCtx, stopWork := context.WithCancel(leading)
				defer stopWork()
				defer context.AfterFunc(ctx, stopWork)()
				logger.Info("Leading: starting the controllers", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
				leaderMetric.Set(1)
				h.markLeading()
				if err := work(workCtx); err != nil {
					logger.Error(err, "The controllers could not run")
					mu.Lock()
					workErr = err
					mu.Unlock()
				}
			},
			OnStoppedLeading: func() { leaderMetric.Set(0) },
			OnNewLeader: func(identity string) {
				if identity != le.Identity {
					logger.Info("Another process leads", "lease", le.Namespace+"/"+le.Name, "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if h.lease != nil {
		h.lease.SetLeaderElection(elector)
	}
	elector.Run(electorCtx)
	// Run starts OnStartedLeading on a goroutine and does not wait for it. Once the lease
	// was ever written with this identity, that goroutine exists: wait for the work to
	// stop — for a renew deadline at most when the lease was lost, as the process is
	// about to exit and no longer has the right to write.
	failed := func() error { mu.Lock(); defer mu.Unlock(); return workErr }
	if held.held.Load() {
		if ctx.Err() == nil && failed() == nil {
			select {
			case <-workDone:
			case <-time.After(le.RenewDeadline):
			}
		} else {
			<-workDone
			release(lock, le)
		}
	}
	switch err := failed(); {
	case err != nil:
		return err
	case ctx.Err() == nil:
		return fmt.Errorf("lost the leader lease %s/%s; exiting so that a restart competes for it again", le.Namespace, le.Name)
	}
	return nil
}

// release ends this process's hold on the lease after its work has stopped, the way
// client-go releases: the holder emptied and a one-second duration, so a standby takes
// the lease at its next retry.
func release(lock resourcelock.Interface, le LeaderElection) {
	ctx, cancel := context.WithTimeout(context.Background(), le.RenewDeadline)
	defer cancel()
	record, _, err := lock.Get(ctx)
	if err != nil || record.HolderIdentity != le.Identity {
		return
	}
	now := time.Now()
	record.HolderIdentity = ""
	record.LeaseDurationSeconds = 1
	record.RenewTime.Time, record.AcquireTime.Time = now, now
	if err := lock.Update(ctx, *record); err != nil {
		klog.FromContext(ctx).Error(err, "Could not release the leader lease; the next leader waits for it to expire", "lease", le.Namespace+"/"+le.Name)
	}
}

// heldLock notes whether a write of the lease under this identity ever succeeded: then
// the elector has acquired it and started the work.
type heldLock struct {
	resourcelock.Interface
	held atomic.Bool
}

func (l *heldLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.held.Store(true)
	}
	return err
}

func (l *heldLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.held.Store(true)
	}
	return err
}
