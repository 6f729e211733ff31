package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
)

// fakeNameHolder claims names as kube-controller-manager does (a /configz entry, an
// informer name, released by name when it stops), its informer name first; between
// the two it calls meanwhile.
func fakeNameHolder(names processNames, meanwhile func()) func(context.Context) error {
	return func(ctx context.Context) error {
		informer, err := cache.NewInformerName(names.informer)
		if err != nil {
			return err
		}
		defer informer.Release()
		meanwhile()
		if _, err := configz.New(names.configz); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
}

// Given a component holding its names, when a second claims them and the first stops
// while the second's claim is under way, then the first's stop (which releases its
// informer name by name) waits for the claim to complete, and the claim succeeds.
func TestClaimNames_aHolderStoppingMidClaimDoesNotTakeTheNewClaim(t *testing.T) {
	names := processNames{configz: "kroll-test-claims", informer: "kroll-test-claims"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	firstCtx, stopFirst := context.WithCancel(ctx)
	firstStopped := make(chan struct{})
	err := claimNames(ctx, names, func() <-chan struct{} {
		go func() {
			defer close(firstStopped)
			_ = stopsBetweenClaims(fakeNameHolder(names, func() {}))(firstCtx)
		}()
		return firstStopped
	})
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}

	// The second holder has taken the informer name; the first stops now. Without the
	// wait, its release removes the second's informer name before the claim sees it.
	firstGone := make(chan struct{})
	secondCtx, stopSecond := context.WithCancel(ctx)
	defer stopSecond()
	claimCtx, claimDone := context.WithTimeout(ctx, 3*time.Second)
	defer claimDone()
	secondStopped := make(chan struct{})
	err = claimNames(claimCtx, names, func() <-chan struct{} {
		go func() {
			defer close(secondStopped)
			_ = stopsBetweenClaims(fakeNameHolder(names, func() {
				stopFirst()
				select {
				case <-firstStopped:
					close(firstGone)
				case <-time.After(300 * time.Millisecond):
				}
			}))(secondCtx)
		}()
		return secondStopped
	})
	if err != nil {
		t.Fatalf("second claim, the first holder stopping meanwhile: %v", err)
	}
	select {
	case <-firstGone:
		t.Error("the first holder stopped while the second's claim was under way")
	default:
	}
	select {
	case <-firstStopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the first holder did not stop once the claim was complete")
	}
	stopSecond()
	select {
	case <-secondStopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the second holder did not stop")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("ran out of time")
	}
}
