package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Defaults applied to zero fields of Config. They match client-go's
// DefaultControllerRateLimiter: 5ms–1000s per-key backoff and a 10/s token
// bucket with a burst of 100.
const (
	DefaultLimit     rate.Limit    = 10
	DefaultBurst     int           = 100
	DefaultBaseDelay time.Duration = 5 * time.Millisecond
	DefaultMaxDelay  time.Duration = 1000 * time.Second
)

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("ratelimit: invalid config")

// Config configures a Queue. The zero value is valid and gives client-go's
// default controller rate limiting on the real clock.
type Config struct {
	// Limit is the sustained rate, in retries per second, of the token bucket
	// shared by every AddRateLimited call. Zero means DefaultLimit (10/s);
	// rate.Inf disables the bucket. Negative or NaN is an error.
	Limit rate.Limit
	// Burst is the token bucket's size. Zero means DefaultBurst (100).
	// Negative is an error. Ignored when Limit is rate.Inf.
	Burst int

	// BaseDelay is the per-key backoff of the first AddRateLimited of a key;
	// each further AddRateLimited before Forget doubles it, up to MaxDelay.
	// Zero means DefaultBaseDelay (5ms), MaxDelay zero means DefaultMaxDelay
	// (1000s). Negative values, and a MaxDelay below BaseDelay (after
	// defaults), are errors.
	//
	// The delay of a retry is the larger of the key's backoff and the delay
	// of the token bucket's reservation.
	BaseDelay, MaxDelay time.Duration

	// Clock is the source of time for delays, backoff, the token bucket and
	// observed durations. Nil means the real clock. Tests pass
	// k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker

	// Observer, if not nil, is told about depth, adds, latencies and retries.
	// See Observer for which goroutine calls each hook.
	Observer Observer

	// Name identifies the queue in errors and panics; an Observer built at the
	// edge would typically use it as a metric label.
	Name string
}

// Observer receives measurements from a Queue. Implementations export them,
// e.g. to Prometheus; this package imports no metrics library.
//
// Every hook is called synchronously by the goroutine that called the Queue
// method named below, with the queue's lock held, so that values arrive in
// the order the queue changed. Hooks must therefore be fast, must not block
// and must not call methods of the Queue (that would deadlock).
type Observer interface {
	// Depth reports the number of ready keys (Len) each time it changes.
	// Called by whichever method changed it: Add, AddAfter, AddRateLimited,
	// Get, Done, Len or ShutDown. Any of them may be the first call to see
	// that a delayed key is due and move it to the ready queue.
	Depth(n int)
	// Added reports that a key became pending: it was neither ready nor
	// awaiting a re-add. Deduplicated adds are not reported. Called from the
	// same methods as Depth, except Get.
	Added()
	// Latency reports how long a key was pending before Get handed it to a
	// worker: from the Add (or the due time of AddAfter) that made it
	// pending. Called from Get, by the worker.
	Latency(d time.Duration)
	// WorkDuration reports how long a key was processed: from Get to Done.
	// Called from Done, by the worker.
	WorkDuration(d time.Duration)
	// Retry reports an AddRateLimited accepted before ShutDown. Called from
	// AddRateLimited.
	Retry()
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
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
	return c
}

// validate reports the first problem with c, wrapping ErrInvalidConfig.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: queue %q: %s", ErrInvalidConfig, c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case math.IsNaN(float64(c.Limit)) || c.Limit < 0:
		return bad("Limit %v must be >= 0 (0 means %v/s, rate.Inf disables the bucket)", c.Limit, DefaultLimit)
	case c.Burst < 0:
		return bad("Burst %d must be >= 0 (0 means %d)", c.Burst, DefaultBurst)
	case c.BaseDelay < 0:
		return bad("BaseDelay %v must be >= 0 (0 means %v)", c.BaseDelay, DefaultBaseDelay)
	case c.MaxDelay < 0:
		return bad("MaxDelay %v must be >= 0 (0 means %v)", c.MaxDelay, DefaultMaxDelay)
	}
	if d := c.withDefaults(); d.MaxDelay < d.BaseDelay {
		return bad("MaxDelay %v is below BaseDelay %v (zero fields take their defaults)", d.MaxDelay, d.BaseDelay)
	}
	return nil
}
