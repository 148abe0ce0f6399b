package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/selfstat"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/faults"
	clientfeatures "k8s.io/client-go/features"
	"runtime/debug"
)

// errCheckFailed is returned by run when a correctness check failed.
var errCheckFailed = errors.New("correctness check failed")

// run performs every trial the configuration asks for and writes the
// reports. It returns errCheckFailed (with the report) when a check failed.
func run(ctx context.Context, c config, stdout, stderr io.Writer) (*report.Report, error) {
	if err := setWatchList(c.watchList); err != nil {
		return nil, err
	}
	memLimit := selfstat.DefaultMemoryLimit()
	rate := calibrate()
	iters := func(d time.Duration) int64 { return int64(d.Seconds() * rate) }
	md := collectMetadata(c, memLimit, rate)
	set, impls := reportSettings(c, md)
	rep := report.New(c.scenario, set, impls, md)
	rep.Settings.ReconcileIterations, rep.Settings.HandlerIterations = iters(c.reconcileWork), iters(c.handlerWork)
	dir, err := makeRunDir(c.outDir, c.scenario, rep.StartedAt)
	if err != nil {
		return nil, err
	}
	rep.Directory = dir
	if dir != "" {
		fmt.Fprintf(stderr, "loadgen: writing into %s\n", dir)
	}
	var reg *prometheus.Registry
	live := &liveState{}
	if c.metricsAddr != "" && c.sideBySide {
		var stop func()
		var url string
		reg, url, stop, err = serveMetrics(c.metricsAddr, live, stderr)
		if err != nil {
			return nil, err
		}
		defer stop()
		if c.onMetrics != nil {
			c.onMetrics(url)
		}
	}
	prog := newProgress(stderr, c.progress)
	sizes := c.sizes()
	if c.scenario == report.ScenarioReplicas {
		sizes = nil // trials of its own: replica processes
		if rep.Replicas, err = runReplicaScenario(ctx, c, iters, dir, prog, stderr); err != nil {
			return nil, err
		}
	}
	// An implementation that did not fit is not run again at that size or
	// above (fit.go).
	unfit := map[string]*report.DidNotFit{}
	for _, pods := range sizes {
		for r := 1; r <= c.runs; r++ {
			groups := [][]string{c.impls}
			if !c.sideBySide {
				groups = nil
				for _, impl := range runOrder(c.impls, r) {
					groups = append(groups, []string{impl})
				}
			}
			for _, impls := range groups {
				if d := unfit[impls[0]]; d != nil && !c.sideBySide {
					rep.DidNotFit = append(rep.DidNotFit, report.DidNotFit{Impl: impls[0], Pods: pods, Run: r, Text: d.Text, LimitBytes: d.LimitBytes,
						NotRun: true, Reason: fmt.Sprintf("not run: it did not fit at %s pods in run %d", report.FmtCount(d.Pods), d.Run)})
					continue
				}
				tr := trial{c: c, pods: pods, run: r, impls: impls, iters: iters, dir: dir, prog: prog, live: live, reg: reg, stderr: stderr}
				res, err := tr.do(ctx)
				prog.done()
				if d := tr.didNotFit(); err != nil && d != nil && ctx.Err() == nil {
					d.Pods, d.Run = pods, r
					fmt.Fprintf(stderr, "loadgen: %s at %s pods, run %d: %s (%s, %s); going on without it at this size and above\n",
						d.Impl, report.FmtCount(pods), r, d.Text, d.Reason, d.Phase)
					rep.DidNotFit = append(rep.DidNotFit, *d)
					unfit[d.Impl] = d
					debug.FreeOSMemory()
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("%d pods, run %d (%s): %w", pods, r, strings.Join(impls, " + "), err)
				}
				rep.Trials = append(rep.Trials, res)
				debug.FreeOSMemory()
			}
		}
	}
	report.Finish(rep)
	if c.scenario == report.ScenarioSoak {
		report.AddSoak(rep, c.soak.settings())
	}
	report.PrintSummary(stdout, rep)
	report.PrintFaults(stdout, rep)
	report.PrintSoak(stdout, rep)
	var jsonPaths, htmlPaths []string
	if dir != "" {
		jsonPaths = append(jsonPaths, filepath.Join(dir, "report.json"))
		htmlPaths = append(htmlPaths, filepath.Join(dir, "report.html"))
	}
	if c.out != "" {
		jsonPaths = append(jsonPaths, c.out)
	}
	if c.html != "" {
		htmlPaths = append(htmlPaths, c.html)
	}
	for _, p := range jsonPaths {
		if err := report.WriteJSON(p, rep); err != nil {
			return rep, fmt.Errorf("write JSON report: %w", err)
		}
		fmt.Fprintf(stdout, "JSON report: %s\n", p)
	}
	for _, p := range htmlPaths {
		if err := report.WriteHTML(p, rep); err != nil {
			return rep, fmt.Errorf("write HTML report: %w", err)
		}
		fmt.Fprintf(stdout, "HTML report: %s\n", p)
	}
	if c.profile != "" {
		fmt.Fprintf(stdout, "%s profiles (pkg/profile, goroutines labelled impl=<name>): %s\n", c.profile, filepath.Join(dir, "profiles"))
	}
	if !rep.Pass {
		return rep, errCheckFailed
	}
	return rep, nil
}

