package manager

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/flowcontrol"
)

// paceTick is how often a client whose QPS holds requests back lets the held ones go.
//
// client-go's token bucket releases each held request on its own, when its token
// comes: twenty times a second at QPS 20. Each release wakes the process for one
// request, and the answer and the watch events it causes for one more: the
// controllers spent twice the CPU on a rollout QPS bounds as on the same rollout
// unthrottled (bench/profiles/paced-requests.md). Released on the ticks of a clock
// instead, the requests due within a tick go together and share the wake-ups. None
// goes earlier than the bucket would let it.
const paceTick = 250 * time.Millisecond

// pacedLimiter is a token bucket of qps and burst whose held requests go in groups:
// those whose tokens come within one tick of a clock of period tick go together, when
// the latest of their tokens comes. A request the bucket lets go at once goes at once;
// a held one goes no earlier than its token, and no later than the tick's end. The
// group waits for the latest token it knows of, not for the tick's end: the last
// request of a burst (a ReplicaSet's last create before it waits for its pods) goes
// when its token comes, as it would alone.
//
// No interval of t seconds sees more than burst + qps × t requests, as with the
// bucket alone: requests carried into an interval from the tick before it were held,
// so the bucket was empty when their tokens came, and at most 1 + qps × (t + tick)
// tokens come from the first of them to the interval's end; that is within the bound
// while burst ≥ 1 + qps × tick (newClientLimiter checks).
type pacedLimiter struct {
	bucket *rate.Limiter
	qps    float32
	tick   time.Duration

	mu     sync.Mutex
	groups map[int64]*paceGroup // by tick
}

// paceGroup is the held requests of one tick: they go when at passes (close(gone)).
type paceGroup struct {
	at    time.Time
	timer *time.Timer
	gone  chan struct{}
}

// newClientLimiter is the limiter of a client of qps and burst: paced when the burst
// holds a tick's tokens and one more (the bound above), client-go's own token bucket
// otherwise (and nil when qps is negative: no limit).
func newClientLimiter(qps float32, burst int, tick time.Duration) flowcontrol.RateLimiter {
	if qps < 0 {
		return nil
	}
	if float64(burst) < 1+float64(qps)*tick.Seconds() {
		return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	return &pacedLimiter{bucket: rate.NewLimiter(rate.Limit(qps), burst), qps: qps, tick: tick,
		groups: map[int64]*paceGroup{}}
}

func (l *pacedLimiter) Wait(ctx context.Context) error {
	r := l.bucket.Reserve()
	now := time.Now()
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	g := l.join(now.Add(d))
	select {
	case <-g.gone:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// join puts a request whose token comes at at in its tick's group, which then goes no
// earlier than at.
func (l *pacedLimiter) join(at time.Time) *paceGroup {
	tick := at.UnixNano() / int64(l.tick)
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.groups[tick]
	if g == nil {
		g = &paceGroup{at: at, gone: make(chan struct{})}
		l.groups[tick] = g
		g.timer = time.AfterFunc(time.Until(at), func() { l.release(tick, g) })
		return g
	}
	if at.After(g.at) {
		g.at = at
		g.timer.Reset(time.Until(at))
	}
	return g
}

// release lets g go, unless a request joined it since its timer was set and has yet
// to see its token (the timer is set again for it).
func (l *pacedLimiter) release(tick int64, g *paceGroup) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.groups[tick] != g {
		return // gone already
	}
	if wait := time.Until(g.at); wait > 0 {
		g.timer.Reset(wait)
		return
	}
	delete(l.groups, tick)
	close(g.gone)
}

func (l *pacedLimiter) TryAccept() bool { return l.bucket.Allow() }

func (l *pacedLimiter) Accept() { _ = l.Wait(context.Background()) }

func (l *pacedLimiter) Stop() {}

func (l *pacedLimiter) QPS() float32 { return l.qps }
