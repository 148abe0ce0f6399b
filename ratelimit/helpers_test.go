package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newFakeQueue returns a queue on a fake clock at epoch.
func newFakeQueue(t testing.TB, cfg Config) (*Queue[string], *testclock.FakeClock) {
	t.Helper()
	fc := testclock.NewFakeClock(epoch)
	cfg.Clock = fc
	q, err := New[string](cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q, fc
}

type getResult struct {
	key string
	ok  bool
}

// getAsync calls q.Get(ctx) in a new goroutine and delivers the result.
func getAsync(q *Queue[string], ctx context.Context) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		k, ok := q.Get(ctx)
		ch <- getResult{k, ok}
	}()
	return ch
}

// expectBlocked fails if the Get behind ch has returned.
func expectBlocked(t *testing.T, ch <-chan getResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Get returned %q, %v; want it still blocked", r.key, r.ok)
	default:
	}
}

// expectResult fails unless the Get behind ch has returned want.
func expectResult(t *testing.T, ch <-chan getResult, want getResult) {
	t.Helper()
	select {
	case r := <-ch:
		if r != want {
			t.Fatalf("Get = %q, %v; want %q, %v", r.key, r.ok, want.key, want.ok)
		}
	default:
		t.Fatalf("Get still blocked; want %q, %v", want.key, want.ok)
	}
}

// mustGet takes a key that must be ready now.
func mustGet(t *testing.T, q *Queue[string], want string) {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("Get: want %q, but nothing is ready", want)
	}
	k, ok := q.Get(context.Background())
	if !ok || k != want {
		t.Fatalf("Get = %q, %v; want %q, true", k, ok, want)
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

// drainReady takes every ready key, calls Done on it and returns them in order.
func drainReady(t *testing.T, q *Queue[string]) []string {
	t.Helper()
	var got []string
	for q.Len() > 0 {
		k, ok := q.Get(context.Background())
		if !ok {
			t.Fatalf("Get returned false with %d ready", q.Len())
		}
		got = append(got, k)
		q.Done(k)
	}
	return got
}

// check verifies the queue's internal invariants.
func (q *Queue[K]) check() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	counts := map[state]int{}
	for k, st := range q.mu.keys {
		switch st {
		case stateReady, stateProcessing, stateProcessingDirty:
			counts[st]++
		default:
			bad("key %v in state %d", k, st)
		}
		if _, ok := q.mu.times[k]; q.mu.times != nil && !ok {
			bad("key %v has no times", k)
		}
	}
	if q.mu.times != nil && len(q.mu.times) != len(q.mu.keys) {
		bad("%d keys, %d with times", len(q.mu.keys), len(q.mu.times))
	}
	seen := map[K]bool{}
	for i := 0; i < q.mu.ready.len(); i++ {
		k := q.mu.ready.at(i)
		if seen[k] {
			bad("key %v twice in the ready ring", k)
		}
		seen[k] = true
		if q.mu.keys[k] != stateReady {
			bad("ready key %v in state %d", k, q.mu.keys[k])
		}
	}
	if len(seen) != counts[stateReady] {
		bad("%d keys in the ready ring, %d in stateReady", len(seen), counts[stateReady])
	}
	if got := counts[stateProcessing] + counts[stateProcessingDirty]; q.mu.inFlight != got {
		bad("inFlight %d, want %d", q.mu.inFlight, got)
	}
	if q.mu.requeues != counts[stateProcessingDirty] {
		bad("requeues %d, want %d", q.mu.requeues, counts[stateProcessingDirty])
	}
	h := &q.mu.delayed
	if len(h.byKey) != len(h.items) {
		bad("delay heap: %d items, %d in byKey", len(h.items), len(h.byKey))
	}
	for i, e := range h.items {
		if e.idx != i {
			bad("delay heap: item %d has idx %d", i, e.idx)
		}
		if h.byKey[e.key] != e {
			bad("delay heap: byKey[%v] is not item %d", e.key, i)
		}
		if i > 0 && h.less(i, (i-1)/2) {
			bad("delay heap: item %d below its parent", i)
		}
	}
	if q.mu.shutDown && h.len() > 0 {
		bad("shut down with %d delayed keys", h.len())
	}
	for _, w := range q.mu.waiters {
		if w.woken {
			bad("woken waiter still listed")
		}
	}
	for _, w := range q.mu.spare {
		if len(w.ch) != 0 || slices.Contains(q.mu.waiters, w) || w == q.mu.keeper {
			bad("spare waiter still in use")
		}
	}
	return errors.Join(errs...)
}

// recorder is an Observer that records every call.
type recorder struct {
	mu      sync.Mutex
	depths  []int
	added   int
	latency []time.Duration
	work    []time.Duration
	retries int
}

func (r *recorder) Depth(n int) { r.mu.Lock(); r.depths = append(r.depths, n); r.mu.Unlock() }
func (r *recorder) Added()      { r.mu.Lock(); r.added++; r.mu.Unlock() }
func (r *recorder) Latency(d time.Duration) {
	r.mu.Lock()
	r.latency = append(r.latency, d)
	r.mu.Unlock()
}
func (r *recorder) WorkDuration(d time.Duration) {
	r.mu.Lock()
	r.work = append(r.work, d)
	r.mu.Unlock()
}
func (r *recorder) Retry() { r.mu.Lock(); r.retries++; r.mu.Unlock() }