// makeRunDir creates a new directory for this invocation's files under
// base; it never reuses one. "" when base is "".
func makeRunDir(base, scenario string, t time.Time) (string, error) {
	if base == "" {
		return "", nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("--out-dir: %w", err)
	}
	name := t.Format("20060102-150405") + "-" + scenario
	for i := 0; ; i++ {
		d := filepath.Join(base, name)
		if i > 0 {
			d = fmt.Sprintf("%s-%d", d, i+1)
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("--out-dir: %w", err)
		}
	}
}

// setWatchList sets client-go's WatchListClient gate for this process.
func setWatchList(mode string) error {
	if mode == "default" || mode == "" {
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

// trial is one execution: a fresh cluster of pods objects, the
// implementations impls (one alone in a child process, or several side by
// side in this process) through sync, churn, catch-up and check.
type trial struct {
	c      config
	pods   int
	run    int
	impls  []string
	iters  func(time.Duration) int64
	dir    string
	prog   *progress
	live   *liveState
	reg    *prometheus.Registry
	stderr io.Writer

	sides []*side
	msgs  chan sideMsg
	phase string // for the progress line
	t0    time.Time
	state func() (map[string]string, bool, error) // the server's state and whether it is final
	// --faults: the proxy in front of the target, and when each side's
	// check ended (caught-up message).
	proxy      *faults.Proxy
	caughtUpAt map[int]time.Time
}

func (tr *trial) profileDir(impl string) string {
	if tr.c.profile == "" {
		return ""
	}
	return filepath.Join(tr.dir, "profiles", fmt.Sprintf("%d-run%d-%s", tr.pods, tr.run, impl))
}

func (tr *trial) do(ctx context.Context) (report.Trial, error) {
	c := tr.c
	res := report.Trial{Pods: tr.pods, Run: tr.run, Impls: tr.impls, Mode: report.ModeProcess}
	if c.sideBySide {
		res.Mode = report.ModeSideBySide
	}
	var t target.Target
	if c.kubeconfig != "" {
		id := newRunID()
		if c.reusePods {
			id = target.ReuseRunID(tr.pods, c.namespaces, c.seed)
		}
		ct, err := target.NewCluster(ctx, targetConfig(c), id)
		if err != nil {
			return res, err
		}
		t = ct
	} else {
		st, err := target.NewSim(targetConfig(c))
		if err != nil {
			return res, err
		}
		t = st
	}
	defer func() {
		// A fresh context: cleanup must run after Ctrl-C too.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := t.Close(cctx); err != nil {
			fmt.Fprintln(tr.stderr, "loadgen:", err)
		}
	}()
	res.Target = t.Kind()
	if err := tr.setup(ctx, t, &res.Server); err != nil {
		return res, err
	}
	cpuByLabel, stopProfiling, err := tr.profiling(&res)
	if err != nil {
		return res, err
	}
	defer stopProfiling()

	cpu0 := selfstat.CPUTime()
	srvCPU0, err := serversCPU(c.serverPIDs)
	if err != nil {
		return res, err
	}
	if c.faults != nil {
		p, err := startFaults(c, t)
		if err != nil {
			return res, err
		}
		defer p.Close()
		tr.proxy = p
	}
	if err := tr.start(ctx, t); err != nil {
		return res, err
	}
	defer tr.shutdown()
	defer tr.live.set(nil)
	res.StartedAt = tr.t0
	tr.phase = "sync"
	if err := tr.pump(ctx, func() bool { return tr.all(func(s *side) bool { return s.ready != 0 }) }); err != nil {
		return res, err
	}
	if len(c.serverPIDs) > 0 {
		srvCPU1, err := serversCPU(c.serverPIDs)
		if err != nil {
			return res, err
		}
		res.Server.APIServerSyncCPUSeconds = (srvCPU1 - srvCPU0).Seconds()
	}
	g, err := tr.churn(ctx, t, &res)
	if err != nil {
		return res, err
	}
	if tr.proxy != nil {
		tr.proxy.StopFaults()
	}

	// Catch up and check: the clients ask for the server's state.
	tr.phase = "catch-up"
	var cached map[string]string
	_, isSim := t.(*target.Sim)
	tr.state = func() (map[string]string, bool, error) {
		if cached != nil {
			return cached, true, nil
		}
		st, err := t.State(ctx)
		if err != nil {
			return nil, false, err
		}
		if isSim { // nothing writes after the churn
			cached = st
		}
		res.ServerObjects = len(st)
		return st, isSim, nil
	}
	if err := tr.pump(ctx, func() bool { return tr.all(func(s *side) bool { return s.caughtUp }) }); err != nil {
		return res, err
	}
	if c.afterCheck != nil {
		c.afterCheck()
	}
	res.Server.CPUSeconds = (selfstat.CPUTime() - cpu0).Seconds()
	if byLabel := cpuByLabel(); byLabel != nil {
		res.CPUByLabel = map[string]float64{}
		for k, v := range byLabel {
			res.CPUByLabel[k] = v.Seconds()
		}
	}
	return res, tr.collect(ctx, &res, g.DeleteStamps())
}

// setup populates t, then serves it with every object encoded in advance,
// so that the server's encoding work is not done during the client's sync.
func (tr *trial) setup(ctx context.Context, t target.Target, srv *report.TrialServer) error {
	cpu0 := selfstat.CPUTime()
	popStart := time.Now()
	if err := t.Populate(ctx, tr.pods, func(n int) {
		tr.prog.update(func() string {
			return fmt.Sprintf("[%s run %d/%d: populate %s] %d/%d pods", strings.Join(tr.impls, "+"), tr.run, tr.c.runs, since(popStart), n, tr.pods)
		})
	}); err != nil {
		return fmt.Errorf("populate: %w", err)
	}
	srv.PopulateSeconds = time.Since(popStart).Seconds()
	if st, ok := t.(*target.Sim); ok {
		var err error
		pprof.Do(ctx, pprof.Labels("role", "server"), func(context.Context) { err = st.Start() })
		if err != nil {
			return err
		}
		encStart := time.Now()
		if err := st.Preencode(ctx, tr.c.contentType); err != nil {
			return fmt.Errorf("pre-encode: %w", err)
		}
		srv.PreencodeSeconds = time.Since(encStart).Seconds()
	}
	srv.SetupCPUSeconds = (selfstat.CPUTime() - cpu0).Seconds()
	return nil
}

// profiling starts this process's CPU profile for the split of CPU by
// goroutine label. Side by side with --profile, pkg/profile writes the
// profile into the trial's directory and, for cpu, the split reads it back;
// otherwise loadgen profiles in memory (children profile themselves).
// byLabel ends the CPU profile and returns the split (nil if none); stop
// ends everything and may follow byLabel.
func (tr *trial) profiling(res *report.Trial) (byLabel func() map[string]time.Duration, stop func(), err error) {
	var stopProfile func()
	var profFile string
	if tr.c.sideBySide && tr.c.profile != "" {
		pd := tr.profileDir("side-by-side")
		if stopProfile, err = startProfile(tr.c.profile, pd); err != nil {
			return nil, nil, err
		}
		res.ProfileDir = pd
		if tr.c.profile == "cpu" {
			profFile = filepath.Join(pd, "cpu.pprof")
		}
	}
	var attr *selfstat.CPUAttribution
	if profFile == "" {
		attr, _ = selfstat.StartCPUAttribution() // nil if the CPU profiler is busy: no split
	}
	byLabel = func() map[string]time.Duration {
		var m map[string]time.Duration
		switch {
		case attr != nil:
			m, _ = attr.Stop()
			attr = nil
		case profFile != "" && stopProfile != nil:
			stopProfile()
			stopProfile = nil
			if b, err := os.ReadFile(profFile); err == nil {
				m, _ = selfstat.ByLabel(bytes.NewReader(b))
			}
		}
		return m
	}
	stop = func() {
		byLabel()
		if stopProfile != nil {
			stopProfile()
		}
	}
	return byLabel, stop, nil
}

// start starts the implementations under test: each in a child process, or
// side by side on goroutines of this process.
func (tr *trial) start(ctx context.Context, t target.Target) error {
	c := tr.c
	tr.msgs = make(chan sideMsg, 1024)
	base := protocol.Spec{Scenario: report.ScenarioInformer, Path: c.path, Resource: resourceOn(c.path, t.Kind()), Pods: tr.pods, Namespaces: c.namespaces, Endpoint: t.Endpoint(),
		Handlers: c.handlers, HandlerWorkers: c.handlerWorkers, HandlerIters: tr.iters(c.handlerWork), Readers: c.readers,
		Workers: c.workers, ReconcileIters: tr.iters(c.reconcileWork), Shards: c.shards, RingSize: c.ringSize,
		Policy: c.policy.String(), ContentType: c.contentType, WatchList: c.watchList, Seed: c.seed, Quiesce: c.quiesce,
		Profile: c.profile, MetricsAddr: c.metricsAddr, Process: !c.sideBySide, WireWorkers: c.wireWorkers}
	if !c.sideBySide {
		base.MemLimit = c.childMemLimit
	}
	if c.controller() {
		base.Scenario = report.ScenarioController
	}
	if c.scenario == report.ScenarioSoak {
		// A timeline point a second is enough over an hour (and keeps the
		// report small); the soak's own samples come every --soak-sample-every.
		base.SoakEvery, base.SampleEvery = c.soak.every, time.Second
	}
	if tr.proxy != nil {
		base.Endpoint.Proxy = tr.proxy.URL()
	}
	tr.t0 = time.Now()
	for i, impl := range tr.impls {
		sp := base
		v := c.variants[impl]
		sp.Impl, sp.Core, sp.Decoder, sp.Diet, sp.Compact = impl, v.core, v.decoder, v.diet, v.compact
		if c.sideBySide {
			sp.Profile, sp.MetricsAddr = "", ""
			var reg prometheus.Registerer
			if tr.reg != nil {
				reg = tr.reg
			}
			tr.sides = append(tr.sides, inProcessSide(ctx, i, sp, reg, tr.msgs))
			continue
		}
		sp.ProfileDir = tr.profileDir(impl)
		s, err := spawnSide(ctx, i, sp, tr.msgs, tr.stderr)
		if err != nil {
			return err
		}
		tr.sides = append(tr.sides, s)
	}
	return nil
}

// churn runs the churn writer while handling the sides' messages, and tells
// the sides when it starts and ends.
func (tr *trial) churn(ctx context.Context, t target.Target, res *report.Trial) (*target.Churner, error) {
	tr.phase = "churn"
	g := target.NewChurner(t, targetConfig(tr.c))
	tr.live.set(g) // until the trial ends
	if err := tr.broadcast(protocol.Command{Cmd: protocol.CmdChurnStart, At: time.Now().UnixNano()}); err != nil {
		return nil, err
	}
	churnDone := make(chan error, 1)
	// The writer's own context: a side that fails (or did not fit) ends the
	// trial, and the run may go on with the next one, so the writer must
	// not go on writing into this trial's server.
	cctx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	pprof.Do(cctx, pprof.Labels("role", "churn"), func(ctx context.Context) {
		go func() { churnDone <- g.Run(ctx, tr.pods) }() // the churn writer; joined below
	})
	emitted := []report.EmittedPoint{{T: time.Since(tr.t0).Seconds()}}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var churnErr error
	err := tr.pump(ctx, func() bool {
		select {
		case churnErr = <-churnDone:
			return true
		case <-tick.C:
			emitted = append(emitted, report.EmittedPoint{T: time.Since(tr.t0).Seconds(), Emitted: g.Emitted()})
			tr.prog.update(func() string { return tr.line("churn", g) })
		default:
		}
		return false
	})
	if err != nil { // ctx ended or a side failed: end the writer
		stopChurn()
		<-churnDone
		return nil, err
	}
	if churnErr != nil {
		fmt.Fprintf(tr.stderr, "\nloadgen: churn stopped early: %v\n", churnErr)
	}
	res.Emitted = append(emitted, report.EmittedPoint{T: g.StoppedAt().Sub(tr.t0).Seconds(), Emitted: g.Emitted()})
	res.Churn = newChurnReport(g.Counts())
	res.ChurnStart, res.ChurnEnd = g.StartedAt().Sub(tr.t0).Seconds(), g.StoppedAt().Sub(tr.t0).Seconds()
	return g, tr.broadcast(protocol.Command{Cmd: protocol.CmdChurnEnd, At: g.StoppedAt().UnixNano(), Emitted: g.Emitted()})
}

// collect asks each side for its result, one at a time (its heap is
// measured by releasing it, which must not overlap another's release),
// waits for every side to end and adds their results to res.
func (tr *trial) collect(ctx context.Context, res *report.Trial, deletes map[string]int64) error {
	for i, s := range tr.sides {
		if err := s.send(protocol.Command{Cmd: protocol.CmdFinish, Deletes: deletes}); err != nil {
			return err
		}
		if err := tr.pump(ctx, func() bool { return tr.sides[i].result != nil }); err != nil {
			return err
		}
	}
	for _, s := range tr.sides {
		s.closeIn()
	}
	if err := tr.pump(ctx, func() bool { return tr.all(func(s *side) bool { return s.exited }) }); err != nil {
		return err
	}
	if tr.proxy != nil {
		res.Faults = newTrialFaults(tr.proxy, tr.t0)
	}
	for i, s := range tr.sides {
		r := *s.result
		if tr.proxy != nil && r.Check.Pass {
			if st := tr.proxy.Stats(); st.Stopped {
				conv := max(0, tr.caughtUpAt[i].Sub(st.StoppedAt).Seconds())
				r.ConvergeAfterFaults = &conv
			}
		}
		r.Timeline = timeline(s.samples, tr.t0)
		if tr.c.scenario == report.ScenarioSoak {
			r.Soak = report.AnalyseSoak(tr.c.soak.settings(), s.soak, float64(s.ready-tr.t0.UnixNano())/1e9, res.ChurnEnd, &r)
		}
		r.SyncedAt = float64(s.synced-tr.t0.UnixNano()) / 1e9
		r.ReadyAt = float64(s.ready-tr.t0.UnixNano()) / 1e9
		if tr.c.sideBySide {
			r.CPUScope = report.CPUScopeShared
			r.CPUSeconds, r.SyncCPUSeconds, r.ChurnCPUSeconds, r.ChurnCPUSecondsPerEvent = 0, 0, 0, 0
			r.SyncGCCPUSeconds, r.SyncSysCPUSeconds, r.SyncPageFaults = 0, 0, 0
			r.ChurnAllocBytes, r.ChurnAllocObjects, r.ChurnStartLive, r.ChurnStartGoal, r.ChurnStartHeap = 0, 0, 0, 0, 0
			if res.CPUByLabel != nil {
				r.CPUScope = report.CPUScopeLabel
				for k, v := range res.CPUByLabel {
					if strings.HasPrefix(k, r.Impl+"/") && k != r.Impl+"/client" {
						r.CPUSeconds += v
					}
				}
			}
		}
		res.Results = append(res.Results, r)
	}
	return nil
}

// all reports whether f holds for every side.
func (tr *trial) all(f func(*side) bool) bool {
	for _, s := range tr.sides {
		if !f(s) {
			return false
		}
	}
	return true
}

func (tr *trial) broadcast(cmd protocol.Command) error { return broadcast(tr.sides, cmd) }

// broadcast sends cmd to every side.
func broadcast(sides []*side, cmd protocol.Command) error {
	for _, s := range sides {
		if err := s.send(cmd); err != nil {
			return fmt.Errorf("%s: %w", s.impl, err)
		}
	}
	return nil
}

// pump handles the sides' messages until done() holds (checked after each
// message and every 10ms), a side fails or ctx ends.
func (tr *trial) pump(ctx context.Context, done func() bool) error {
	return pump(ctx, tr.msgs, tr.handle, done)
}

// pump passes the messages of msgs to handle until done() holds (checked
// after each message and every 10ms), handle fails or ctx ends.
func pump(ctx context.Context, msgs <-chan sideMsg, handle func(sideMsg) error, done func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case sm := <-msgs:
			if err := handle(sm); err != nil {
				return err
			}
		}
	}
	return nil
}

