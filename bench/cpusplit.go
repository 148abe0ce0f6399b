package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Role is a part of the process that CPU time is charged to (see classify).
type Role string

// The roles of a CPU split, in report order.
const (
	RoleProducer  Role = "producer"  // the fake API and the forwarding goroutine: the watch stream's source
	RoleReflector Role = "reflector" // client-go's Reflector: reading the watch, resourceVersions
	RoleInformer  Role = "informer"  // the informer under test: queues, indexer, dispatch to listeners
	RoleHandler   Role = "handler"   // the benchmark's handlers
	RoleReaders   Role = "readers"   // the cache readers of the readers workloads
	RoleGC        Role = "gc"        // marking, sweeping, assists
	RoleSched     Role = "sched"     // the scheduler: parking, waking, futexes, idle Ps looking for work
	RoleOther     Role = "other"
)

var roles = []Role{RoleProducer, RoleReflector, RoleInformer, RoleHandler, RoleReaders, RoleGC, RoleSched, RoleOther}

// cpuProbe measures the CPU time of a timed region: always the process's
// rusage, and, when BENCH_CPU_SPLIT_HZ is set, a CPU profile of the region
// split by role.
type cpuProbe struct {
	cpu0    time.Duration // at start; end turns it into the region's CPU time
	buf     bytes.Buffer
	profile bool
	name    string // the benchmark's, for BENCH_CPU_PROFILE_DIR
}

// benchSplitHz is the CPU profile's sampling rate for the split (0: off). At
// the runtime's default 100 Hz a run of a second yields about 200 samples on
// two cores; a higher rate gives a finer split, up to the kernel's tick rate
// (often 250 Hz; see report). The runtime warns on stderr that it cannot set
// a rate other than 100, and uses it anyway.
var benchSplitHz = envInt("BENCH_CPU_SPLIT_HZ", 0)

// benchProfileDir, if set (BENCH_CPU_PROFILE_DIR), is where each split's
// CPU profile is also written, for pprof: <dir>/<benchmark name>.<n>.pprof.
var benchProfileDir = os.Getenv("BENCH_CPU_PROFILE_DIR")

// startCPU starts measuring the timed region of t. Call end and report with
// the same probe at the end of the region.
func startCPU(t Timer) *cpuProbe {
	p := &cpuProbe{}
	if b, ok := t.(interface{ Name() string }); ok {
		p.name = b.Name()
	}
	if benchSplitHz > 0 {
		if benchSplitHz != 100 {
			runtime.SetCPUProfileRate(benchSplitHz)
		}
		// Fails if another CPU profile runs (go test -cpuprofile): then
		// there is no split, only the total.
		p.profile = pprof.StartCPUProfile(&p.buf) == nil
	}
	p.cpu0 = cpuTime()
	return p
}

// end ends the region. Call it once, right after the timer stops.
func (p *cpuProbe) end() {
	p.cpu0 = cpuTime() - p.cpu0
	if p.profile {
		pprof.StopCPUProfile()
		runtime.SetCPUProfileRate(0)
	}
}

// report adds cpu-ns/<per> (the whole process's CPU time in the region over
// n) and, with a profile, <role>-ns/<per> for every role that took any: its
// share of the profile's samples times cpu-ns/<per>. (The profile's own total
// falls short of the process's CPU time: the kernel checks a thread's CPU
// timer once per tick, so at rates above its tick rate samples are lost, and
// at any rate time not yet worth a sample when a thread parks is never
// counted. The shares are what it measures.) Call it after end.
func (p *cpuProbe) report(res *Result, n float64, per string) {
	res.add("cpu-ns/"+per, float64(p.cpu0)/n)
	if !p.profile {
		return
	}
	if benchProfileDir != "" {
		p.save()
	}
	split, err := splitProfile(bytes.NewReader(p.buf.Bytes()))
	if err != nil {
		panic(err) // our own profile, just written: a bug
	}
	var sampled time.Duration
	for _, d := range split {
		sampled += d
	}
	if sampled == 0 {
		return
	}
	for _, r := range roles {
		if d, ok := split[r]; ok {
			res.add(string(r)+"-ns/"+per, float64(p.cpu0)*float64(d)/float64(sampled)/n)
		}
	}
}

// save writes the profile to benchProfileDir, under a name no earlier run took.
func (p *cpuProbe) save() {
	base := filepath.Join(benchProfileDir, strings.NewReplacer("/", "_", "=", "-").Replace(p.name))
	for i := 0; ; i++ {
		f, err := os.OpenFile(fmt.Sprintf("%s.%d.pprof", base, i), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			_, err = f.Write(p.buf.Bytes())
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			panic(fmt.Sprintf("bench: BENCH_CPU_PROFILE_DIR: %v", err))
		}
		return
	}
}

