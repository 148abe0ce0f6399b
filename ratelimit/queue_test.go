package ratelimit

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestDedupAndFIFO(t *testing.T) {
	q, _ := newFakeQueue(t, Config{})
	for _, k := range []string{"a", "b", "a", "c", "b"} {
		q.Add(k)
	}
	if got := q.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	if got, want := drainReady(t, q), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestAddWhileProcessing(t *testing.T) {
	q, _ := newFakeQueue(t, Config{})
	q.Add("a")
	q.Add("b")
	mustGet(t, q, "a")
	q.Add("a") // while processing: not ready until Done
	q.Add("a") // deduplicated with the pending re-add
	if got := q.Len(); got != 1 {
		t.Fatalf("Len while a is processed = %d, want 1 (b only)", got)
	}
	mustGet(t, q, "b")
	if q.Len() != 0 {
		t.Fatal("a became ready before Done")
	}
	q.Done("a")
	// a goes to the back, b is still being processed.
	q.Add("c")
	if got, want := drainReady(t, q), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order after Done = %v, want %v", got, want)
	}
	q.Done("b")
	if q.Len() != 0 {
		t.Fatalf("b re-queued without an Add")
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

func TestDoneOfKeyNotProcessed(t *testing.T) {
	if !invariants {
		t.Skip("Done of an unknown key panics only in race and invariants builds")
	}
	q, _ := newFakeQueue(t, Config{Name: "q"})
	q.Add("ready")
	for _, k := range []string{"unknown", "ready"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Done(%q) did not panic", k)
				}
			}()
			q.Done(k)
		}()
	}
}

func TestGetCancelled(t *testing.T) {
	q, _ := newFakeQueue(t, Config{})
	q.Add("a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if k, ok := q.Get(ctx); ok {
		t.Fatalf("Get with a done context returned %q", k)
	}
	if q.Len() != 1 {
		t.Fatal("Get with a done context took the key")
	}
}

func TestGetBlocksUntilAddOrCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		g1 := getAsync(q, ctx)
		g2 := getAsync(q, context.Background())
		synctest.Wait()
		expectBlocked(t, g1)
		expectBlocked(t, g2)

		cancel()
		synctest.Wait()
		expectResult(t, g1, getResult{"", false})
		expectBlocked(t, g2)

		q.Add("a")
		synctest.Wait()
		expectResult(t, g2, getResult{"a", true})
		q.Done("a")
		q.ShutDown()
	})
}

// A wake-up sent to a Get that then returns because of its context must be
// passed on, or the key would sit ready while another Get sleeps.
func TestCancelledGetPassesOnWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		g1 := getAsync(q, ctx) // oldest waiter: Add wakes it first
		synctest.Wait()
		g2 := getAsync(q, context.Background())
		synctest.Wait()
		// With the lock held, g1 is parked in its select: cancel decides
		// that select for ctx.Done, and the Add then wakes g1 all the same
		// because g1 is still listed as waiting.
		q.mu.Lock()
		cancel()
		q.addLocked("a", time.Time{})
		q.mu.Unlock()
		synctest.Wait()
		expectResult(t, g1, getResult{"", false})
		expectResult(t, g2, getResult{"a", true})
		q.Done("a")
		q.ShutDown()
	})
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	_, err := New[string](Config{BaseDelay: -1, Name: "x"})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a negative BaseDelay: err = %v, want ErrInvalidConfig", err)
	}
}
