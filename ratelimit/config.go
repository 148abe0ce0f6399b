package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Defaults of the built-in rate limiter, applied to zero fields of Config.
// They are those of client-go's DefaultTypedControllerRateLimiter: a per-key
// backoff of 5ms doubling up to 1000s, and a 10/s token bucket with a burst
// of 100 shared by all keys.
const (
	DefaultLimit     rate.Limit    = 10
	DefaultBurst     int           = 100
	DefaultBaseDelay time.Duration = 5 * time.Millisecond
	DefaultMaxDelay  time.Duration = 1000 * time.Second
)

// DefaultUnfinishedWorkUpdatePeriod is how often, by default, the
// unfinished-work and longest-running gauges are set while keys are in
// flight; client-go uses the same period.
const DefaultUnfinishedWorkUpdatePeriod = 500 * time.Millisecond

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("ratelimit: invalid config")

// Config configures a Queue. The zero value is valid: no metrics, the real
// clock and the built-in equivalent of client-go's default controller rate
// limiter.
type Config[K comparable] struct {
	// Name identifies the queue: it is the value of the "name" label of its
	// metrics, and it appears in errors and panics.
	Name string

	// RateLimiter decides how long AddRateLimited delays a key, and answers
	// Forget and NumRequeues. Any client-go limiter works, e.g.
	// workqueue.DefaultTypedControllerRateLimiter[K]() or the one
	// controller-runtime hands to its NewQueue option.
	//
	// Nil means the built-in limiter: the larger of a per-key exponential
	// backoff (BaseDelay·2ⁿ up to MaxDelay, n = NumRequeues) and the delay
	// of a token bucket shared by all keys (Limit, Burst). It behaves as
	// DefaultTypedControllerRateLimiter with the fields below, except that
	// its token bucket reads Clock rather than the wall clock, so a fake
	// clock drives all of it.
	RateLimiter workqueue.TypedRateLimiter[K]

	// Limit is the built-in limiter's sustained rate, in retries per second.
	// Zero means DefaultLimit; rate.Inf disables the bucket. Negative or NaN
	// is an error.
	Limit rate.Limit
	// Burst is the built-in limiter's bucket size. Zero means DefaultBurst.
	// Negative is an error. Ignored when Limit is rate.Inf.
	Burst int
	// BaseDelay and MaxDelay bound the built-in limiter's per-key backoff.
	// Zero means DefaultBaseDelay and DefaultMaxDelay. Negative values, and
	// a MaxDelay below BaseDelay (after defaults), are errors.
	BaseDelay, MaxDelay time.Duration

	// Clock is the source of time for delays, the built-in limiter and
	// metrics. Nil means the real clock. Tests pass a
	// k8s.io/utils/clock/testing.FakeClock, or run in a testing/synctest
	// bubble with the real clock.
	Clock clock.WithTicker

	// MetricsProvider, if not nil, receives the queue's metrics, exactly as
	// client-go's workqueue reports them: depth, adds, queue latency, work
	// duration, unfinished work, longest running processor and retries,
	// each created once with Name. client-go's and controller-runtime's
	// providers, and promadapter.WorkqueueMetricsProvider, plug in. Name
	// must then be set. There is no global provider.
	MetricsProvider workqueue.MetricsProvider

	// UnfinishedWorkUpdatePeriod is how often the unfinished-work and
	// longest-running gauges are set while keys are in flight. Zero means
	// DefaultUnfinishedWorkUpdatePeriod; negative is an error.
	UnfinishedWorkUpdatePeriod time.Duration
}

// withDefaults returns c with every zero field replaced by its default. The
// built-in limiter's fields are defaulted even when RateLimiter is set; they
// are unused then.
func (c Config[K]) withDefaults() Config[K] {
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.UnfinishedWorkUpdatePeriod == 0 {
		c.UnfinishedWorkUpdatePeriod = DefaultUnfinishedWorkUpdatePeriod
	}
	return c
}

// validate reports the first problem with c, wrapping ErrInvalidConfig.
func (c Config[K]) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: queue %q: %s", ErrInvalidConfig, c.Name, fmt.Sprintf(format, args...))
	}
	builtin := c.Limit != 0 || c.Burst != 0 || c.BaseDelay != 0 || c.MaxDelay != 0
	switch {
	case c.RateLimiter != nil && builtin:
		return bad("RateLimiter is set: Limit, Burst, BaseDelay and MaxDelay configure the built-in limiter and must be zero")
	case math.IsNaN(float64(c.Limit)) || c.Limit < 0:
		return bad("Limit %v must be >= 0 (0 means %v/s, rate.Inf disables the bucket)", c.Limit, DefaultLimit)
	case c.Burst < 0:
		return bad("Burst %d must be >= 0 (0 means %d)", c.Burst, DefaultBurst)
	case c.BaseDelay < 0:
		return bad("BaseDelay %v must be >= 0 (0 means %v)", c.BaseDelay, DefaultBaseDelay)
	case c.MaxDelay < 0:
		return bad("MaxDelay %v must be >= 0 (0 means %v)", c.MaxDelay, DefaultMaxDelay)
	case c.MetricsProvider != nil && c.Name == "":
		return bad("MetricsProvider is set but Name is empty: Name is the metrics' name label")
	case c.UnfinishedWorkUpdatePeriod < 0:
		return bad("UnfinishedWorkUpdatePeriod %v must be >= 0 (0 means %v)", c.UnfinishedWorkUpdatePeriod, DefaultUnfinishedWorkUpdatePeriod)
	}
	if d := c.withDefaults(); d.MaxDelay < d.BaseDelay {
		return bad("MaxDelay %v is below BaseDelay %v (zero fields take their defaults)", d.MaxDelay, d.BaseDelay)
	}
	return nil
}
