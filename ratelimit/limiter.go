package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// limiter is the built-in workqueue.TypedRateLimiter: the larger of a
// per-key exponential backoff and the delay of a token bucket shared by all
// keys, both on the queue's clock. It is what client-go's
// DefaultTypedControllerRateLimiter computes (a MaxOf of an
// ItemExponentialFailureRateLimiter and a BucketRateLimiter), except that
// client-go's bucket always reads the wall clock.
//
// Safe for concurrent use; the Queue calls it without holding its own locks.
type limiter[K comparable] struct {
	clock     clock.PassiveClock
	bucket    *rate.Limiter // has its own lock
	baseDelay time.Duration
	maxDelay  time.Duration

	mu struct {
		sync.Mutex
		// failures counts When calls per key since its last Forget.
		failures map[K]int
	}
}

var _ workqueue.TypedRateLimiter[string] = (*limiter[string])(nil)

func newLimiter[K comparable](c Config[K]) *limiter[K] {
	l := &limiter[K]{
		clock:     c.Clock,
		bucket:    rate.NewLimiter(c.Limit, c.Burst),
		baseDelay: c.BaseDelay,
		maxDelay:  c.MaxDelay,
	}
	l.mu.failures = make(map[K]int)
	return l
}

// When counts a failure of k and returns how long to wait before retrying
// it: the larger of baseDelay·2ⁿ (n failures before this one, capped at
// maxDelay) and the delay of one token from the bucket, which it reserves.
func (l *limiter[K]) When(k K) time.Duration {
	l.mu.Lock()
	n := l.mu.failures[k]
	l.mu.failures[k] = n + 1
	l.mu.Unlock()
	now := l.clock.Now()
	return max(l.backoff(n), l.bucket.ReserveN(now, 1).DelayFrom(now))
}

// Forget resets k's failure count. Tokens taken from the bucket stay taken.
func (l *limiter[K]) Forget(k K) {
	l.mu.Lock()
	delete(l.mu.failures, k)
	l.mu.Unlock()
}

// NumRequeues returns the failures of k since its last Forget.
func (l *limiter[K]) NumRequeues(k K) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.failures[k]
}

// backoff returns baseDelay·2ⁿ capped at maxDelay, without overflowing.
func (l *limiter[K]) backoff(n int) time.Duration {
	if n >= 63 || l.baseDelay > l.maxDelay>>n {
		return l.maxDelay
	}
	return l.baseDelay << n
}
