package bench

import (
	"runtime"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// TestSyncWithoutWatchListClient: with client-go's WatchListClient gate off
// (KUBE_FEATURE_WatchListClient=false, a setting users have) the reflector
// lists even where the fake API supports WatchList; the sync workload counts
// that list as expected, not as a relist.
func TestSyncWithoutWatchListClient(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	for _, impl := range Impls {
		e, err := NewEnv(Config{Impl: impl, Objects: 50, Namespaces: 3, WatchList: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Sync(NopTimer{}, 2); err != nil {
			t.Errorf("%s: %v", impl, err)
		}
	}
}

// TestWorkloads runs every workload small against both implementations, so
// that `go test ./...` catches a harness that hangs, drops a watch or counts
// wrong. It checks what was delivered, never how fast.
func TestWorkloads(t *testing.T) {
	const objects = 300
	for _, impl := range Impls {
		t.Run(string(impl), func(t *testing.T) {
			for _, wl := range []bool{false, true} {
				e, err := NewEnv(Config{Impl: impl, Objects: objects, Namespaces: 7, WatchList: wl})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Sync(NopTimer{}, 2); err != nil {
					t.Fatalf("Sync(watchList=%v): %v", wl, err)
				}
			}

			e, err := NewEnv(Config{Impl: impl, Objects: objects, Namespaces: 7, MaxEvents: 5 * objects})
			if err != nil {
				t.Fatal(err)
			}
			h1, h2 := NewHandler(0), NewHandler(Work(time.Microsecond))
			if err := e.Start(Registration{Handler: h1}, Registration{Handler: h2, Workers: runtime.GOMAXPROCS(0)}); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{objects, objects / 3} {
				u1, u2 := h1.Updates(), h2.Updates()
				r, err := e.Updates(NopTimer{}, n, []*Handler{h1, h2}, UpdateOptions{Readers: 2, Live: n < objects})
				if err != nil {
					t.Fatal(err)
				}
				if d1, d2 := h1.Updates()-u1, h2.Updates()-u2; d1 != int64(n) || d2 != int64(n) {
					t.Errorf("Updates(%d): handlers saw %d and %d updates", n, d1, d2)
				}
				if !hasMetric(r, "reads/s") || !hasMetric(r, "cpu-ns/event") {
					t.Errorf("Updates with readers: no reads/s or cpu-ns/event in %v", r.Metrics)
				}
			}
			// Two updates per key, live, waiting for every one of them.
			u1, u2 := h1.Updates(), h2.Updates()
			if _, err := e.Updates(NopTimer{}, 2*objects, []*Handler{h1, h2}, UpdateOptions{Live: true, Every: true}); err != nil {
				t.Fatal(err)
			}
			if d1, d2 := h1.Updates()-u1, h2.Updates()-u2; d1 != 2*objects || d2 != 2*objects {
				t.Errorf("Updates(every): handlers saw %d and %d updates, want %d", d1, d2, 2*objects)
			}
			r, err := e.Latency(NopTimer{}, objects, h1, 20000)
			if err != nil {
				t.Fatal(err)
			}
			if !hasMetric(r, "p99-ns") || !hasMetric(r, "cpu-ns/event") {
				t.Errorf("Latency: no p99-ns or cpu-ns/event in %v", r.Metrics)
			}
			e.Stop()

			policies := []pipeline.FullRingPolicy{pipeline.Grow}
			if impl == ShardInformer {
				policies = pipeline.FullRingPolicies()
			}
			for _, p := range policies {
				e, err := NewEnv(Config{Impl: impl, Objects: objects, Namespaces: 7, MaxEvents: 4 * objects,
					Options: []pipeline.Option{pipeline.WithFullRingPolicy(p), pipeline.WithRingCapacity(16)}})
				if err != nil {
					t.Fatal(err)
				}
				r, err := e.Stalled(NopTimer{}, 2*objects, time.Second)
				if err != nil {
					t.Fatalf("Stalled(%v): %v", p, err)
				}
				if !hasMetric(r, "heap-growth-B/event") {
					t.Errorf("Stalled(%v): no heap growth in %v", p, r.Metrics)
				}
				// A normal handler that saw every event means the informer
				// drained the watch: nothing may be left to subtract.
				if metric(r, "done-frac") == 1 && metric(r, "backlog-events") != 0 {
					t.Errorf("Stalled(%v): every event delivered but backlog-events = %v", p, metric(r, "backlog-events"))
				}
			}
		})
	}
}

// metric returns the value of unit in r, or -1 if r has none.
func metric(r Result, unit string) float64 {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value
		}
	}
	return -1
}

func hasMetric(r Result, unit string) bool {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return true
		}
	}
	return false
}
