package ratelimit

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestAddAfterReadyExactlyAtDueTime(t *testing.T) {
	q, fc := newFakeQueue(t, Config{})
	q.AddAfter("a", time.Second)
	fc.Step(time.Second - time.Nanosecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("Len 1ns before the due time = %d, want 0", n)
	}
	fc.Step(time.Nanosecond)
	if n := q.Len(); n != 1 {
		t.Fatalf("Len at the due time = %d, want 1", n)
	}
	mustGet(t, q, "a")
}

func TestAddAfterNonPositiveIsAdd(t *testing.T) {
	q, _ := newFakeQueue(t, Config{})
	q.AddAfter("a", 0)
	q.AddAfter("b", -time.Second)
	if got, want := drainReady(t, q), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("ready = %v, want %v", got, want)
	}
}

func TestAddAfterEarliestWins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delays []time.Duration
	}{
		{"later-second", []time.Duration{time.Second, 10 * time.Second}},
		{"earlier-second", []time.Duration{10 * time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, fc := newFakeQueue(t, Config{})
			for _, d := range tc.delays {
				q.AddAfter("a", d)
			}
			fc.Step(time.Second)
			if got, want := drainReady(t, q), []string{"a"}; !slices.Equal(got, want) {
				t.Fatalf("ready at 1s = %v, want %v", got, want)
			}
			// The later request merged into the earlier one: nothing at 10s.
			fc.Step(9 * time.Second)
			if n := q.Len(); n != 0 {
				t.Fatalf("Len at 10s = %d, want 0", n)
			}
		})
	}
}

func TestDelayedKeysBecomeReadyInDueOrder(t *testing.T) {
	q, fc := newFakeQueue(t, Config{})
	q.AddAfter("c", 3*time.Second)
	q.AddAfter("a", time.Second)
	q.AddAfter("b2", 2*time.Second)
	q.AddAfter("b1", 2*time.Second) // same due time as b2: insertion order
	q.AddAfter("b1", 2*time.Second) // not earlier: keeps its place
	q.Add("now")
	fc.Step(5 * time.Second)
	q.Add("later")
	want := []string{"now", "a", "b2", "b1", "c", "later"}
	if got := drainReady(t, q); !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

// A delay is a request to process the key at its due time, independent of the
// key being ready or in flight meanwhile.
func TestDelayIndependentOfReadyAndInFlight(t *testing.T) {
	q, fc := newFakeQueue(t, Config{})
	q.AddAfter("a", time.Second)
	q.Add("a")
	mustGet(t, q, "a")
	fc.Step(time.Second) // due while processing: re-added after Done
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d while a is processed", n)
	}
	q.Done("a")
	if got, want := drainReady(t, q), []string{"a"}; !slices.Equal(got, want) {
		t.Fatalf("after Done: %v, want %v", got, want)
	}
}

func TestBlockedGetWakesAtDueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, fc := newFakeQueue(t, Config{})
		g := getAsync(q, context.Background())
		synctest.Wait()
		q.AddAfter("a", time.Second)
		synctest.Wait()
		fc.Step(time.Second - time.Nanosecond)
		synctest.Wait()
		expectBlocked(t, g)
		fc.Step(time.Nanosecond)
		synctest.Wait()
		expectResult(t, g, getResult{"a", true})
		q.Done("a")
		q.ShutDown()
	})
}

func TestEarlierAddAfterRearmsBlockedGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, fc := newFakeQueue(t, Config{})
		q.AddAfter("late", 10*time.Second)
		g := getAsync(q, context.Background()) // arms a timer for 10s
		synctest.Wait()
		q.AddAfter("early", time.Second)
		synctest.Wait()
		fc.Step(time.Second)
		synctest.Wait()
		expectResult(t, g, getResult{"early", true})
		q.Done("early")

		g = getAsync(q, context.Background())
		synctest.Wait()
		fc.Step(9*time.Second - time.Nanosecond)
		synctest.Wait()
		expectBlocked(t, g)
		fc.Step(time.Nanosecond)
		synctest.Wait()
		expectResult(t, g, getResult{"late", true})
		q.Done("late")
		q.ShutDown()
	})
}

