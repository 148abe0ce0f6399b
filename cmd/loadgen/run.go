package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientfeatures "k8s.io/client-go/features"
)

// errCheckFailed is returned by run when a correctness check failed.
var errCheckFailed = errors.New("correctness check failed")

// run performs the whole load test and returns the report. It returns
// errCheckFailed (with the report) when a check failed.
func run(ctx context.Context, c config, stdout, stderr io.Writer) (*report, error) {
	if err := setWatchList(c.watchList); err != nil {
		return nil, err
	}
	if c.profile != "" {
		stopProfile, err := startProfile(c.profile, c.profileDir)
		if err != nil {
			return nil, err
		}
		defer stopProfile()
	}
	memLimit := defaultMemoryLimit()
	var reg *prometheus.Registry
	live := &liveState{}
	if c.metricsAddr != "" {
		var stop func()
		var err error
		reg, stop, err = serveMetrics(c.metricsAddr, live, stderr, c.onMetrics)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	rep := &report{
		Schema:    1,
		StartedAt: time.Now(),
		Mode:      "side-by-side",
		Host: hostInfo{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
			NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), MemoryLimit: memLimit},
		Config: reportConfig{Impls: c.impls, Sequential: c.sequential, Pods: c.pods, Namespaces: c.namespaces,
			ChurnRate: c.churnRate, ChurnDuration: c.churnDuration.Seconds(), ChurnEvents: c.churnEvents,
			Mix: c.mix.String(), Handlers: c.handlers, HandlerWork: c.handlerWork.Seconds(), Readers: c.readers,
			Workers: c.workers, Shards: c.shards, RingSize: c.ringSize, Policy: c.policy.String(),
			ContentType: c.contentType, WatchList: c.watchList, ManagedFields: c.managedFields,
			Target: "apisim", Seed: c.seed},
	}
	if c.kubeconfig != "" {
		rep.Config.Target = "cluster"
	}
	groups := [][]string{c.impls}
	if c.sequential {
		rep.Mode = "sequential"
		groups = nil
		for _, impl := range c.impls {
			groups = append(groups, []string{impl})
		}
	}
	prog := newProgress(stderr, c.progress)
	for i, impls := range groups {
		var promReg prometheus.Registerer
		if reg != nil {
			promReg = reg
		}
		sr, irs, err := runScenario(ctx, c, i, impls, prog, live, promReg)
		prog.done()
		if err != nil {
			return nil, fmt.Errorf("scenario %d (%v): %w", i+1, impls, err)
		}
		rep.Scenarios = append(rep.Scenarios, sr)
		rep.Implementations = append(rep.Implementations, irs...)
		freeOSMemory()
	}
	rep.Pass = true
	for _, ir := range rep.Implementations {
		rep.Pass = rep.Pass && ir.Check.Pass
	}
	printSummary(stdout, rep)
	if c.out != "" {
		if err := writeJSON(c.out, rep); err != nil {
			return rep, fmt.Errorf("--out: %w", err)
		}
	}
	if c.html != "" {
		if err := writeHTML(c.html, rep); err != nil {
			return rep, fmt.Errorf("--html: %w", err)
		}
	}
	if !rep.Pass {
		return rep, errCheckFailed
	}
	return rep, nil
}

// setWatchList sets client-go's WatchListClient gate for this process.
func setWatchList(mode string) error {
	if mode == "default" {
		return nil
	}
	setter, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	if !ok {
		return errors.New("--watchlist: client-go's feature gates cannot be set in this build")
	}
	return setter.Set(clientfeatures.WatchListClient, mode == "on")
}

