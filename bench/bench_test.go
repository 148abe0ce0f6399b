package bench

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
)

// Sizes come from the environment so that a quick check can run the whole
// suite small (BENCH_OBJECTS=2000 go test -run '^$' -bench . -benchtime 1x).
var (
	benchObjects    = envInt("BENCH_OBJECTS", 100_000)
	benchNamespaces = envInt("BENCH_NAMESPACES", 100)
	benchUpdates    = envInt("BENCH_UPDATES", benchObjects)
	benchCPUUpdates = envInt("BENCH_CPU_UPDATES", 2*benchObjects)
	benchLatEvents  = envInt("BENCH_LATENCY_EVENTS", min(50_000, benchObjects))
	benchRate       = envInt("BENCH_RATE", 50_000)
	benchStallEvts  = envInt("BENCH_STALL_UPDATES", 2*benchObjects)
	benchStallWait  = time.Duration(envInt("BENCH_STALL_WAIT_MS", 2000)) * time.Millisecond
	// Tuning knobs for shardinformer; 0 keeps the pipeline's defaults.
	benchShards = envInt("BENCH_SHARDS", 0)
	benchRing   = envInt("BENCH_RING_CAPACITY", 0)
)

// accumulator averages each metric over a benchmark's iterations.
type accumulator struct {
	units []string
	sums  map[string]float64
	n     int
}

func (a *accumulator) add(r Result) {
	if a.sums == nil {
		a.sums = make(map[string]float64)
	}
	for _, m := range r.Metrics {
		if _, ok := a.sums[m.Unit]; !ok {
			a.units = append(a.units, m.Unit)
		}
		a.sums[m.Unit] += m.Value
	}
	a.n++
}

func (a *accumulator) report(b *testing.B) {
	for _, u := range a.units {
		b.ReportMetric(a.sums[u]/float64(a.n), u)
	}
}

