package rollingupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// The lock: one coordination.k8s.io Lease per controller name taking part in an update,
// held by one client at a time. The holder renews it every LockRenewInterval; a lease
// not renewed for LockDuration has expired and may be taken over. So may a lease whose
// holder was a process on this machine that no longer exists (a client that was
// killed), so that re-running the command after a crash does not wait for expiry.
const (
	LockDuration      = 15 * time.Second
	LockRenewInterval = 5 * time.Second
	// lockPrefix starts the Lease names: "kroll-rolling-update.<controller>".
	lockPrefix = "kroll-rolling-update."
)

// HeldError is returned when another client holds a controller's lock.
type HeldError struct {
	Controller, Holder string
	Since, Renewed     time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("replicationcontroller/%s is being rolling-updated by another client (%s, since %s, lock renewed %s ago); wait for it to finish, or stop it and run the command again",
		e.Controller, e.Holder, e.Since.Local().Format(time.TimeOnly), time.Since(e.Renewed).Round(time.Second))
}

// lock is the set of Leases one client holds; it renews them until released.
type lock struct {
	client    kubernetes.Interface
	namespace string
	holder    string
	command   string

	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease // by controller name
	// renewed is when every lease was last renewed; past LockDuration−LockRenewInterval
	// without a renewal the leases may have expired and the lock counts as lost.
	renewed time.Time
	lost    chan error // receives once if renewing fails
	stop    chan struct{}
	done    chan struct{}
}

func newLock(client kubernetes.Interface, namespace, command string) *lock {
	host, _ := os.Hostname()
	return &lock{
		client: client, namespace: namespace, command: command,
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.String(5)),
		leases: map[string]*coordinationv1.Lease{},
		lost:   make(chan error, 1),
	}
}

// leaseName is the Lease guarding controller name (a hash when the name is too long).
func leaseName(controller string) string {
	name := lockPrefix + controller
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(controller))
		name = lockPrefix + hex.EncodeToString(sum[:16])
	}
	return name
}

// acquire takes the lock on each controller name not already held, or fails with a
// HeldError naming the holder. Leases already acquired stay held (release lets them go).
func (l *lock) acquire(ctx context.Context, controllers ...string) error {
	for _, c := range controllers {
		l.mu.Lock()
		_, held := l.leases[c]
		l.mu.Unlock()
		if held {
			continue
		}
		lease, err := l.take(ctx, c)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.leases[c] = lease
		if l.renewed.IsZero() {
			l.renewed = time.Now()
		}
		l.mu.Unlock()
	}
	l.startRenewing()
	return nil
}

func (l *lock) take(ctx context.Context, controller string) (*coordinationv1.Lease, error) {
	leases := l.client.CoordinationV1().Leases(l.namespace)
	now := metav1.NewMicroTime(time.Now())
	duration := int32(LockDuration / time.Second)
	mine := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseName(controller), Namespace: l.namespace,
			Annotations: map[string]string{"kroll.dev/command": l.command, "kroll.dev/controller": controller}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &l.holder, LeaseDurationSeconds: &duration, AcquireTime: &now, RenewTime: &now},
	}
	created, err := leases.Create(ctx, mine, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("lock replicationcontroller/%s: %w", controller, err)
	}
	current, err := leases.Get(ctx, mine.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("lock replicationcontroller/%s: %w", controller, err)
	}
	if !takeable(current, time.Now()) {
		return nil, heldError(controller, current)
	}
	next := current.DeepCopy()
	next.Annotations = mine.Annotations
	next.Spec = mine.Spec
	updated, err := leases.Update(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// Someone else took it over in between.
		if fresh, gerr := leases.Get(ctx, mine.Name, metav1.GetOptions{}); gerr == nil {
			return nil, heldError(controller, fresh)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock replicationcontroller/%s: %w", controller, err)
	}
	return updated, nil
}

func heldError(controller string, l *coordinationv1.Lease) error {
	e := &HeldError{Controller: controller}
	if l.Spec.HolderIdentity != nil {
		e.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		e.Since = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		e.Renewed = l.Spec.RenewTime.Time
	}
	if cmd := l.Annotations["kroll.dev/command"]; cmd != "" {
		e.Holder += ", running: " + cmd
	}
	return e
}

// takeable tells whether a Lease may be taken over at now: it has no holder, it has
// expired, or its holder was a process on this host that has exited.
func takeable(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return true
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	if now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)) {
		return true
	}
	return holderExited(*l.Spec.HolderIdentity)
}

// holderExited tells whether holder ("host/pid/nonce") names a process of this host
// that no longer runs.
func holderExited(holder string) bool {
	parts := strings.Split(holder, "/")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	return !processExists(pid)
}

func (l *lock) startRenewing() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(LockRenewInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := l.renew(); err != nil {
					l.lost <- err
					return
				}
			}
		}
	}()
}

func (l *lock) renew() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), LockRenewInterval)
	defer cancel()
	failed := false
	for c, lease := range l.leases {
		next := lease.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		next.Spec.RenewTime = &now
		updated, err := l.client.CoordinationV1().Leases(l.namespace).Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return fmt.Errorf("lost the lock on replicationcontroller/%s to another client", c)
			}
			failed = true // a transient error; the lease may have time left for the next try
			continue
		}
		l.leases[c] = updated
	}
	if !failed {
		l.renewed = time.Now()
	} else if time.Since(l.renewed) > LockDuration-LockRenewInterval {
		return fmt.Errorf("could not renew the lock for %s; another client may take it over", time.Since(l.renewed).Round(time.Second))
	}
	return nil
}

// release stops renewing and deletes the Leases still ours. It uses its own deadline:
// it runs after the command's context has ended too.
func (l *lock) release() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c, lease := range l.leases {
		rv := lease.ResourceVersion
		_ = l.client.CoordinationV1().Leases(l.namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		delete(l.leases, c)
	}
}
