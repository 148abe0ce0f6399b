package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkIdle: an informer with 4 handlers and 100k cached pods that
// receives no events should use no CPU. It reports the process CPU time spent
// during an idle window as a share of one core, for client-go and for ours.
// The process runs nothing else meanwhile, so everything counted is the
// informer's (and the runtime's) idle cost.
func BenchmarkIdle(b *testing.B) {
	const window = 2 * time.Second
	for _, impl := range Impls {
		b.Run(fmt.Sprintf("impl=%s/objects=%d/handlers=4", impl, benchObjects), func(b *testing.B) {
			e := newEnv(b, Config{Impl: impl, Objects: benchObjects})
			regs := make([]Registration, 4)
			for i := range regs {
				regs[i] = Registration{Handler: NewHandler(0)}
			}
			if err := e.Start(regs...); err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			time.Sleep(window) // let initial-list handling and the GC settle
			var share float64
			b.ResetTimer()
			for range b.N {
				before := cpuTime()
				time.Sleep(window)
				share += float64(cpuTime()-before) / float64(window)
			}
			b.ReportMetric(100*share/float64(b.N), "idle-cpu-%core")
		})
	}
}