func (tr *trial) handle(sm sideMsg) error {
	s := tr.sides[sm.i]
	m := sm.m
	switch m.Type {
	case protocol.MsgSample:
		s.samples = append(s.samples, *m.Sample)
		if tr.phase != "churn" {
			tr.prog.update(func() string { return tr.line(tr.phase, nil) })
		}
	case protocol.MsgSoak:
		p := *m.Soak
		p.T = float64(p.At-tr.t0.UnixNano()) / 1e9
		s.soak = append(s.soak, p)
	case protocol.MsgSynced:
		s.synced = m.At
	case protocol.MsgReady:
		s.ready = m.At
	case protocol.MsgWantState:
		st, final, err := tr.state()
		if err != nil {
			return fmt.Errorf("read the server's state: %w", err)
		}
		return s.send(protocol.Command{Cmd: protocol.CmdState, State: st, Final: final})
	case protocol.MsgCaughtUp:
		s.caughtUp, s.check = true, m.Check
		if tr.caughtUpAt == nil {
			tr.caughtUpAt = map[int]time.Time{}
		}
		tr.caughtUpAt[sm.i] = time.Now()
	case protocol.MsgResult:
		s.result = m.Result
	case protocol.MsgMetrics:
		s.metricsURL = m.URL
		fmt.Fprintf(tr.stderr, "loadgen: %s metrics on %s\n", s.impl, m.URL)
	case protocol.MsgError:
		return fmt.Errorf("%s: %s", s.impl, m.Error)
	case protocol.MsgExit:
		s.exited = true
		if d := m.DidNotFit; d != nil {
			d.Impl, d.Phase = s.impl, tr.phase
			s.didNotFit = d
			return fmt.Errorf("%s: %s: %s", s.impl, d.Text, d.Reason)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if s.result == nil {
			return fmt.Errorf("%s ended before its result", s.impl)
		}
	}
	return nil
}

// shutdown ends every side still running and drains its messages.
func (tr *trial) shutdown() {
	for _, s := range tr.sides {
		s.closeIn()
	}
	deadline := time.After(time.Minute)
	for !tr.all(func(s *side) bool { return s.exited }) {
		select {
		case sm := <-tr.msgs:
			if sm.m.Type == protocol.MsgExit {
				s := tr.sides[sm.i]
				s.exited = true
				if d := sm.m.DidNotFit; d != nil && s.didNotFit == nil {
					d.Impl, d.Phase = s.impl, tr.phase
					s.didNotFit = d
				}
			}
		case <-deadline:
			return
		}
	}
}

// didNotFit returns why a side's process did not fit, once the trial has
// ended (shutdown has seen every exit); nil if every side fitted.
func (tr *trial) didNotFit() *report.DidNotFit {
	for _, s := range tr.sides {
		if s.didNotFit != nil {
			return s.didNotFit
		}
	}
	return nil
}

// line is the progress line: each side's latest sample.
func (tr *trial) line(phase string, g *target.Churner) string {
	out := fmt.Sprintf("[%s run %d/%d: %s %s]", strings.Join(tr.impls, "+"), tr.run, tr.c.runs, phase, since(tr.t0))
	if g != nil {
		out += fmt.Sprintf(" emitted %d", g.Emitted())
	}
	for _, s := range tr.sides {
		if len(s.samples) == 0 {
			continue
		}
		p := s.samples[len(s.samples)-1]
		out += fmt.Sprintf(" | %s synced %d/%d seen %d done %d heap %s", s.impl, p.Synced, tr.pods, p.Observed, p.Done, report.FmtBytes(float64(p.Heap)))
	}
	return out
}

// timeline converts samples to points in seconds since t0.
func timeline(ss []protocol.Sample, t0 time.Time) []report.TimelinePoint {
	out := make([]report.TimelinePoint, 0, len(ss))
	for _, s := range ss {
		p := report.TimelinePoint{T: float64(s.At-t0.UnixNano()) / 1e9, Synced: s.Synced, Observed: s.Observed,
			Done: s.Done, Heap: s.Heap, RSS: s.RSS, CPU: s.CPU, GC: s.GC}
		if s.Lat != nil {
			p.LatencyCount, p.LatencyP50, p.LatencyP99 = s.Lat.N, s.Lat.P50, s.Lat.P99
		}
		out = append(out, p)
	}
	return out
}

func since(t time.Time) string { return time.Since(t).Truncate(time.Second).String() }

// runOrder is the order in which run r (from 1) runs the implementations,
// each alone: as given in odd runs, reversed in even ones (A B, B A, A B…),
// so that what a trial's position brings (the machine as the previous
// trial's process left it) falls on each implementation in turn rather than
// on one. The first trial of an invocation remains special: it often pays
// the most kernel CPU for page faults (up to 3x later trials' on the project
// machine), and it is the first implementation's.
func runOrder(impls []string, r int) []string {
	if r%2 == 1 {
		return impls
	}
	rev := slices.Clone(impls)
	slices.Reverse(rev)
	return rev
}
