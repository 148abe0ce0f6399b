package ratelimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// The built-in limiter against client-go's default controller rate limiter
// (MaxOf(ItemExponentialFailure, Bucket)) with the same parameters: random
// When, Forget and NumRequeues calls over a few keys, with time passing,
// must give the same answers. client-go's bucket reads the wall clock, so
// both run in a synctest bubble, where the wall clock is the bubble's.
func TestLimiterMatchesClientGoDefault(t *testing.T) {
	for seed := range 20 {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			limit, burst := rate.Limit(1+rng.IntN(20)), 1+rng.IntN(10)
			base := time.Duration(1+rng.IntN(50)) * time.Millisecond
			maxDelay := base << rng.IntN(12)
			ours := newLimiter(Config[string]{Limit: limit, Burst: burst, BaseDelay: base, MaxDelay: maxDelay, Clock: clock.RealClock{}})
			theirs := workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, maxDelay),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(limit, burst)},
			)
			for op := range 500 {
				k := fmt.Sprintf("k%d", rng.IntN(4))
				switch r := rng.IntN(10); {
				case r < 6:
					if a, b := ours.When(k), theirs.When(k); a != b {
						t.Fatalf("seed %d op %d: When(%s) = %v, client-go %v", seed, op, k, a, b)
					}
				case r < 7:
					ours.Forget(k)
					theirs.Forget(k)
				case r < 8:
					if a, b := ours.NumRequeues(k), theirs.NumRequeues(k); a != b {
						t.Fatalf("seed %d op %d: NumRequeues(%s) = %d, client-go %d", seed, op, k, a, b)
					}
				default:
					time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
				}
			}
		})
	}
}

func TestLimiterBackoffNeverOverflows(t *testing.T) {
	l := newLimiter(Config[string]{BaseDelay: 3 * time.Millisecond, MaxDelay: math.MaxInt64}.withDefaults())
	prev := time.Duration(0)
	for n := range 100 {
		d := l.backoff(n)
		if d < prev || d <= 0 {
			t.Fatalf("backoff(%d) = %v after %v", n, d, prev)
		}
		prev = d
	}
	if prev != math.MaxInt64 {
		t.Fatalf("backoff(99) = %v, want MaxDelay", prev)
	}
	if got, want := l.backoff(4), 48*time.Millisecond; got != want {
		t.Fatalf("backoff(4) = %v, want %v", got, want)
	}
}

// The queue's default limiter is the built-in one on the queue's clock: the
// bucket (1/s, burst 2) spaces out five keys failing at once.
func TestDefaultLimiterOnQueueClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := New(Config[string]{Limit: 1, Burst: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer q.ShutDown()
		for i := range 5 {
			q.AddRateLimited(fmt.Sprintf("k%d", i))
		}
		advance(time.Millisecond)
		if n := q.Len(); n != 2 {
			t.Fatalf("Len after the backoff = %d, want the burst of 2", n)
		}
		for i := 1; i <= 3; i++ {
			advance(time.Second)
			if n := q.Len(); n != 2+i {
				t.Fatalf("Len after %ds = %d, want %d", i, n, 2+i)
			}
		}
	})
}
