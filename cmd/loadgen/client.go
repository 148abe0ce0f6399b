package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/selfstat"
)

// serveClient runs one implementation under test through its phases,
// driven by cmds and reporting through emit: start, sync, churn (readers),
// catch-up and check against the state the parent sends, then, on finish,
// the figures and the retained heap. It returns after the result was emitted
// and every goroutine it started has exited.
func serveClient(ctx context.Context, sp protocol.Spec, reg prometheus.Registerer, cmds <-chan protocol.Command, emit func(protocol.Message)) (err error) {
	c, err := newClient(sp, reg)
	if err != nil {
		return err
	}
	defer c.metrics.unregisterAll()
	running := true
	defer func() {
		if running {
			c.stop()
		}
	}()
	var pk selfstat.Peaks
	cpu0, split0 := selfstat.CPUTime(), selfstat.ReadCPUSplit()
	gc0, pause0 := selfstat.GCStats()
	smp := startSampler(c, &pk, cpu0, sp.SampleEvery, emit)
	defer smp.stop()
	var soak *soakSampler
	defer func() { soak.stop() }()
	c.start(ctx)

	wait := func(want string) (protocol.Command, error) {
		for {
			select {
			case <-ctx.Done():
				return protocol.Command{}, ctx.Err()
			case cmd, ok := <-cmds:
				if !ok {
					return protocol.Command{}, errors.New("parent went away")
				}
				if cmd.Cmd == want {
					return cmd, nil
				}
				return protocol.Command{}, fmt.Errorf("got command %q, want %q", cmd.Cmd, want)
			}
		}
	}

	sentSynced := false
	for !c.ready() {
		if !sentSynced && c.synced() {
			sentSynced = true
			emit(protocol.Message{Type: protocol.MsgSynced, At: c.syncedAt.UnixNano()})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			if c.runErr != nil {
				return fmt.Errorf("%w: %w", errInformerEnded, c.runErr)
			}
			return errInformerEnded
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !sentSynced {
		emit(protocol.Message{Type: protocol.MsgSynced, At: c.syncedAt.UnixNano()})
	}
	cpuReady, atReady := selfstat.CPUTime(), selfstat.ReadCPUSplit()
	splitReady := atReady.Sub(split0)
	smp.markReady()
	emit(protocol.Message{Type: protocol.MsgReady, At: c.readyAt.UnixNano()})
	if sp.SoakEvery > 0 {
		heapDir := ""
		if sp.Profile == "heap" {
			heapDir = sp.ProfileDir
		}
		soak = startSoakSampler(c, sp.SoakEvery, heapDir, emit)
	}

	start, err := wait(protocol.CmdChurnStart)
	if err != nil {
		return err
	}
	if sp.Readers > 0 {
		nss := make([]string, sp.Namespaces)
		for i := range nss {
			nss[i] = sp.Endpoint.Namespace(i, sp.Namespaces)
		}
		c.startReaders(ctx, sp.Readers, nss, sp.Seed)
	}
	if err := churnAllocsSnapshot(sp, "churn-start"); err != nil {
		return err
	}
	gcChurn, heapChurn := selfstat.GCCycles(), selfstat.ReadHeap()
	end, err := wait(protocol.CmdChurnEnd)
	if err != nil {
		return err
	}
	c.stopReaders()
	soak.stop() // the soak's samples end with the churn and the faults

	// Catch up and check. The check reads the whole cache, so it runs once
	// the cheap counters say the client is done, and the CPU, time, heap
	// allocation and GC cycles of the check that passes are not counted.
	var chk report.Check
	deadline := time.Now().Add(sp.Quiesce)
	c.awaitQuiet(ctx, end.Emitted, deadline)
	// Caught up, unless the check below says otherwise: then it is when the
	// check that passed began.
	cpuCaughtUp, atCaughtUp := selfstat.CPUTime(), selfstat.ReadCPUSplit()
	var want map[string]string
	final := false
	var cpuEnd time.Duration
	var gcEnd uint64
	var heapEnd selfstat.HeapReading
	for tries := 0; ; tries++ {
		if tries > 0 {
			cpuCaughtUp = 0
		}
		if !final {
			emit(protocol.Message{Type: protocol.MsgWantState})
			st, err := wait(protocol.CmdState)
			if err != nil {
				return err
			}
			want, final = st.State, st.Final
		}
		cpuEnd, gcEnd, heapEnd = selfstat.CPUTime(), selfstat.GCCycles(), selfstat.ReadHeap()
		if cpuCaughtUp == 0 {
			cpuCaughtUp, atCaughtUp = cpuEnd, selfstat.ReadCPUSplit()
		}
		chk = check(c, want)
		if chk.Pass {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	gc1, pause1 := selfstat.GCStats()
	gcChurn = gcEnd - gcChurn
	if err := churnAllocsSnapshot(sp, "churn-end"); err != nil {
		return err
	}
	smp.stop()
	emit(protocol.Message{Type: protocol.MsgCaughtUp, Check: &chk})

	fin, err := wait(protocol.CmdFinish)
	if err != nil {
		return err
	}
	res := c.result(chk, time.Unix(0, start.At), time.Unix(0, end.At), fin.Deletes)
	res.CPUSeconds, res.SyncCPUSeconds = (cpuEnd - cpu0).Seconds(), (cpuReady - cpu0).Seconds()
	res.SyncGCCPUSeconds, res.SyncSysCPUSeconds, res.SyncPageFaults = splitReady.GCCPU().Seconds(), splitReady.Sys.Seconds(), splitReady.Faults
	res.SyncGCEstimateSeconds = splitReady.GC.Seconds()
	res.ChurnCPUSeconds, res.ChurnEvents = (cpuCaughtUp - cpuReady).Seconds(), end.Emitted
	res.ChurnGCCPUSeconds = atCaughtUp.Sub(atReady).GCCPU().Seconds()
	if end.Emitted > 0 {
		res.ChurnCPUSecondsPerEvent = res.ChurnCPUSeconds / float64(end.Emitted)
		res.ChurnGCCPUSecondsPerEvent = res.ChurnGCCPUSeconds / float64(end.Emitted)
	}
	res.GoMemLimitBytes = debug.SetMemoryLimit(-1)
	res.HandlerWorkCPUSecondsPerCall = c.workCPUPerCall()
	res.PeakHeapBytes, res.PeakRSSBytes = pk.Get()
	res.GCCount, res.GCPauseSeconds, res.ChurnGCCycles = gc1-gc0, (pause1 - pause0).Seconds(), gcChurn
	res.ChurnAllocBytes, res.ChurnAllocObjects = heapEnd.AllocBytes-heapChurn.AllocBytes, heapEnd.AllocObjects-heapChurn.AllocObjects
	res.ChurnStartLive, res.ChurnStartGoal, res.ChurnStartHeap = heapChurn.Live, heapChurn.Goal, heapChurn.Heap
	res.ProfileDir = sp.ProfileDir
	running = false
	c.measureRetained(&res)
	emit(protocol.Message{Type: protocol.MsgResult, Result: &res})
	return nil
}

// awaitQuiet waits until the client has seen emitted churn events and,
// with a controller, its queue is empty, or until nothing new was seen for
// half a second (coalesced notifications never add up to emitted), or the
// deadline.
func (c *client) awaitQuiet(ctx context.Context, emitted uint64, deadline time.Time) {
	last, since := uint64(0), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		seen, _ := c.observed()
		if seen >= emitted && (c.ctl == nil || c.ctl.queue.Len() == 0) {
			return
		}
		if seen != last {
			last, since = seen, time.Now()
		} else if time.Since(since) > 500*time.Millisecond {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// measureRetained stops the client and measures what it held: loadgen's
// own per-key bookkeeping first, then the informer (with queue) as the live
// heap it takes with it when dropped.
func (c *client) measureRetained(res *report.ImplResult) {
	h0 := selfstat.LiveHeap()
	for _, h := range c.handlers {
		h.rv.release()
	}
	if c.ctl != nil {
		c.ctl.reconciled.release()
		c.ctl.pending.release()
	}
	h1 := selfstat.LiveHeap()
	res.BookkeepingBytes = sub(h0, h1)
	c.stop()
	c.metrics.unregisterAll()                                                                              // the collectors hold the informer
	c.inf, c.ours, c.regs, c.handlers, c.ctl, c.cs, c.src = nil, nil, nil, nil, nil, nil, informerSource{} // the factory or cache with them
	res.RetainedHeapBytes = sub(h1, selfstat.LiveHeap())
	if res.Objects > 0 {
		res.HeapBytesPerObject = float64(res.RetainedHeapBytes) / float64(res.Objects)
	}
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// sampler emits timeline points and tracks the process's peaks: one at
// the start, every 25 ms during the initial sync (so that the sync's curve
// has points however short it is), one when the client is ready, then
// every 100 ms, and a last one when stopped.
type sampler struct {
	quit, ready, exited chan struct{}
	once, readyOnce     sync.Once
}

// Sampling intervals before and after the client is ready.
const (
	syncSampleEvery = 25 * time.Millisecond
	sampleEvery     = 100 * time.Millisecond
)

func startSampler(c *client, pk *selfstat.Peaks, cpu0 time.Duration, every time.Duration, emit func(protocol.Message)) *sampler {
	if every <= 0 {
		every = sampleEvery
	}
	s := &sampler{quit: make(chan struct{}), ready: make(chan struct{}), exited: make(chan struct{})}
	var lat latency.Snapshot // the latency histograms at the previous point; the sampler goroutine's
	point := func() {
		heap, rss := pk.Sample()
		now := latency.Merge(c.latencies()...)
		var win *protocol.LatencyWindow
		if d := now.Since(lat); d.N > 0 {
			win = &protocol.LatencyWindow{N: d.N, P50: d.Quantile(0.5).Seconds(), P99: d.Quantile(0.99).Seconds()}
		}
		lat = now
		obs, _ := c.observed()
		done := c.reconciles()
		if c.ctl == nil {
			done = c.calls()
		}
		emit(protocol.Message{Type: protocol.MsgSample, Sample: &protocol.Sample{At: time.Now().UnixNano(), Synced: c.syncedObjects(),
			Observed: obs, Done: done, Heap: heap, RSS: rss, CPU: (selfstat.CPUTime() - cpu0).Seconds(), GC: selfstat.GCCycles(), Lat: win}})
	}
	go func() { // the client's sampler goroutine; stop waits for it
		defer close(s.exited)
		point()
		tick := time.NewTicker(syncSampleEvery)
		defer tick.Stop()
		ready := s.ready
		for {
			select {
			case <-s.quit:
				point()
				return
			case <-ready:
				ready = nil
				point()
				tick.Reset(every)
			case <-tick.C:
				point()
			}
		}
	}()
	return s
}

// markReady makes the sampler take a point now and slow down to
// sampleEvery.
func (s *sampler) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

func (s *sampler) stop() {
	s.once.Do(func() { close(s.quit) })
	<-s.exited
}

// childMain is a child process's main: one implementation under test,
// alone in its process, driven over stdin and stdout.
func childMain() int {
	dec := protocol.NewDecoder(os.Stdin)
	var sp protocol.Spec
	if err := dec.Decode(&sp); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen child: read spec:", err)
		return 2
	}
	enc := protocol.NewEncoder(os.Stdout)
	emit := func(m protocol.Message) { _ = enc.Encode(m) }
	fail := func(err error) int {
		emit(protocol.Message{Type: protocol.MsgError, Error: err.Error()})
		return 1
	}
	if err := setWatchList(sp.WatchList); err != nil {
		return fail(err)
	}
	if sp.MemLimit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(childSoftLimit(sp.MemLimit)) // why: childSoftLimit
	} else {
		selfstat.DefaultMemoryLimit()
	}
	if sp.Profile != "" {
		stop, err := startProfile(sp.Profile, sp.ProfileDir)
		if err != nil {
			return fail(err)
		}
		defer stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reg *prometheus.Registry
	if sp.MetricsAddr != "" {
		var stop func()
		var url string
		var err error
		reg, url, stop, err = serveMetrics(sp.MetricsAddr, nil, os.Stderr)
		if err != nil {
			return fail(err)
		}
		defer stop()
		emit(protocol.Message{Type: protocol.MsgMetrics, URL: url})
	}
	cmds := make(chan protocol.Command, 4)
	go func() { // reads the parent's commands; the parent closing stdin ends the run
		defer close(cmds)
		for {
			var cmd protocol.Command
			if err := dec.Decode(&cmd); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintln(os.Stderr, "loadgen child: read command:", err)
				}
				cancel()
				return
			}
			cmds <- cmd
		}
	}()
	var regr prometheus.Registerer
	if reg != nil {
		regr = reg
	}
	var err error
	pprof.Do(ctx, pprof.Labels("impl", sp.Impl, "role", "client"), func(ctx context.Context) {
		if sp.Scenario == report.ScenarioReplicas {
			err = serveReplica(ctx, sp, cmds, emit)
			return
		}
		err = serveClient(ctx, sp, regr, cmds, emit)
	})
	if err != nil {
		return fail(err)
	}
	return 0
}

// side is the parent's handle on one implementation under test, in a child
// process or on goroutines of this process.
type side struct {
	impl string
	send func(protocol.Command) error
	// closeIn ends the command stream (a child's stdin).
	closeIn func()

	samples          []protocol.Sample
	soak             []report.SoakPoint // soak scenario
	synced, ready    int64
	caughtUp, exited bool
	check            *report.Check
	result           *report.ImplResult
	metricsURL       string
	didNotFit        *report.DidNotFit // its process exited without fitting (fit.go)
}

// sideMsg is a message from side i.
type sideMsg struct {
	i int
	m protocol.Message
}

// spawnSide starts sp in a child process (this binary with protocol.ChildFlag); its
// messages go to out, its stderr to stderr. The reading goroutine sends a
// final msgExit after the process has exited.
func spawnSide(ctx context.Context, i int, sp protocol.Spec, out chan<- sideMsg, stderr io.Writer) (*side, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, protocol.ChildFlag)
	scan := &oomScanner{w: stderr}
	cmd.Stderr = scan
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	oom0 := procfs.OOMKills()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s process: %w", sp.Impl, err)
	}
	watch := watchChild(cmd, sp.MemLimit, scan, oom0)
	enc := protocol.NewEncoder(stdin)
	s := &side{impl: sp.Impl,
		send:    func(c protocol.Command) error { return enc.Encode(c) },
		closeIn: func() { _ = stdin.Close() },
	}
	go func() { // reads the child's messages until it exits
		dec := protocol.NewDecoder(stdout)
		for {
			var m protocol.Message
			if err := dec.Decode(&m); err != nil {
				break
			}
			out <- sideMsg{i, m}
		}
		watch.stop() // before Wait reaps the child
		exit := protocol.Message{Type: protocol.MsgExit}
		if err := cmd.Wait(); err != nil {
			exit.Error = fmt.Sprintf("%s process: %v", sp.Impl, err)
			if ctx.Err() == nil { // else killed for the cancellation
				exit.DidNotFit = watch.verdict(err)
			}
		}
		out <- sideMsg{i, exit}
	}()
	if err := enc.Encode(sp); err != nil {
		return nil, fmt.Errorf("send spec to the %s process: %w", sp.Impl, err)
	}
	return s, nil
}

// inProcessSide runs sp on goroutines of this process, labelled
// impl=<name>; reg receives its metrics.
func inProcessSide(ctx context.Context, i int, sp protocol.Spec, reg prometheus.Registerer, out chan<- sideMsg) *side {
	cmds := make(chan protocol.Command, 4)
	var once sync.Once
	s := &side{impl: sp.Impl,
		send: func(c protocol.Command) error {
			select {
			case cmds <- c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		closeIn: func() { once.Do(func() { close(cmds) }) },
	}
	pprof.Do(ctx, pprof.Labels("impl", sp.Impl, "role", "client"), func(ctx context.Context) {
		go func() { // the in-process client's goroutine
			err := serveClient(ctx, sp, reg, cmds, func(m protocol.Message) { out <- sideMsg{i, m} })
			exit := protocol.Message{Type: protocol.MsgExit}
			if err != nil {
				exit.Error = fmt.Sprintf("%s: %v", sp.Impl, err)
			}
			out <- sideMsg{i, exit}
		}()
	})
	return s
}
