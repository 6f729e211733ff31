package manager

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/flowcontrol"
)

// paceTick is how often a client whose QPS holds requests back lets the held ones go.
//
// client-go's token bucket releases each held request on its own, when its token
// comes: twenty times a second at QPS 20. Each release wakes the process for one
// request, and the answer and the watch events it causes for one more, so a rollout
// that QPS bounds spends most of the controllers' CPU on wake-ups (futex and the
// scheduler's search for work; bench/profiles/paced-requests.md). Released on the
// ticks of a clock instead, the requests due within a tick go together and share the
// wake-ups. None goes earlier than the bucket would let it.
const paceTick = 250 * time.Millisecond

// pacedLimiter is a token bucket of qps and burst whose waiters are released on the
// ticks of a clock of period tick. A request the bucket lets go at once goes at once;
// one it holds goes at the first tick after its token comes, at most tick later. So
// that no interval sees more requests than the bucket it stands for allows (burst,
// plus qps for each second), its own bucket holds qps × tick fewer: those a tick's
// wait can gather.
type pacedLimiter struct {
	bucket *rate.Limiter
	qps    float32
	tick   time.Duration
}

// newClientLimiter is the limiter of a client of qps and burst: paced when the bucket
// holds more than a tick gathers, client-go's own token bucket otherwise (and nil
// when qps is negative: no limit).
func newClientLimiter(qps float32, burst int, tick time.Duration) flowcontrol.RateLimiter {
	if qps < 0 {
		return nil
	}
	gathered := int(math.Ceil(float64(qps) * tick.Seconds()))
	if burst-gathered < 1 {
		return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	return &pacedLimiter{bucket: rate.NewLimiter(rate.Limit(qps), burst-gathered), qps: qps, tick: tick}
}

func (l *pacedLimiter) Wait(ctx context.Context) error {
	r := l.bucket.Reserve()
	now := time.Now()
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	at := now.Add(d)
	if next := at.Truncate(l.tick); next.Before(at) {
		at = next.Add(l.tick)
	}
	t := time.NewTimer(at.Sub(now))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

func (l *pacedLimiter) TryAccept() bool { return l.bucket.Allow() }

func (l *pacedLimiter) Accept() { _ = l.Wait(context.Background()) }

func (l *pacedLimiter) Stop() {}

func (l *pacedLimiter) QPS() float32 { return l.qps }
