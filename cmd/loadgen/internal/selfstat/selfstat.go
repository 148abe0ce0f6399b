package selfstat

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
)

// CPUTime returns the process's user+system CPU time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUSplit is where a process's CPU time went, read at one instant; the
// difference of two readings splits a phase's CPU (Sub).
type CPUSplit struct {
	CPU    time.Duration // user+system (getrusage)
	Sys    time.Duration // in the kernel (system calls, page faults)
	GC     time.Duration // the Go runtime's estimate of GC work (marking, assists, pauses)
	Faults int64         // minor and major page faults
}

// ReadCPUSplit reads this process's CPU time and page faults (getrusage)
// and the runtime's GC CPU estimate (runtime/metrics). The runtime's CPU
// classes are a snapshot taken at the end of the last GC cycle
// (runtime/metrics.go, cpuStatsAggregate), so the difference of two
// readings holds the GC work of the cycles that ended between them.
func ReadCPUSplit() CPUSplit {
	var c CPUSplit
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		c.Sys = time.Duration(ru.Stime.Nano())
		c.Faults = ru.Minflt + ru.Majflt
	}
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindFloat64 {
		c.GC = time.Duration(s[0].Value.Float64() * float64(time.Second))
	}
	return c
}

// Sub is what was spent between reading d and reading c.
func (c CPUSplit) Sub(d CPUSplit) CPUSplit {
	return CPUSplit{CPU: c.CPU - d.CPU, Sys: c.Sys - d.Sys, GC: c.GC - d.GC, Faults: c.Faults - d.Faults}
}

// GCCPU is the GC's part of a span's CPU (c a difference of readings): the
// runtime's estimate, at most the span's CPU. The estimate is P-time, not
// CPU time: it counts a GC worker that holds a P while the kernel has
// descheduled its thread, and every P during a stop-the-world pause, and
// it is taken at cycle ends, not at the span's (ReadCPUSplit); on a loaded
// machine it can exceed the process's CPU over the span, which the GC's
// part of it cannot.
func (c CPUSplit) GCCPU() time.Duration { return max(0, min(c.GC, c.CPU)) }

// RSS returns the process's resident set size in bytes (Linux; 0 elsewhere).
func RSS() uint64 { return procfs.RSS(os.Getpid()) }

// HeapObjects returns the bytes of live and not-yet-swept heap objects, read
// without stopping the world.
func HeapObjects() uint64 { return Metric("/memory/classes/heap/objects:bytes") }

// GCCycles returns the number of completed GC cycles, read without stopping
// the world (runtime.ReadMemStats would).
func GCCycles() uint64 { return Metric("/gc/cycles/total:gc-cycles") }

// HeapReading is the runtime's allocation counters and GC goal at one
// instant, read without stopping the world; the difference of two readings
// is what a phase allocated.
type HeapReading struct {
	AllocBytes, AllocObjects uint64 // cumulative since the process started
	Live, Goal               uint64 // heap marked live by the last cycle, and the next cycle's goal
	Heap                     uint64 // live and not-yet-swept heap objects now
}

// ReadHeap takes a HeapReading.
func ReadHeap() HeapReading {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"},
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return HeapReading{AllocBytes: v(0), AllocObjects: v(1), Live: v(2), Goal: v(3), Heap: v(4)}
}

// Metric reads a uint64 metric of runtime/metrics by name (0 if the
// runtime does not know it or it is not a uint64).
func Metric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// LiveHeap collects garbage and returns the live heap. It stops the world.
func LiveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// GCStats reads the GC count and total pause time. It stops the world.
func GCStats() (count uint32, pause time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC, time.Duration(ms.PauseTotalNs)
}

// DefaultMemoryLimit sets a soft memory limit of half the machine's memory
// unless GOMEMLIMIT is set, so that GOGC's doubling of a multi-GiB live heap
// does not push a shared machine into swapping. It returns the limit in force.
func DefaultMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := procfs.MemTotal(); total > 0 {
			debug.SetMemoryLimit(int64(total / 2))
		}
	}
	return debug.SetMemoryLimit(-1)
}

// Peaks keeps the largest heap and resident set its samples saw. The zero
// value is ready; it is safe for concurrent use.
type Peaks struct {
	mu        sync.Mutex
	heap, rss uint64
}

// Sample reads the heap (HeapObjects) and resident set now, keeps them if
// they are the largest yet, and returns them.
func (p *Peaks) Sample() (heap, rss uint64) {
	heap, rss = HeapObjects(), RSS()
	p.mu.Lock()
	p.heap = max(p.heap, heap)
	p.rss = max(p.rss, rss)
	p.mu.Unlock()
	return heap, rss
}

// Get returns the largest heap and resident set sampled so far.
func (p *Peaks) Get() (heap, rss uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heap, p.rss
}