// splitProfile sums a CPU profile's samples by role.
func splitProfile(r io.Reader) (map[Role]time.Duration, error) {
	prof, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	vi := len(prof.SampleType) - 1 // [samples count, cpu nanoseconds]
	out := map[Role]time.Duration{}
	var stack []string
	for _, s := range prof.Sample {
		stack = stack[:0]
		for _, loc := range s.Location {
			for _, l := range loc.Line { // innermost first, inlined frames included
				stack = append(stack, l.Function.Name)
			}
		}
		out[classify(stack)] += time.Duration(s.Value[vi])
	}
	return out, nil
}

const (
	modPrefix   = "github.com/shardinformer/shardinformer/"
	cachePrefix = "k8s.io/client-go/tools/cache."
)

// classify charges a sample to a role by its stack (innermost frame first):
// the first frame, from the innermost outwards, that belongs to a role wins,
// except that everything a reader goroutine does is the readers'. So a
// sample in the scheduler or the GC is theirs whoever called it (a channel
// send that wakes a goroutine counts its wake-up as sched), and a sample in a
// helper (a map, a malloc, meta.Accessor) belongs to the code that called it:
// client-go's key function called by our store is the informer's, a channel
// receive in the Reflector is the reflector's, an index scan in a reader is
// the readers'.
func classify(stack []string) Role {
	role := RoleOther
	for i, f := range stack {
		r, ok := roleOf(f)
		if !ok {
			continue
		}
		if r == RoleGC || r == RoleSched {
			return r
		}
		role = r
		for _, g := range stack[i:] {
			if strings.HasPrefix(g, modPrefix+"bench.startReaders") {
				return RoleReaders
			}
		}
		break
	}
	return role
}

func roleOf(f string) (Role, bool) {
	if fn, ok := strings.CutPrefix(f, "runtime."); ok {
		return runtimeRole(fn)
	}
	if fn, ok := strings.CutPrefix(f, modPrefix); ok {
		switch {
		case strings.HasPrefix(fn, "bench.(*Handler)"), strings.HasPrefix(fn, "bench.spin"):
			return RoleHandler, true
		case strings.HasPrefix(fn, "bench.startReaders"):
			return RoleReaders, true
		case strings.HasPrefix(fn, "internal/fakeapi."), strings.HasPrefix(fn, "bench.newGatedWatch"),
			strings.HasPrefix(fn, "bench.(*gate)"), strings.HasPrefix(fn, "bench.(*Env).produce"):
			return RoleProducer, true
		case strings.HasPrefix(fn, "bench."):
			return "", false // the benchmark's own frames: look further out
		}
		return RoleInformer, true // pipeline, fifo, index, ring, shards, doorbell
	}
	if fn, ok := strings.CutPrefix(f, cachePrefix); ok {
		if strings.HasPrefix(fn, "(*Reflector)") || strings.HasPrefix(fn, "handleWatch") ||
			strings.HasPrefix(fn, "handleAnyWatch") || strings.HasPrefix(fn, "handleListWatch") {
			return RoleReflector, true
		}
		return RoleInformer, true
	}
	return "", false
}

// runtimeRole charges the runtime's GC and scheduler functions; the rest of
// the runtime (maps, channels' own work, malloc) goes to the caller.
func runtimeRole(fn string) (Role, bool) {
	for _, p := range []string{"gc", "bgsweep", "bgscavenge", "markroot", "scanobject", "scanblock",
		"scanstack", "greyobject", "sweepone", "(*mspan).sweep", "(*sweepLocked)", "deductSweepCredit", "wbBuf", "bulkBarrier"} {
		if strings.HasPrefix(fn, p) {
			return RoleGC, true
		}
	}
	for _, p := range []string{"schedule", "findRunnable", "park_m", "goready", "ready", "wakep", "startm",
		"stopm", "mPark", "notesleep", "notewakeup", "futex", "gopark", "goschedImpl", "gosched_m",
		"runqsteal", "runqgrab", "handoffp", "exitsyscall", "entersyscall", "usleep", "osyield", "sysmon",
		"mcall", "goexit0", "netpoll", "checkTimers", "stealWork", "resetspinning", "execute", "casgstatus"} {
		if strings.HasPrefix(fn, p) {
			return RoleSched, true
		}
	}
	return "", false
}

// envInt reads a non-negative integer setting from the environment, def when
// unset; a malformed value panics with the variable's name.
func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		panic(fmt.Sprintf("bench: %s=%q: want a non-negative integer", name, v))
	}
	return n
}
