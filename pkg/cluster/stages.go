package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// How a cluster's components run and stop: each in a stage, the API server's apart from
// its clients', so that Stop can stop the clients first (see Cluster.server).

// supervise runs a client component; if it stops while the cluster is meant to run, the
// whole cluster stops and Err reports which component it was. The channel it returns is
// closed when the component has stopped.
func (c *Cluster) supervise(name string, run func(context.Context) error) <-chan struct{} {
	return c.clients.supervise(c, name, run)
}

// stage is a set of components stopped together.
type stage struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// supervise runs run in s; a stop of its own, while s is meant to run, fails c.
func (s *stage) supervise(c *Cluster, name string, run func(context.Context) error) <-chan struct{} {
	stopped := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(stopped)
		err := run(s.ctx)
		if s.ctx.Err() != nil {
			return // stopping
		}
		if err == nil {
			err = errors.New("exited")
		}
		c.fail(fmt.Errorf("%s stopped: %w", name, err))
	}()
	return stopped
}

// stop cancels s and waits for its components, at most until deadline; false if some
// still run.
func (s *stage) stop(deadline time.Time) bool {
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(time.Until(deadline)):
		return false
	}
}

// stopComponents stops the clients, then the server, within timeout in all; false if
// some component still runs.
func (c *Cluster) stopComponents(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	clientsStopped := c.clients.stop(deadline)
	return c.server.stop(deadline) && clientsStopped
}