func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runScenario populates a fresh target, runs impls on it side by side through
// sync, churn and catch-up, checks them, and measures.
func runScenario(ctx context.Context, c config, index int, impls []string, prog *progress, live *liveState, reg prometheus.Registerer) (scenarioReport, []implReport, error) {
	sr := scenarioReport{Impls: impls, InitialPods: c.pods}
	var t target
	if c.kubeconfig != "" {
		ct, err := newClusterTarget(ctx, c, newRunID())
		if err != nil {
			return sr, nil, err
		}
		t = ct
	} else {
		st, err := newSimTarget(c)
		if err != nil {
			return sr, nil, err
		}
		t = st
	}
	defer func() {
		// A fresh context: cleanup must run after Ctrl-C too.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := t.close(cctx); err != nil {
			fmt.Fprintln(prog.w, "loadgen:", err)
		}
	}()
	sr.Target = t.kind()

	// Populate.
	popStart := time.Now()
	if err := t.populate(ctx, c.pods, func(n int) {
		prog.update(func() string {
			return fmt.Sprintf("[populate %s] %d/%d pods created in %s", since(popStart), n, c.pods, t.kind())
		})
	}); err != nil {
		return sr, nil, fmt.Errorf("populate: %w", err)
	}
	sr.PopulateSeconds = time.Since(popStart).Seconds()
	if st, ok := t.(*simTarget); ok {
		var err error
		pprof.Do(ctx, pprof.Labels("role", "server"), func(context.Context) { err = st.start() })
		if err != nil {
			return sr, nil, err
		}
	}
	sr.URL = t.url()

	// Informers.
	var churnPtr atomic.Pointer[churner]
	churnOf := func() *churner { return churnPtr.Load() }
	var runs []*implRun
	for _, name := range impls {
		r, err := newImplRun(name, c, t, churnOf, reg)
		if err != nil {
			return sr, nil, err
		}
		runs = append(runs, r)
	}
	live.set(runs, nil)
	defer live.set(nil, nil)
	stopped := false
	defer func() {
		if !stopped {
			for _, r := range runs {
				r.stop()
			}
		}
	}()

	var attr *cpuAttribution
	if c.profile != "cpu" {
		var err error
		if attr, err = startCPUAttribution(); err != nil {
			attr = nil // someone else profiles the CPU; report process CPU only
		}
	}
	var pk peaks
	gc0, pause0 := gcStats()
	cpu0 := cpuTime()
	start := time.Now()
	smp := newSampler(c, runs, &pk, start, prog)
	smp.setPhase("sync", nil)
	go smp.run()
	defer smp.stop()

	for _, r := range runs {
		r.start(ctx)
	}
	for {
		all := true
		for _, r := range runs {
			all = r.synced() && all
		}
		if all {
			break
		}
		select {
		case <-ctx.Done():
			return sr, nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	cpuSynced := cpuTime()

	// Churn, with readers.
	g := newChurner(t, c)
	churnPtr.Store(g)
	live.set(runs, g)
	smp.setPhase("churn", g)
	nss := make([]string, c.namespaces)
	for i := range nss {
		nss[i] = t.namespace(i)
	}
	for _, r := range runs {
		if c.readers > 0 {
			r.startReaders(ctx, c.readers, nss, c.seed)
		}
	}
	var churnErr error
	pprof.Do(ctx, pprof.Labels("role", "churn"), func(ctx context.Context) { churnErr = g.run(ctx, c.pods) })
	for _, r := range runs {
		r.stopReaders()
	}
	if ctx.Err() != nil {
		return sr, nil, ctx.Err()
	}
	sr.Churn = churnReport{Seconds: g.stoppedAt.Sub(g.startedAt).Seconds(), Creates: g.creates.Load(),
		Updates: g.updates.Load(), Deletes: g.deletes.Load(), Emitted: g.emitted(), Failed: g.failed.Load()}
	if sr.Churn.Seconds > 0 {
		sr.Churn.Rate = float64(sr.Churn.Emitted) / sr.Churn.Seconds
	}
	if churnErr != nil {
		fmt.Fprintf(prog.w, "\nloadgen: churn stopped early: %v\n", churnErr)
	}

	// Catch up and check.
	smp.setPhase("catch-up", g)
	want, err := t.state(ctx)
	if err != nil {
		return sr, nil, fmt.Errorf("read the server's final state: %w", err)
	}
	sr.ServerObjects = len(want)
	checks := make([]checkResult, len(runs))
	deadline := time.Now().Add(c.quiesce)
	for {
		pending := 0
		for i, r := range runs {
			if !r.caughtUp.IsZero() {
				continue
			}
			checks[i] = check(r, want)
			if checks[i].Pass {
				r.caughtUp = time.Now()
			} else {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return sr, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if c.afterCheck != nil {
		c.afterCheck()
	}
	smp.stop()
	cpuEnd := cpuTime()
	gc1, pause1 := gcStats()
	if attr != nil {
		if by, err := attr.stop(); err == nil {
			sr.CPUByLabel = map[string]float64{}
			for k, v := range by {
				sr.CPUByLabel[k] = v.Seconds()
			}
		}
	}
	sr.CPUSeconds = (cpuEnd - cpu0).Seconds()
	sr.SyncCPUSeconds = (cpuSynced - cpu0).Seconds()
	sr.ChurnCPUSeconds = (cpuEnd - cpuSynced).Seconds()
	sr.PeakHeapBytes, sr.PeakRSSBytes = pk.get()
	sr.GCCount, sr.GCPauseSeconds = gc1-gc0, (pause1 - pause0).Seconds()
	sr.Timeline = smp.points()

	// Per implementation results, then release each to measure its heap.
	var irs []implReport
	for i, r := range runs {
		irs = append(irs, implResult(c, index, r, g, checks[i], &sr, len(runs) > 1))
	}
	live.set(nil, nil)
	// Retained heap: drop loadgen's per-key bookkeeping first, then stop and
	// drop one informer at a time; each one's share is the live heap it
	// takes with it.
	h0 := liveHeap()
	for _, r := range runs {
		for _, h := range r.handlers {
			h.release()
		}
	}
	prev := liveHeap()
	for i := range irs {
		irs[i].HandlerStateBytes = sub(h0, prev) / uint64(len(runs))
	}
	for i, r := range runs {
		r.stop()
		r.inf, r.ours, r.regs = nil, nil, nil
		if reg != nil && r.collector != nil {
			reg.Unregister(r.collector) // it holds the informer
		}
		h := liveHeap()
		irs[i].RetainedHeapBytes = sub(prev, h)
		prev = h
		if irs[i].Objects > 0 {
			irs[i].HeapBytesPerObject = float64(irs[i].RetainedHeapBytes) / float64(irs[i].Objects)
		}
	}
	stopped = true
	return sr, irs, nil
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

func since(t time.Time) string { return time.Since(t).Truncate(time.Second).String() }

// implResult assembles the report of one implementation after the check.
func implResult(c config, index int, r *implRun, g *churner, chk checkResult, sr *scenarioReport, shared bool) implReport {
	ir := implReport{Name: r.name, Scenario: index, Objects: chk.CacheObjects, Check: chk}
	sync := r.syncedAt.Sub(r.startedAt).Seconds()
	ir.InitialSyncSeconds = sync
	if sync > 0 {
		ir.InitialObjectsPerS = float64(c.pods) / sync
	}
	ir.EventsObserved, ir.EventsObservedByH = r.observed()
	ir.Deliveries = r.calls() - uint64(c.pods)*uint64(len(r.handlers))
	var last int64
	var hs []*histogram
	for _, h := range r.handlers {
		last = max(last, h.last.Load())
		hs = append(hs, &h.lat)
	}
	if last > 0 {
		ir.DeliverySeconds = time.Unix(0, last).Sub(g.startedAt).Seconds()
		if ir.DeliverySeconds > 0 {
			ir.EventsPerSecond = float64(ir.EventsObserved) / ir.DeliverySeconds
			ir.DeliveriesPerSecond = float64(ir.Deliveries) / ir.DeliverySeconds
		}
	}
	if last > 0 {
		ir.CatchUpSeconds = max(0, time.Unix(0, last).Sub(g.stoppedAt).Seconds())
	}
	if len(hs) > 0 {
		ir.Latency = latencyReport(merge(hs...))
	}
	ir.Reads = r.reads.Load()
	if s := g.stoppedAt.Sub(g.startedAt).Seconds(); s > 0 {
		ir.ReadsPerSecond = float64(ir.Reads) / s
	}
	ir.ProcessCPUSeconds = sr.CPUSeconds
	ir.CPUShared = shared
	if sr.CPUByLabel != nil {
		ir.CPUSeconds = sr.CPUByLabel[r.name+"/informer"] + sr.CPUByLabel[r.name+"/reader"]
		ir.CPUAttributed = true
	} else {
		ir.CPUSeconds = sr.CPUSeconds
	}
	ir.PeakHeapBytes, ir.PeakRSSBytes = sr.PeakHeapBytes, sr.PeakRSSBytes
	ir.GCCount, ir.GCPauseSeconds = sr.GCCount, sr.GCPauseSeconds
	if r.counts != nil {
		v := func(a *atomic.Uint64) *uint64 { x := a.Load(); return &x }
		ir.Overflow, ir.Coalesced, ir.Panics = v(&r.counts.overflow), v(&r.counts.coalesced), v(&r.counts.panics)
		ir.Relists, ir.Dropped = v(&r.counts.relists), v(&r.counts.dropped)
	}
	return ir
}

// sampler records the timeline and drives the progress line.
type sampler struct {
	c     config
	runs  []*implRun
	pk    *peaks
	start time.Time
	prog  *progress

	mu     sync.Mutex
	phase  string
	churn  *churner
	pts    []timelinePoint
	quit   chan struct{}
	exited chan struct{}
	once   sync.Once
}

func newSampler(c config, runs []*implRun, pk *peaks, start time.Time, prog *progress) *sampler {
	return &sampler{c: c, runs: runs, pk: pk, start: start, prog: prog, quit: make(chan struct{}), exited: make(chan struct{})}
}

func (s *sampler) setPhase(p string, g *churner) {
	s.mu.Lock()
	s.phase, s.churn = p, g
	s.mu.Unlock()
}

// run is the sampler goroutine; it exits on stop.
func (s *sampler) run() {
	defer close(s.exited)
	// Timeline points every 500ms (the progress line prints at most every
	// --progress); peaks every 100ms.
	every := 500 * time.Millisecond
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastPoint := time.Time{}
	for {
		select {
		case <-s.quit:
			s.sample(true)
			return
		case now := <-tick.C:
			s.pk.sample()
			if now.Sub(lastPoint) >= every {
				lastPoint = now
				s.sample(false)
			}
		}
	}
}

func (s *sampler) sample(final bool) {
	heap, r := s.pk.sample()
	s.mu.Lock()
	p := timelinePoint{T: time.Since(s.start).Seconds(), Phase: s.phase, Heap: heap, RSS: r,
		Calls: map[string]uint64{}, Observed: map[string]uint64{}, Synced: map[string]int{}}
	if s.churn != nil {
		p.Emitted = s.churn.emitted()
	}
	for _, run := range s.runs {
		p.Calls[run.name] = run.calls()
		p.Observed[run.name], _ = run.observed()
		p.Synced[run.name] = run.syncedObjects()
	}
	var prev *timelinePoint
	if len(s.pts) > 0 {
		prev = &s.pts[len(s.pts)-1]
	}
	s.pts = append(s.pts, p)
	s.mu.Unlock()
	if final {
		return
	}
	s.prog.update(func() string { return s.line(p, prev) })
}

func (s *sampler) line(p timelinePoint, prev *timelinePoint) string {
	dt := 1.0
	if prev != nil {
		dt = max(p.T-prev.T, 1e-3)
	}
	rate := func(now, before uint64) float64 {
		if prev == nil {
			return 0
		}
		return float64(now-before) / dt
	}
	out := fmt.Sprintf("[%s %s]", p.Phase, time.Duration(p.T*1e9).Truncate(time.Second))
	switch p.Phase {
	case "sync":
		for _, r := range s.runs {
			out += fmt.Sprintf(" %s %d/%d", r.name, p.Synced[r.name], s.c.pods)
		}
	default:
		var pe uint64
		if prev != nil {
			pe = prev.Emitted
		}
		out += fmt.Sprintf(" emitted %d (%s)", p.Emitted, fmtRate(rate(p.Emitted, pe)))
		for _, r := range s.runs {
			var po uint64
			if prev != nil {
				po = prev.Observed[r.name]
			}
			out += fmt.Sprintf(" | %s seen %d (%s) behind %d", r.name, p.Observed[r.name],
				fmtRate(rate(p.Observed[r.name], po)), int64(p.Emitted)-int64(p.Observed[r.name]))
		}
	}
	return out + fmt.Sprintf(" | heap %s rss %s", fmtBytes(float64(p.Heap)), fmtBytes(float64(p.RSS)))
}

func (s *sampler) stop() {
	s.once.Do(func() { close(s.quit) })
	<-s.exited
}

func (s *sampler) points() []timelinePoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pts)
}

// progress writes one live line to stderr: rewritten in place on a terminal,
// one line per update otherwise.
type progress struct {
	w       io.Writer
	enabled bool
	every   time.Duration
	tty     bool
	mu      sync.Mutex
	last    time.Time
	width   int
}

func newProgress(w io.Writer, every time.Duration) *progress {
	p := &progress{w: w, enabled: every > 0, every: every}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// update prints line() at most every 200ms (terminal) or second (log).
func (p *progress) update(line func() string) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	every := max(p.every, time.Second)
	if p.tty {
		every = min(p.every, 200*time.Millisecond)
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	l := line()
	if p.tty {
		pad := max(p.width-len(l), 0)
		fmt.Fprintf(p.w, "\r%s%*s", l, pad, "")
		p.width = len(l)
	} else {
		fmt.Fprintln(p.w, l)
	}
}

// done ends the live line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enabled && p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
	p.last = time.Time{}
}