// Only one blocked Get watches the clock (the keeper). When it leaves, another
// must take over, whichever of them leaves.
func TestKeeperHandOff(t *testing.T) {
	for _, cancelFirst := range []bool{true, false} {
		name := map[bool]string{true: "cancel-keeper", false: "cancel-other"}[cancelFirst]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, fc := newFakeQueue(t, Config{})
				ctx1, cancel1 := context.WithCancel(context.Background())
				ctx2, cancel2 := context.WithCancel(context.Background())
				defer cancel2()
				g1 := getAsync(q, ctx1)
				synctest.Wait()
				g2 := getAsync(q, ctx2)
				synctest.Wait()
				q.AddAfter("a", time.Second) // wakes g1, the oldest, to arm its timer
				synctest.Wait()
				if n := fc.Waiters(); n != 1 {
					t.Fatalf("%d timers armed, want 1 (only the keeper's)", n)
				}
				survivor := g2
				if cancelFirst {
					cancel1()
				} else {
					cancel2()
					survivor = g1
				}
				synctest.Wait()
				fc.Step(time.Second)
				synctest.Wait()
				expectResult(t, survivor, getResult{"a", true})
				q.Done("a")
				cancel1()
			})
		})
	}
}

// The keeper may also leave because an Add woke it: keys become ready at
// their due time all the same.
func TestKeeperTakesReadyKeyAndHandsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, fc := newFakeQueue(t, Config{})
		g1 := getAsync(q, context.Background())
		synctest.Wait()
		q.AddAfter("delayed", time.Second) // g1 becomes the keeper
		synctest.Wait()
		q.Add("now") // g1 is the only waiter: it takes "now"
		synctest.Wait()
		expectResult(t, g1, getResult{"now", true})
		g2 := getAsync(q, context.Background())
		g3 := getAsync(q, context.Background())
		synctest.Wait()
		if n := fc.Waiters(); n != 1 {
			t.Fatalf("%d timers armed, want 1", n)
		}
		fc.Step(time.Second)
		synctest.Wait()
		var got []getResult
		for _, g := range []<-chan getResult{g2, g3} {
			select {
			case r := <-g:
				got = append(got, r)
			default:
			}
		}
		if !slices.Equal(got, []getResult{{"delayed", true}}) {
			t.Fatalf("results at the due time = %v, want exactly one Get with %q", got, "delayed")
		}
		q.Done("now")
		q.Done("delayed")
		q.ShutDown()
	})
}

// The keeper can be woken for a ready key while another Get blocks without a
// timer (the keeper was still armed when it arrived). When the keeper takes
// the key, it must wake that Get to watch the clock.
func TestKeeperTakingKeyWakesSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		g1 := getAsync(q, context.Background())
		synctest.Wait()
		q.AddAfter("delayed", time.Second) // g1 becomes the keeper
		synctest.Wait()
		late := &waiter{ch: make(chan struct{}, 1)} // stands for a Get arriving now
		q.mu.Lock()
		q.addLocked("now", time.Time{}) // wakes g1, the only waiter
		q.mu.waiters = append(q.mu.waiters, late)
		q.mu.Unlock()
		synctest.Wait()
		expectResult(t, g1, getResult{"now", true})
		q.mu.Lock()
		woken := late.woken
		if !woken {
			q.removeWaiterLocked(late)
		}
		q.mu.Unlock()
		if !woken {
			t.Fatal("the keeper took a key and left a blocked Get without a timer")
		}
		q.Done("now")
		q.ShutDown()
	})
}

// Keys due by the time a re-added key's Done runs became ready before it,
// even if no queue call looked at them in between.
func TestDueKeysGoBeforeLaterReadies(t *testing.T) {
	q, fc := newFakeQueue(t, Config{})
	q.Add("a")
	mustGet(t, q, "a")
	q.Add("a")
	q.AddAfter("b", time.Second)
	q.AddAfter("c", 2*time.Second)
	fc.Step(time.Second)
	q.Done("a") // b was due first
	fc.Step(time.Second)
	q.Add("d") // c was due first
	if got, want := drainReady(t, q), []string{"b", "a", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}
