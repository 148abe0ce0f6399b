package ratelimit

import (
	"math"
	"testing"
	"time"

	"golang.org/x/time/rate"
	testclock "k8s.io/utils/clock/testing"
)

// readyAfter checks that k becomes ready exactly want from now: not 1ns
// before, and at want. It consumes the key.
func readyAfter(t *testing.T, q *Queue[string], fc *testclock.FakeClock, k string, want time.Duration) {
	t.Helper()
	readyAt(t, q, fc, k, fc.Now().Add(want))
}

// readyAt checks that k becomes ready exactly at the given time. It consumes
// the key.
func readyAt(t *testing.T, q *Queue[string], fc *testclock.FakeClock, k string, at time.Time) {
	t.Helper()
	fc.SetTime(at.Add(-time.Nanosecond))
	if n := q.Len(); n != 0 {
		t.Fatalf("%d keys ready 1ns before %s is due at %v", n, k, at.Sub(epoch))
	}
	fc.SetTime(at)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d keys ready when %s is due at %v, want 1", n, k, at.Sub(epoch))
	}
	mustGet(t, q, k)
	q.Done(k)
}

func TestBackoffDoublesUpToMaxAndForgetResets(t *testing.T) {
	q, fc := newFakeQueue(t, Config{Limit: rate.Inf, BaseDelay: time.Second, MaxDelay: 8 * time.Second})
	for i, want := range []time.Duration{1, 2, 4, 8, 8, 8} {
		q.AddRateLimited("a")
		if got := q.NumRequeues("a"); got != i+1 {
			t.Fatalf("NumRequeues = %d, want %d", got, i+1)
		}
		readyAfter(t, q, fc, "a", want*time.Second)
	}
	if got := q.NumRequeues("b"); got != 0 {
		t.Fatalf("NumRequeues of another key = %d, want 0", got)
	}
	q.Forget("a")
	if got := q.NumRequeues("a"); got != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", got)
	}
	q.AddRateLimited("a")
	readyAfter(t, q, fc, "a", time.Second)
}

func TestBackoffNeverOverflows(t *testing.T) {
	q, _ := newFakeQueue(t, Config{BaseDelay: 3 * time.Millisecond, MaxDelay: math.MaxInt64})
	prev := time.Duration(0)
	for n := range 100 {
		d := q.backoff(n)
		if d < prev || d <= 0 {
			t.Fatalf("backoff(%d) = %v after %v", n, d, prev)
		}
		prev = d
	}
	if prev != math.MaxInt64 {
		t.Fatalf("backoff(99) = %v, want MaxDelay", prev)
	}
	if got, want := q.backoff(4), 48*time.Millisecond; got != want {
		t.Fatalf("backoff(4) = %v, want %v", got, want)
	}
}

// The bucket is shared by all keys: with 1/s and a burst of 2, five keys
// failing at once are retried at 0, 0, 1, 2 and 3 seconds (but never before
// their own backoff).
func TestBucketLimitsOverallRetryRate(t *testing.T) {
	q, fc := newFakeQueue(t, Config{Limit: 1, Burst: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	for _, k := range []string{"k0", "k1", "k2", "k3", "k4"} {
		q.AddRateLimited(k)
	}
	fc.Step(time.Millisecond - time.Nanosecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("Len before the backoff = %d", n)
	}
	fc.Step(time.Nanosecond)
	if n := q.Len(); n != 2 {
		t.Fatalf("Len after the backoff = %d, want the burst of 2", n)
	}
	drainReady(t, q)
	for i, k := range []string{"k2", "k3", "k4"} {
		readyAt(t, q, fc, k, epoch.Add(time.Duration(i+1)*time.Second))
	}
}

// The delay of a retry is the larger of the key's backoff and the bucket's.
func TestRetryDelayIsMaxOfBackoffAndBucket(t *testing.T) {
	q, fc := newFakeQueue(t, Config{Limit: 1, Burst: 1, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Hour})
	q.AddRateLimited("a") // backoff 100ms, bucket 0
	readyAfter(t, q, fc, "a", 100*time.Millisecond)
	q.AddRateLimited("b") // backoff 100ms, bucket 900ms (1/s, one token used 100ms ago)
	readyAfter(t, q, fc, "b", 900*time.Millisecond)
	for range 4 { // a: backoff 200ms, 400ms, 800ms, 1.6s; bucket refilled
		q.AddRateLimited("a")
		fc.Step(2 * time.Second)
		drainReady(t, q)
	}
	q.AddRateLimited("a") // backoff 3.2s > bucket 0
	readyAfter(t, q, fc, "a", 3200*time.Millisecond)
}