// newEnv builds an env with the timer stopped; the workloads start it.
func newEnv(b *testing.B, cfg Config) *Env {
	b.Helper()
	b.StopTimer()
	b.ReportAllocs()
	if cfg.Namespaces == 0 {
		cfg.Namespaces = benchNamespaces
	}
	if benchShards > 0 {
		cfg.Options = append(cfg.Options, pipeline.WithShards(benchShards))
	}
	if benchRing > 0 {
		cfg.Options = append(cfg.Options, pipeline.WithRingCapacity(benchRing))
	}
	e, err := NewEnv(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkInitialSync: workload 1, the time until HasSynced and every
// handler (1 or 4) has seen every initial add, with LIST+WATCH and with
// WatchList.
func BenchmarkInitialSync(b *testing.B) {
	for _, list := range []string{"list", "watchlist"} {
		for _, handlers := range []int{1, 4} {
			for _, impl := range Impls {
				b.Run(fmt.Sprintf("impl=%s/objects=%d/list=%s/handlers=%d", impl, benchObjects, list, handlers), func(b *testing.B) {
					e := newEnv(b, Config{Impl: impl, Objects: benchObjects, WatchList: list == "watchlist"})
					var acc accumulator
					for range b.N {
						r, err := e.Sync(b, handlers)
						if err != nil {
							b.Fatal(err)
						}
						acc.add(r)
					}
					acc.report(b)
				})
			}
		}
	}
}

// producers are the two ways the update workloads produce their batch:
// behind the watch gate (the informer's drain of a backlog is timed) and
// live (the producer writes while the informer drains, competing for the
// CPU as a decoding reflector does).
var producers = []struct {
	name string
	live bool
}{{"gate", false}, {"live", true}}

// BenchmarkUpdates: workloads 2 and 3, steady updates to cached objects with 1
// and 4 handlers, and with 0, 1 and 4 goroutines reading the cache; each with
// the producer behind the gate and live.
func BenchmarkUpdates(b *testing.B) {
	cases := []struct{ handlers, readers int }{{1, 0}, {4, 0}, {1, 1}, {1, 4}}
	for _, p := range producers {
		for _, c := range cases {
			for _, impl := range Impls {
				name := fmt.Sprintf("impl=%s/objects=%d/producer=%s/handlers=%d/readers=%d", impl, benchObjects, p.name, c.handlers, c.readers)
				b.Run(name, func(b *testing.B) {
					e := newEnv(b, Config{Impl: impl, Objects: benchObjects, MaxEvents: benchUpdates})
					var hs []*Handler
					var regs []Registration
					for range c.handlers {
						h := NewHandler(0)
						hs = append(hs, h)
						regs = append(regs, Registration{Handler: h})
					}
					if err := e.Start(regs...); err != nil {
						b.Fatal(err)
					}
					defer e.Stop()
					var acc accumulator
					for range b.N {
						r, err := e.Updates(b, benchUpdates, hs, UpdateOptions{Readers: c.readers, Live: p.live})
						if err != nil {
							b.Fatal(err)
						}
						acc.add(r)
					}
					acc.report(b)
				})
			}
		}
	}
}

// BenchmarkCPUHandler: workload 4, one handler doing 20 µs of CPU work per
// event, which must see every update (BENCH_CPU_UPDATES, default two per
// pod): client-go's handler (one goroutine) against AddParallelEventHandler
// with GOMAXPROCS workers.
func BenchmarkCPUHandler(b *testing.B) {
	work := Work(20 * time.Microsecond)
	for _, p := range producers {
		for _, impl := range Impls {
			b.Run(fmt.Sprintf("impl=%s/objects=%d/producer=%s/work=20us", impl, benchObjects, p.name), func(b *testing.B) {
				e := newEnv(b, Config{Impl: impl, Objects: benchObjects, MaxEvents: benchCPUUpdates})
				h := NewHandler(work)
				if err := e.Start(Registration{Handler: h, Workers: runtime.GOMAXPROCS(0)}); err != nil {
					b.Fatal(err)
				}
				defer e.Stop()
				var acc accumulator
				for range b.N {
					r, err := e.Updates(b, benchCPUUpdates, []*Handler{h}, UpdateOptions{Live: p.live, Every: true})
					if err != nil {
						b.Fatal(err)
					}
					acc.add(r)
				}
				acc.report(b)
			})
		}
	}
}

// BenchmarkStalledHandler: workload 5, a stalled handler beside a normal one,
// for client-go (whose listener buffers grow without bound, named policy=grow)
// and for each of our full-ring policies.
func BenchmarkStalledHandler(b *testing.B) {
	type variant struct {
		impl   Impl
		policy pipeline.FullRingPolicy
	}
	vs := []variant{{ClientGo, pipeline.Grow}}
	for _, p := range pipeline.FullRingPolicies() {
		vs = append(vs, variant{ShardInformer, p})
	}
	for _, v := range vs {
		b.Run(fmt.Sprintf("impl=%s/objects=%d/policy=%s", v.impl, benchObjects, v.policy), func(b *testing.B) {
			e := newEnv(b, Config{Impl: v.impl, Objects: benchObjects, MaxEvents: benchStallEvts,
				Options: []pipeline.Option{pipeline.WithFullRingPolicy(v.policy)}})
			var acc accumulator
			for range b.N {
				r, err := e.Stalled(b, benchStallEvts, benchStallWait)
				if err != nil {
					b.Fatal(err)
				}
				acc.add(r)
			}
			acc.report(b)
		})
	}
}

// BenchmarkLatency: workload 6, write-to-handler latency at a fixed rate well
// below saturation and at saturation (rate=max).
func BenchmarkLatency(b *testing.B) {
	for _, r := range []int{benchRate, 0} {
		rateName := strconv.Itoa(r)
		if r == 0 {
			rateName = "max"
		}
		for _, impl := range Impls {
			b.Run(fmt.Sprintf("impl=%s/objects=%d/rate=%s", impl, benchObjects, rateName), func(b *testing.B) {
				e := newEnv(b, Config{Impl: impl, Objects: benchObjects, MaxEvents: benchLatEvents})
				h := NewHandler(0)
				if err := e.Start(Registration{Handler: h}); err != nil {
					b.Fatal(err)
				}
				defer e.Stop()
				var acc accumulator
				for range b.N {
					res, err := e.Latency(b, benchLatEvents, h, float64(r))
					if err != nil {
						b.Fatal(err)
					}
					acc.add(res)
				}
				acc.report(b)
			})
		}
	}
}
