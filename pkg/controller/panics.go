package controller

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// A sync that fans out to goroutines (create batches, parallel deletes) must hand a
// panic in one of them back to the sync's own goroutine: there the work queue recovers
// it, counts it and retries the key; in the goroutine it would end the process.

// Panic is a panic caught in a goroutine of a sync, with the stack where it happened.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) String() string { return fmt.Sprintf("%v\n%s", p.Value, p.Stack) }

// Panics holds the first panic of a group of goroutines.
type Panics struct{ first atomic.Pointer[Panic] }

// Catch recovers a panic of the goroutine it is deferred in and keeps the first.
func (ps *Panics) Catch() {
	if r := recover(); r != nil {
		ps.first.CompareAndSwap(nil, &Panic{Value: r, Stack: debug.Stack()})
	}
}

// Raise panics, in the caller's goroutine, with the first panic caught, if any: call it
// once the goroutines have returned.
func (ps *Panics) Raise() {
	if p := ps.first.Load(); p != nil {
		panic(p)
	}
}

// ForEach runs f(0) … f(n−1) in goroutines of their own, waits for all, raises the
// first panic of any in the caller's goroutine, and returns their errors together.
func ForEach(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	var panics Panics
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer panics.Catch()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	panics.Raise()
	return utilerrors.NewAggregate(errs)
}

// ForEachAtMost runs f(0) … f(n−1) in goroutines, at most limit at a time, and
// returns their errors together, as ForEach does, for requests that contend with one
// another when many are sent at once.
func ForEachAtMost(n, limit int, f func(i int) error) error {
	slots := make(chan struct{}, max(limit, 1))
	return ForEach(n, func(i int) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		return f(i)
	})
}
