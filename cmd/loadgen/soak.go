package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/selfstat"
	"github.com/shardinformer/shardinformer/faults"
	"github.com/shardinformer/shardinformer/wire"
)

// The soak scenario (--scenario soak, make soak): the controller scenario
// held for --soak (default 1h) of churn under faults, each implementation
// alone in its process, one after the other. From the moment it is ready,
// each process samples every --soak-sample-every its live heap after a
// forced GC, its goroutines and the sizes of the long-lived structures the
// library exposes (wire's interners and versions table, the shards' fifo
// entries, the index partitions' tables and tombstones, the rings and
// overflows); the parent fits a line to each series after --soak-warmup
// (least squares; Theil–Sen for the goroutines) and fails the run when the
// heap's or the goroutines' slope is beyond ±--soak-max-slope percent per
// hour of their mean, when the cache is not the server's at the end (keys
// and resourceVersions) or a handler panicked.

// soakDefaultFaults is the soak's fault spec unless --faults says
// otherwise: every kind, spaced so that at 100k pods relists (a 410, a cut
// list) do not follow each other faster than an informer lists.
const soakDefaultFaults = "cut=0.02:every=30s,stall=0.01:2s:every=1m,500=0.01:every=1m,429=0.01:1s:every=1m,410=0.005:every=5m,seed=1"

// soakDefaultRate is the soak's churn rate unless --churn-rate says
// otherwise (events/s, creates:updates:deletes 1:8:1 with the pod count
// held steady).
const soakDefaultRate = 500

// soakConfig is the soak scenario's flags.
type soakConfig struct {
	duration time.Duration // churn under faults
	every    time.Duration // sampling period
	warmup   time.Duration // samples before this (from ready) are not fitted; 0 = duration/6
	maxSlope float64       // percent of the mean per hour
}

// settings is the report's record of c: what AnalyseSoak fits by and the
// soak section states.
func (c soakConfig) settings() report.Soak {
	return report.Soak{DurationSeconds: c.duration.Seconds(), SampleEverySeconds: c.every.Seconds(), WarmupSeconds: c.warmup.Seconds(),
		MaxSlopePctPerHour: c.maxSlope}
}

// soakFlags registers the soak scenario's flags into s.
func soakFlags(fs *flag.FlagSet, s *soakConfig) {
	fs.DurationVar(&s.duration, "soak", time.Hour, "soak scenario: how long the churn (and the faults) last, after every implementation's initial sync")
	fs.DurationVar(&s.every, "soak-sample-every", time.Minute, "soak scenario: how often each implementation's process samples its live heap (after a forced GC), goroutines and long-lived structures")
	fs.DurationVar(&s.warmup, "soak-warmup", 0, "soak scenario: samples in this time after an implementation is ready are shown but not fitted; 0 = a sixth of --soak")
	fs.Float64Var(&s.maxSlope, "soak-max-slope", 2, "soak scenario: the most the fitted slope of the live heap (least squares) and of the goroutines (Theil–Sen) may be, in percent of their mean per hour, either way")
}

// applySoak completes c for the soak scenario: the churn lasts --soak,
// keeps the pod count steady, and runs under --faults (soakDefaultFaults
// unless given; --faults none for none); one run unless --runs is given.
func (c *config) applySoak(fs *flag.FlagSet) []error {
	if c.scenario != report.ScenarioSoak {
		return nil
	}
	var errs []error
	s := &c.soak
	if s.duration <= 0 || s.every <= 0 || s.warmup < 0 || s.maxSlope <= 0 {
		errs = append(errs, fmt.Errorf("--soak %v, --soak-sample-every %v, --soak-warmup %v, --soak-max-slope %v: want positive values (warm-up: 0 or more)",
			s.duration, s.every, s.warmup, s.maxSlope))
	}
	if s.warmup == 0 {
		s.warmup = s.duration / 6
	}
	if s.warmup >= s.duration {
		errs = append(errs, fmt.Errorf("--soak-warmup %v: must be shorter than --soak %v", s.warmup, s.duration))
	}
	if n := int((s.duration - s.warmup) / s.every); s.every > 0 && n < 3 {
		errs = append(errs, fmt.Errorf("--soak %v, --soak-warmup %v, --soak-sample-every %v: %d samples after the warm-up, need at least 3 to fit a slope", s.duration, s.warmup, s.every, n))
	}
	if c.sideBySide {
		errs = append(errs, fmt.Errorf("--scenario soak: not --side-by-side (each implementation's heap and goroutines must be its own)"))
	}
	if flagSet(fs, "churn-events") || flagSet(fs, "churn-duration") {
		errs = append(errs, fmt.Errorf("--scenario soak: --soak sets the churn's length, not --churn-events or --churn-duration"))
	}
	if !flagSet(fs, "churn-rate") {
		c.churnRate = soakDefaultRate
	}
	if c.churnRate <= 0 {
		errs = append(errs, fmt.Errorf("--scenario soak: --churn-rate %v: want a rate (events/s)", c.churnRate))
	}
	c.churnDuration, c.churnEvents, c.steadyPods = s.duration, 0, true
	if !flagSet(fs, "runs") {
		c.runs = 1
	}
	switch spec := fs.Lookup("faults").Value.String(); {
	case spec == "none":
		c.faults = nil
	case !flagSet(fs, "faults"):
		fc, err := faults.ParseSpec(soakDefaultFaults)
		if err != nil {
			errs = append(errs, err)
		}
		c.faults = &fc
	}
	return errs
}

