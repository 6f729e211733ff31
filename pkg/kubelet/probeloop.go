package kubelet

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/prober"
)

// probeLoop runs the container runs' probes (and ends their sleeps) when due, on one
// goroutine for all nodes, from a heap ordered by due time: no goroutine and no timer
// per probe, and no pod sync per probe run. A run whose observation changed what the
// pod reports (ready, started, killed, exited) brings its pod back to the queue; a run
// that changed nothing costs one probe evaluation and one heap operation. 10,000 pods
// probed every 10s are 1,000 evaluations a second, each a few map lookups in the
// container model.
type probeLoop struct {
	mu      sync.Mutex
	due     runHeap
	kick    chan struct{}
	enqueue func(key string)
}

func newProbeLoop(enqueue func(key string)) *probeLoop {
	return &probeLoop{kick: make(chan struct{}, 1), enqueue: enqueue}
}

// schedule puts r in the loop at its next change, unless it is already there as early.
func (l *probeLoop) schedule(r *run) {
	at, ok := r.next()
	if !ok {
		return
	}
	l.mu.Lock()
	r.mu.Lock()
	if !r.queued.IsZero() && !r.queued.After(at) {
		r.mu.Unlock()
		l.mu.Unlock()
		return
	}
	r.queued = at
	r.mu.Unlock()
	l.due.push(dueRun{at: at, r: r})
	first := l.due[0].r == r
	l.mu.Unlock()
	if first {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// run fires due runs until ctx ends.
func (l *probeLoop) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var fire []*run // reused: the loop allocates nothing per run it fires
	for {
		now := time.Now()
		clear(fire)
		fire = fire[:0]
		l.mu.Lock()
		for len(l.due) > 0 && !l.due[0].at.After(now) {
			d := l.due.pop()
			d.r.mu.Lock()
			current := d.r.queued.Equal(d.at) && !d.r.dead
			if current {
				d.r.queued = time.Time{}
			}
			d.r.mu.Unlock()
			if current {
				fire = append(fire, d.r)
			}
		}
		wait := time.Hour
		if len(l.due) > 0 {
			wait = l.due[0].at.Sub(now)
		}
		l.mu.Unlock()
		for _, r := range fire {
			l.fire(r, now)
		}
		if len(fire) > 0 {
			continue // firing took time; look again before sleeping
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// fire observes r at now; its pod is synced when what it reports changed.
func (l *probeLoop) fire(r *run, now time.Time) {
	r.mu.Lock()
	before := r.probes.Status(r.spec.Name)
	o := r.observeLocked(now)
	r.mu.Unlock()
	if o.exited || o.probes != before {
		l.enqueue(r.key)
		return // the sync ends or keeps the run, and schedules it again
	}
	l.schedule(r)
}

type dueRun struct {
	at time.Time
	r  *run
}

// runHeap is a min-heap of due runs by time, typed (container/heap would box every
// push in an interface: an allocation per probe period of every pod).
type runHeap []dueRun

func (h *runHeap) push(d dueRun) {
	*h = append(*h, d)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q[i].at.Before(q[parent].at) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *runHeap) pop() dueRun {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = dueRun{}
	q = q[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q[l].at.Before(q[least].at) {
			least = l
		}
		if r < len(q) && q[r].at.Before(q[least].at) {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	*h = q
	return top
}

// trackRun is the simulator's onRun: the run's probe events come from its node's
// kubelet. The loop takes the run once the sync that created it has kept it (syncPod).
func (k *Kubelet) trackRun(pod *corev1.Pod, r *run) {
	k.apiRuns.add(pod.UID, r.spec.Name, r)
	rec := k.recorders[pod.Spec.NodeName]
	r.emit = func(ref *corev1.ObjectReference, e prober.Event) {
		if rec != nil {
			rec.Event(ref, e.Type, e.Reason, e.Message)
		}
	}
}
