package main

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
)

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSplit is where a process's CPU time went, read at one instant; the
// difference of two readings splits a phase's CPU (sub).
type cpuSplit struct {
	cpu    time.Duration // user+system (getrusage)
	sys    time.Duration // in the kernel (system calls, page faults)
	gc     time.Duration // the Go runtime's estimate of GC work (marking, assists, pauses)
	faults int64         // minor and major page faults
}

// readCPUSplit reads this process's CPU time and page faults (getrusage)
// and the runtime's GC CPU estimate (runtime/metrics). The runtime's CPU
// classes are a snapshot taken at the end of the last GC cycle
// (runtime/metrics.go, cpuStatsAggregate), so the difference of two
// readings holds the GC work of the cycles that ended between them.
func readCPUSplit() cpuSplit {
	var c cpuSplit
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		c.sys = time.Duration(ru.Stime.Nano())
		c.faults = ru.Minflt + ru.Majflt
	}
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindFloat64 {
		c.gc = time.Duration(s[0].Value.Float64() * float64(time.Second))
	}
	return c
}

func (c cpuSplit) sub(d cpuSplit) cpuSplit {
	return cpuSplit{cpu: c.cpu - d.cpu, sys: c.sys - d.sys, gc: c.gc - d.gc, faults: c.faults - d.faults}
}

// gcCPU is the GC's part of a span's CPU (c a difference of readings): the
// runtime's estimate, at most the span's CPU. The estimate is P-time, not
// CPU time: it counts a GC worker that holds a P while the kernel has
// descheduled its thread, and every P during a stop-the-world pause, and
// it is taken at cycle ends, not at the span's (readCPUSplit); on a loaded
// machine it can exceed the process's CPU over the span, which the GC's
// part of it cannot.
func (c cpuSplit) gcCPU() time.Duration { return max(0, min(c.gc, c.cpu)) }

// rss returns the resident set size in bytes (Linux; 0 elsewhere).
func rss() uint64 { return procfs.RSS(os.Getpid()) }

// heapObjects returns the bytes of live and not-yet-swept heap objects, read
// without stopping the world.
func heapObjects() uint64 { return runtimeMetric("/memory/classes/heap/objects:bytes") }

// gcCycles returns the number of completed GC cycles, read without stopping
// the world (runtime.ReadMemStats would).
func gcCycles() uint64 { return runtimeMetric("/gc/cycles/total:gc-cycles") }

// heapReading is the runtime's allocation counters and GC goal at one
// instant, read without stopping the world; the difference of two readings
// is what a phase allocated.
type heapReading struct {
	allocBytes, allocObjects uint64 // cumulative since the process started
	live, goal               uint64 // heap marked live by the last cycle, and the next cycle's goal
	heap                     uint64 // live and not-yet-swept heap objects now
}

func readHeap() heapReading {
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
	return heapReading{allocBytes: v(0), allocObjects: v(1), live: v(2), goal: v(3), heap: v(4)}
}

// runtimeMetric reads a uint64 metric of runtime/metrics (0 if unknown).
func runtimeMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// liveHeap collects garbage and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// defaultMemoryLimit sets a soft memory limit of half the machine's memory
// unless GOMEMLIMIT is set, so that GOGC's doubling of a multi-GiB live heap
// does not push a shared machine into swapping. It returns the limit in force.
func defaultMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := memTotal(); total > 0 {
			debug.SetMemoryLimit(int64(total / 2))
		}
	}
	return debug.SetMemoryLimit(-1)
}

// memTotal reads MemTotal from /proc/meminfo (0 if unknown).
func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// freeOSMemory returns freed memory to the OS so the next trial's RSS
// starts low.
func freeOSMemory() { debug.FreeOSMemory() }

// gcStats reads the GC count and total pause time.
func gcStats() (count uint32, pause time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC, time.Duration(ms.PauseTotalNs)
}

// peaks samples heap and RSS until stopped and keeps the maxima.
type peaks struct {
	mu        sync.Mutex
	heap, rss uint64
}

func (p *peaks) sample() (heap, r uint64) {
	heap, r = heapObjects(), rss()
	p.mu.Lock()
	p.heap = max(p.heap, heap)
	p.rss = max(p.rss, r)
	p.mu.Unlock()
	return heap, r
}

func (p *peaks) get() (heap, r uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heap, p.rss
}

// cpuAttribution profiles the CPU at 100 Hz and splits the samples by the
// goroutine labels loadgen sets (impl, role). Goroutines inherit labels from
// their creator, so an informer's reflector, decoders, HTTP connections and
// handlers all count for it; the Go runtime's background GC workers carry no
// label and are reported as unattributed.
type cpuAttribution struct {
	buf bytes.Buffer
}

func startCPUAttribution() (*cpuAttribution, error) {
	a := &cpuAttribution{}
	if err := pprof.StartCPUProfile(&a.buf); err != nil {
		return nil, err
	}
	return a, nil
}

// stop ends the profile and returns CPU time per "impl/role" label pair
// ("server", "churn", "" for unlabelled).
func (a *cpuAttribution) stop() (map[string]time.Duration, error) {
	pprof.StopCPUProfile()
	return cpuByLabel(&a.buf)
}

// cpuByLabel splits a CPU profile's samples by their impl and role labels.
func cpuByLabel(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	// Sample values: [samples count, cpu nanoseconds].
	vi := len(p.SampleType) - 1
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		key := ""
		if impl := s.Label["impl"]; len(impl) > 0 {
			key = impl[0]
		}
		if role := s.Label["role"]; len(role) > 0 {
			if key != "" {
				key += "/"
			}
			key += role[0]
		}
		out[key] += time.Duration(s.Value[vi])
	}
	return out, nil
}
