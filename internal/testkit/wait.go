package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"
)

// Guard is how long a wait of this package lasts before it fails the test:
// long enough for a loaded two-core machine under -race, and only there to
// turn a hang into a failure.
const Guard = 60 * time.Second

// Eventually polls cond until it holds, and fails the test with what if it
// does not within Guard.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWhy(t, what, func() (bool, string) { return cond(), "" })
}

// EventuallyWhy is Eventually for a condition that says why it does not hold
// yet; the last reason is in the failure.
func EventuallyWhy(t testing.TB, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(Guard)
	sleep := time.Millisecond
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if why != "" {
				why = ": " + why
			}
			t.Fatalf("timed out (guard %v) waiting for %s%s", Guard, what, why)
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 10*time.Millisecond)
	}
}

// Run runs inf until the test ends or stop is called, and returns stop, which
// cancels it and waits for RunWithContext to return (failing the test if it
// does not within Guard).
func Run(t testing.TB, inf cache.SharedInformer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // goroutine: the informer under test; joined by stop.
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(Guard):
			t.Errorf("RunWithContext did not return within %v of its context being cancelled", Guard)
		}
	})
	t.Cleanup(stop)
	return stop
}

// RunSynced is Run, then waits until inf and every registration in regs
// have synced.
func RunSynced(t testing.TB, inf cache.SharedInformer, regs ...cache.ResourceEventHandlerRegistration) (stop func()) {
	t.Helper()
	stop = Run(t, inf)
	WaitSynced(t, inf.HasSynced)
	for _, r := range regs {
		WaitSynced(t, r.HasSynced)
	}
	return stop
}

// WaitSynced waits until every one of synced reports true.
func WaitSynced(t testing.TB, synced ...func() bool) {
	t.Helper()
	for _, s := range synced {
		Eventually(t, "caches to sync", s)
	}
}

// ListModes runs test twice, as a subtest with client-go's WatchListClient
// feature gate off ("watchList=false": the reflector lists, then watches)
// and on ("watchList=true": it streams the initial state if the
// ListerWatcher supports it). The gate is read when a reflector is created,
// so it holds for the whole subtest.
func ListModes(t *testing.T, test func(t *testing.T, watchList bool)) {
	for _, wl := range []bool{false, true} {
		name := "watchList=false"
		if wl {
			name = "watchList=true"
		}
		t.Run(name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, wl)
			test(t, wl)
		})
	}
}
