package doorbell

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// deadlockGuard bounds each test that could hang on a lost wake-up; it is a
// failure detector, not a timing assertion.
const deadlockGuard = time.Minute

// TestWaitNoLostWakeup makes the notifier write and ring right after the
// waiter has read its condition as false, once before the waiter arms and
// once after: the two windows a wake-up could be lost in. If Wait skipped the
// second look, or Ring the flag, Wait would sleep for good.
func TestWaitNoLostWakeup(t *testing.T) {
	const rounds = 500
	for _, window := range []int{1, 2} { // the ready call after which the notifier runs
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
			defer cancel()
			d := New()
			var cond atomic.Int64
			notify, notified := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { // notifier
				for range rounds {
					select {
					case <-notify:
					case <-ctx.Done():
						return
					}
					cond.Add(1)
					d.Ring()
					notified <- struct{}{}
				}
			})
			for i := range rounds {
				calls, want := 0, int64(i+1)
				ok := d.Wait(ctx, func() bool {
					calls++
					v := cond.Load() >= want
					if !v && calls == window {
						notify <- struct{}{}
						<-notified
					}
					return v
				})
				if !ok {
					t.Fatalf("round %d: Wait = false: wake-up lost in window %d", i, window)
				}
				if calls <= window {
					t.Fatalf("round %d: Wait returned after %d looks, before reaching window %d", i, calls, window)
				}
			}
			wg.Wait()
		})
	}
}

// TestPingPong bounces a counter between two goroutines, each parking on its
// own doorbell in every round: a lost wake-up stalls the test until the guard.
func TestPingPong(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()
	pingBell, pongBell := New(), New()
	var ping, pong atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // echo
		for i := int64(1); i <= int64(rounds); i++ {
			if !pingBell.Wait(ctx, func() bool { return ping.Load() >= i }) {
				return
			}
			pong.Store(i)
			pongBell.Ring()
		}
	})
	for i := int64(1); i <= int64(rounds); i++ {
		ping.Store(i)
		pingBell.Ring()
		if !pongBell.Wait(ctx, func() bool { return pong.Load() >= i }) {
			t.Fatalf("round %d: lost wake-up (deadlock guard expired)", i)
		}
	}
	wg.Wait()
}

// TestManyNotifiers: several goroutines ring one waiter; it sees every write.
func TestManyNotifiers(t *testing.T) {
	const notifiers, each = 4, 5000
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()
	d := New()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range notifiers {
		wg.Go(func() {
			for range each {
				n.Add(1)
				d.Ring()
			}
		})
	}
	seen := int64(0)
	for seen < notifiers*each {
		if !d.Wait(ctx, func() bool { return n.Load() > seen }) {
			t.Fatalf("lost wake-up at %d of %d", seen, notifiers*each)
		}
		seen = n.Load()
	}
	wg.Wait()
}

func TestWaitCanceled(t *testing.T) {
	d := New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- d.Wait(ctx, func() bool { return false }) }()
	cancel()
	if <-done {
		t.Fatal("Wait = true with a condition that never holds")
	}
	if d.armed.Load() {
		t.Fatal("armed after a canceled Wait: the next Ring would leave a stale token for nothing")
	}
}

func TestWaitReadyReturnsAtOnce(t *testing.T) {
	d := New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ready wins over a done context, as Wait does not block
	if !d.Wait(ctx, func() bool { return true }) {
		t.Fatal("Wait = false with a condition that holds")
	}
	if d.armed.Load() || len(d.ch) != 0 {
		t.Fatal("Wait with a true condition armed the bell or left a token")
	}
}

func TestRingUnarmedLeavesNoToken(t *testing.T) {
	d := New()
	if d.Ring() {
		t.Fatal("Ring with nobody armed reported a wake-up")
	}
	if len(d.ch) != 0 {
		t.Fatal("Ring with nobody armed left a token")
	}
	d.Arm()
	if !d.Ring() {
		t.Fatal("Ring of an armed bell reported no wake-up")
	}
	if d.Ring() { // the first cleared the flag: one token for one parking
		t.Fatal("second Ring reported a wake-up: the first one disarmed the bell")
	}
	if len(d.ch) != 1 || d.armed.Load() {
		t.Fatalf("armed Ring: %d tokens, armed=%v; want 1, false", len(d.ch), d.armed.Load())
	}
	if !d.Sleep(context.Background()) {
		t.Fatal("Sleep = false with a token waiting")
	}
}

func TestAllocs(t *testing.T) {
	d := New()
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		d.Ring()
		d.Wait(ctx, func() bool { return true })
	}); n != 0 {
		t.Fatalf("Ring and an immediate Wait allocate %v times", n)
	}
}
