// Command profile runs the bench package's end-to-end workloads under
// github.com/pkg/profile and writes one profile per workload and kind:
//
//	<out>/<impl>-<workload>-<kind>.pprof
//
// kinds: cpu, alloc (heap profile; alloc_space by default, inuse_space via
// -sample_index) by default; mutex, block, goroutine on request. Each
// (workload, kind) is a separate
// process (pkg/profile runs one profile at a time, and the mutex and block
// profiles are cumulative over a process's life); setup (building
// pods, syncing the informer) stays outside the profile except for the sync
// workload, whose sync is what is profiled. The goroutine profile is taken at
// the end of the timed run, while the informer is still running.
//
//	go run ./cmd/profile -objects 100000 -workloads sync,updates,readers
//	go tool pprof -http=:8080 profiles/shardinformer-updates-cpu.pprof
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pkg/profile"

	"github.com/shardinformer/shardinformer/bench"
)

func main() {
	var (
		impl      = flag.String("impl", string(bench.ShardInformer), "implementation: shardinformer or client-go")
		objects   = flag.Int("objects", 100_000, "cached pods")
		nss       = flag.Int("namespaces", 100, "namespaces the pods are spread over")
		updates   = flag.Int("updates", 1_000_000, "update events per profiled run of updates, readers and cpuhandler")
		rounds    = flag.Int("rounds", 3, "syncs per profiled run of the sync workload")
		workloads = flag.String("workloads", "sync,updates,readers", "comma-separated: sync, updates (4 handlers), readers (1 handler, 4 readers), cpuhandler (20 µs handler, parallel)")
		kinds     = flag.String("kinds", "cpu,alloc", "comma-separated profile kinds: cpu, alloc, mutex, block, goroutine")
		out       = flag.String("out", "profiles", "output directory")
	)
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	wls, ks := strings.Split(*workloads, ","), strings.Split(*kinds, ",")
	if len(wls) > 1 || len(ks) > 1 {
		// One process per profile: the mutex and block profiles are
		// cumulative over a process's life, and the heap should start clean.
		self, err := os.Executable()
		if err != nil {
			log.Fatal(err)
		}
		for _, wl := range wls {
			for _, kind := range ks {
				args := append(overrides(), "-workloads", wl, "-kinds", kind)
				cmd := exec.Command(self, args...)
				cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
				if err := cmd.Run(); err != nil {
					log.Fatalf("%s/%s: %v", wl, kind, err)
				}
			}
		}
		return
	}
	for _, wl := range wls {
		for _, kind := range ks {
			start := time.Now()
			file := filepath.Join(*out, fmt.Sprintf("%s-%s-%s.pprof", *impl, wl, kind))
			res, err := run(bench.Impl(*impl), wl, kind, file, *objects, *nss, *updates, *rounds)
			if err != nil {
				log.Fatalf("%s/%s: %v", wl, kind, err)
			}
			var ms []string
			for _, m := range res.Metrics {
				ms = append(ms, fmt.Sprintf("%.4g %s", m.Value, m.Unit))
			}
			log.Printf("%s (%v total): timed %v, %s", file, time.Since(start).Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), strings.Join(ms, ", "))
		}
	}
}

// overrides returns the command-line flags that were set, except workloads
// and kinds.
func overrides() []string {
	var args []string
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "workloads" && f.Name != "kinds" {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// run sets up the workload, then runs it once with the profile open during
// the timed region.
func run(impl bench.Impl, workload, kind, file string, objects, nss, updates, rounds int) (bench.Result, error) {
	var res bench.Result
	cfg := bench.Config{Impl: impl, Objects: objects, Namespaces: nss, MaxEvents: updates}
	pt, err := newProfTimer(kind, file)
	if err != nil {
		return res, err
	}
	if workload == "sync" {
		cfg.WatchList = true
		pt.starts = rounds
	}
	e, err := bench.NewEnv(cfg)
	if err != nil {
		return res, err
	}
	switch workload {
	case "sync":
		for range rounds {
			if res, err = e.Sync(pt, 1); err != nil {
				return res, err
			}
		}
		return res, nil
	case "updates", "readers", "cpuhandler":
		var hs []*bench.Handler
		var regs []bench.Registration
		readers, handlers, work, workers := 0, 4, 0, 1
		switch workload {
		case "readers":
			readers, handlers = 4, 1
		case "cpuhandler":
			handlers, work, workers = 1, bench.Work(20*time.Microsecond), runtime.GOMAXPROCS(0)
		}
		for range handlers {
			h := bench.NewHandler(work)
			hs = append(hs, h)
			regs = append(regs, bench.Registration{Handler: h, Workers: workers})
		}
		if err := e.Start(regs...); err != nil {
			return res, err
		}
		defer e.Stop()
		return e.Updates(pt, updates, hs, bench.UpdateOptions{Readers: readers, Every: workload == "cpuhandler"})
	}
	return res, fmt.Errorf("unknown workload %q", workload)
}

// profTimer is a bench.Timer that opens a profile at the first StartTimer and
// closes it at the starts-th StopTimer, then renames pkg/profile's file.
type profTimer struct {
	opt    func(*profile.Profile)
	name   string // file pkg/profile writes in dir
	dir    string
	file   string
	starts int
	stops  int
	p      interface{ Stop() }
}

func newProfTimer(kind, file string) (*profTimer, error) {
	pt := &profTimer{file: file, starts: 1}
	switch kind {
	case "cpu":
		pt.opt, pt.name = profile.CPUProfile, "cpu.pprof"
	case "alloc":
		pt.opt, pt.name = func(p *profile.Profile) { profile.MemProfile(p); profile.MemProfileAllocs(p) }, "mem.pprof"
	case "mutex":
		pt.opt, pt.name = profile.MutexProfile, "mutex.pprof"
	case "block":
		pt.opt, pt.name = profile.BlockProfile, "block.pprof"
	case "goroutine":
		pt.opt, pt.name = profile.GoroutineProfile, "goroutine.pprof"
	default:
		return nil, fmt.Errorf("unknown profile kind %q (want cpu, alloc, mutex, block or goroutine)", kind)
	}
	dir, err := os.MkdirTemp(filepath.Dir(file), ".profile-")
	if err != nil {
		return nil, err
	}
	pt.dir = dir
	return pt, nil
}

func (pt *profTimer) StartTimer() {
	if pt.p == nil {
		pt.p = profile.Start(pt.opt, profile.ProfilePath(pt.dir), profile.Quiet, profile.NoShutdownHook)
	}
}

func (pt *profTimer) StopTimer() {
	pt.stops++
	if pt.stops < pt.starts || pt.p == nil {
		return
	}
	if pt.name == "mem.pprof" {
		runtime.GC() // so that inuse_space is up to date
	}
	pt.p.Stop()
	pt.p = nil
	if err := os.Rename(filepath.Join(pt.dir, pt.name), pt.file); err != nil {
		log.Fatal(err)
	}
	os.Remove(pt.dir)
}
