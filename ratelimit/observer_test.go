package ratelimit

import (
	"slices"
	"testing"
	"time"
)

func TestObserver(t *testing.T) {
	r := &recorder{}
	q, fc := newFakeQueue(t, Config{Observer: r, Limit: 1000, BaseDelay: time.Second, MaxDelay: time.Second})
	q.Add("a")
	q.Add("a") // deduplicated: not observed
	q.Add("b")
	fc.Step(2 * time.Second)
	mustGet(t, q, "a") // waited 2s
	q.Add("a")         // pending re-add: observed
	fc.Step(3 * time.Second)
	q.Done("a") // worked 3s; a goes back: depth 2
	q.AddRateLimited("c")
	fc.Step(time.Second)
	mustGet(t, q, "b") // waited 6s
	mustGet(t, q, "a") // pending since the re-add 4s ago
	mustGet(t, q, "c") // due 0s ago
	for _, k := range []string{"a", "b", "c"} {
		q.Done(k)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if want := []int{1, 2, 1, 2, 3, 2, 1, 0}; !slices.Equal(r.depths, want) {
		t.Errorf("depths = %v, want %v", r.depths, want)
	}
	if r.added != 4 {
		t.Errorf("added = %d, want 4", r.added)
	}
	if want := []time.Duration{2 * time.Second, 6 * time.Second, 4 * time.Second, 0}; !slices.Equal(r.latency, want) {
		t.Errorf("latency = %v, want %v", r.latency, want)
	}
	if want := []time.Duration{3 * time.Second, 0, 0, 0}; !slices.Equal(r.work, want) {
		t.Errorf("work = %v, want %v", r.work, want)
	}
	if r.retries != 1 {
		t.Errorf("retries = %d, want 1", r.retries)
	}
}