// soakSample reads c's process and structures now: a forced GC first, so
// that the live heap is the heap the last cycle marked (runtime/metrics
// /gc/heap/live:bytes).
func (c *client) soakSample() report.SoakPoint {
	before := selfstat.HeapObjects()
	runtime.GC()
	v := map[string]float64{
		"heap_live_bytes":    float64(selfstat.Metric("/gc/heap/live:bytes")),
		"heap_objects_bytes": float64(before),
		"goroutines":         float64(runtime.NumGoroutine()),
		"rss_bytes":          float64(selfstat.RSS()),
		"objects":            float64(len(c.inf.GetStore().ListKeys())),
	}
	if c.ctl != nil {
		v["workqueue_len"] = float64(c.ctl.queue.Len())
	}
	if c.reqs != nil {
		r := c.reqs.report()
		v["relists"], v["watch_restarts"] = float64(r.Relists), float64(r.WatchRestarts)
	}
	if c.counts != nil {
		v["overflow_episodes"] = float64(c.counts.episodes.Load())
		v["overflowed"] = float64(c.counts.overflow.Load())
		v["panics"] = float64(c.counts.panics.Load())
	}
	if c.ours != nil {
		st := c.ours.Stats()
		var queued, entries, slots, tombs, sets, ring, backlog, coalescing int
		for _, s := range st.Shards {
			queued += s.Queued
			entries += s.Entries
			slots += s.Table.Slots
			tombs += s.Table.Tombstones
			sets += s.Table.IndexSets
		}
		for _, l := range st.Listeners {
			ring += l.InRing
			backlog += l.InOverflow
			if l.Coalescing {
				coalescing++
			}
		}
		for k, n := range map[string]int{"fifo_queued": queued, "fifo_entries": entries, "index_slots": slots, "index_tombstones": tombs,
			"index_sets": sets, "ring_occupancy": ring, "overflow_backlog": backlog, "overflow_coalescing": coalescing} {
			v[k] = float64(n)
		}
		if w, ok := c.ours.ListerWatcher().(interface{ Stats() wire.Stats }); ok {
			ws := w.Stats()
			v["wire_interners"], v["wire_interned_strings"], v["wire_shared_values"] = float64(ws.Interners), float64(ws.InternedStrings), float64(ws.SharedValues)
			v["wire_versions"], v["wire_versions_dead"] = float64(ws.Versions), float64(ws.VersionsDead)
		}
	}
	return report.SoakPoint{At: time.Now().UnixNano(), Values: v}
}

// soakSampler is a client's soak sampling goroutine: a point at once, then
// every period, until stop.
type soakSampler struct {
	quit, exited chan struct{}
	once         sync.Once
}

// heapDir, when not empty (--profile heap), receives a heap profile taken
// after each sample's forced GC, soak-heap-<seconds since ready, to the millisecond>s.pprof, so
// that two points of the process can be diffed (go tool pprof -diff_base).
func startSoakSampler(c *client, every time.Duration, heapDir string, emit func(protocol.Message)) *soakSampler {
	s := &soakSampler{quit: make(chan struct{}), exited: make(chan struct{})}
	go func() { // the client's soak sampler goroutine; stop waits for it
		defer close(s.exited)
		tick := time.NewTicker(every)
		defer tick.Stop()
		start := time.Now()
		for {
			p := c.soakSample()
			if heapDir != "" {
				// to the millisecond: a sample late on a loaded machine is followed at once by the next
				name := filepath.Join(heapDir, fmt.Sprintf("soak-heap-%09.3fs.pprof", time.Since(start).Seconds()))
				if err := writeProfile("heap", name); err != nil { // a missing profile does not stop the soak
					fmt.Fprintf(os.Stderr, "loadgen: --profile heap: %v\n", err)
				}
			}
			emit(protocol.Message{Type: protocol.MsgSoak, Soak: &p})
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampler and waits for it; nil-safe.
func (s *soakSampler) stop() {
	if s == nil {
		return
	}
	s.once.Do(func() { close(s.quit) })
	<-s.exited
}
