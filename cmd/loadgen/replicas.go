package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/selfstat"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/replicas"
	"runtime"
	"runtime/debug"
)

// defaultReplicaPods is --pods of the replicas scenario. At 30k pods one
// replica holds every pod (≈0.5 GiB of process memory with the diet) and
// syncs and reconciles them in about ten seconds on two cores, so the
// default sweep (1, 2 and 3 replicas: six processes, three trials) runs in
// a few minutes per run, while each replica of three still holds ten
// thousand pods, far above its fixed costs (sixteen slot informers'
// goroutines and rings at most), so memory per replica shows its 1/N share.
const defaultReplicaPods = 30000

// The replica group of the replicas scenario, the same for every replica.
// The lease timings are generous for a loaded machine: a replica fences
// itself (and resyncs every slot) when a renewal takes longer than the
// renew deadline, which on two cores shared by up to four processes must
// not happen; rounds every 200ms keep hand-over (a few rounds) short.
var replicaGroup = protocol.ReplicaSpec{
	Group:         "loadgen",
	Namespace:     "loadgen-replicas",
	Slots:         16,
	LeaseDuration: 10 * time.Second,
	RenewDeadline: 6 * time.Second,
	RenewInterval: 200 * time.Millisecond,
}

// parseReplicaCounts parses --replicas: increasing positive counts.
func parseReplicaCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--replicas %q: %q is not a positive count", s, f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--replicas %q: counts must increase", s)
		}
		out = append(out, n)
	}
	if out[len(out)-1] > replicaGroup.Slots {
		return nil, fmt.Errorf("--replicas %q: at most %d replicas (one slot each)", s, replicaGroup.Slots)
	}
	return out, nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// validateReplicas checks the flags the replicas scenario cannot honour.
func (c *config) validateReplicas() []error {
	var errs []error
	if len(c.impls) > 1 {
		errs = append(errs, fmt.Errorf("--scenario replicas: one implementation per run, not %q", c.impls))
	}
	if c.kubeconfig != "" {
		errs = append(errs, errors.New("--scenario replicas runs on the embedded simulated API server only (--kubeconfig)"))
	}
	if c.sideBySide {
		errs = append(errs, errors.New("--scenario replicas: every replica is a process of its own (--side-by-side)"))
	}
	if c.metricsAddr != "" {
		errs = append(errs, errors.New("--scenario replicas does not serve metrics (--metrics-addr)"))
	}
	switch c.shardSelector {
	case "on", "off", "both":
	default:
		errs = append(errs, fmt.Errorf("--shard-selector %q: want on, off or both", c.shardSelector))
	}
	return errs
}

// serverFilters lists the simulator's ShardedListAndWatch settings to run.
func (c *config) serverFilters() []bool {
	switch c.shardSelector {
	case "off":
		return []bool{false}
	case "both":
		return []bool{true, false}
	}
	return []bool{true}
}

// replicaNames returns the identities of a group of n replicas.
func replicaNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("r", i)
	}
	return out
}

// runReplicaScenario runs every trial of the replicas scenario: for each
// server filtering mode, replica count and run, a fresh simulated server
// and that many replica processes.
func runReplicaScenario(ctx context.Context, c config, iters func(time.Duration) int64, dir string, prog *progress, stderr io.Writer) (*report.Replicas, error) {
	rr := newReplicasReport(c)
	// Several replica processes write to stderr at once.
	stderr = &syncWriter{w: stderr}
	for _, filters := range c.serverFilters() {
		for _, n := range c.replicaCounts {
			for run := 1; run <= c.runs; run++ {
				tr := replicaTrial{c: c, n: n, filters: filters, run: run, iters: iters, dir: dir, prog: prog, stderr: stderr}
				res, err := tr.do(ctx)
				prog.done()
				if err != nil {
					return nil, fmt.Errorf("%d replica(s), shardSelector %s, run %d: %w", n, filterWord(filters), run, err)
				}
				rr.Trials = append(rr.Trials, res)
				debug.FreeOSMemory()
			}
		}
	}
	report.SummarizeReplicas(rr)
	return rr, nil
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func filterWord(server bool) string {
	if server {
		return "applied by the server"
	}
	return "ignored by the server (client-side fallback)"
}

// replicaTrial is one trial of the replicas scenario.
type replicaTrial struct {
	c       config
	n       int
	filters bool // the server applies shardSelector
	run     int
	iters   func(time.Duration) int64
	dir     string
	prog    *progress
	stderr  io.Writer

	names  []string
	target replicas.Assignment // the assignment the group converged to
	sides  []*replicaSide
	msgs   chan sideMsg
	t0     time.Time
	phase  string
}

// replicaSide is the parent's handle on one replica process.
type replicaSide struct {
	*side
	name string
	last *protocol.Sample // latest sample
	// slots in view at the latest sample before convergence, and how
	// many times a slot entered the view between samples until then
	slots    []int
	arrivals int
	mark     map[string]protocol.Sample
	state    *protocol.ReplicaState
	figures  *report.ReplicaFigures
}

func (tr *replicaTrial) label() string {
	return fmt.Sprintf("%d replica(s), shardSelector %s", tr.n, map[bool]string{true: "on", false: "off"}[tr.filters])
}

func (tr *replicaTrial) do(ctx context.Context) (report.ReplicaTrial, error) {
	c := tr.c
	res := report.ReplicaTrial{Replicas: tr.n, ServerFilters: tr.filters, Run: tr.run, Pods: c.pods, Results: []report.ReplicaResult{}}
	tc := targetConfig(c)
	tc.Resource, tc.ShardedListAndWatch = target.ResourcePods, tr.filters
	st, err := target.NewSim(tc)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := st.Close(context.Background()); err != nil {
			fmt.Fprintln(tr.stderr, "loadgen:", err)
		}
	}()
	setup := trial{c: c, pods: c.pods, run: tr.run, impls: []string{tr.label()}, prog: tr.prog, stderr: tr.stderr}
	if err := setup.setup(ctx, st, &res.Server); err != nil {
		return res, err
	}
	tr.names = replicaNames(tr.n)
	cpu0 := selfstat.CPUTime()
	if err := tr.start(ctx, st); err != nil {
		return res, err
	}
	defer tr.shutdown()

	// Converge: every slot active at its target owner, every initial key
	// reconciled, every queue empty.
	tr.phase = "converge"
	if err := tr.pump(ctx, func() bool { return tr.converged(c.pods) }); err != nil {
		return res, err
	}
	convergedAt := tr.latest()
	res.ConvergeSeconds = convergedAt.Sub(tr.t0).Seconds()
	tr.markAll("converged")

	// Churn, as the controller scenario's.
	tr.phase = "churn"
	g := target.NewChurner(st, tc)
	if err := tr.broadcast(protocol.Command{Cmd: protocol.CmdChurnStart, At: time.Now().UnixNano()}); err != nil {
		return res, err
	}
	tr.markAll("churn")
	churnDone := make(chan error, 1)
	pprof.Do(ctx, pprof.Labels("role", "churn"), func(ctx context.Context) {
		go func() { churnDone <- g.Run(ctx, c.pods) }() // the churn writer; joined below
	})
	var churnErr error
	if err := tr.pump(ctx, func() bool {
		select {
		case churnErr = <-churnDone:
			return true
		default:
			return false
		}
	}); err != nil {
		return res, err
	}
	if churnErr != nil {
		fmt.Fprintf(tr.stderr, "\nloadgen: churn stopped early: %v\n", churnErr)
	}
	res.Churn = newChurnReport(g.Counts())
	if err := tr.broadcast(protocol.Command{Cmd: protocol.CmdChurnEnd, At: g.StoppedAt().UnixNano(), Emitted: g.Emitted()}); err != nil {
		return res, err
	}

	// Catch up: the group holds the server's keys, nothing queued, no
	// reconcile for half a second.
	tr.phase = "catch-up"
	want, err := st.State(ctx)
	if err != nil {
		return res, fmt.Errorf("read the server's state: %w", err)
	}
	res.ServerObjects = len(want)
	quiet := quietTracker{}
	deadline := time.Now().Add(c.quiesce)
	if err := tr.pump(ctx, func() bool {
		return time.Now().After(deadline) || quiet.settled(tr, len(want), g.StoppedAt())
	}); err != nil {
		return res, err
	}
	caughtUp := tr.latest()
	res.CatchUpSeconds = max(0, caughtUp.Sub(g.StoppedAt()).Seconds()-quietPeriod.Seconds())
	tr.markAll("caught-up")
	res.ParentCPUSeconds = (selfstat.CPUTime() - cpu0).Seconds()

	// Results: each replica's final state and figures, all measured
	// before any replica stops.
	tr.phase = "measure"
	if err := tr.broadcast(protocol.Command{Cmd: protocol.CmdFinish, Deletes: g.DeleteStamps()}); err != nil {
		return res, err
	}
	if err := tr.pump(ctx, func() bool {
		return !slices.ContainsFunc(tr.sides, func(s *replicaSide) bool { return s.figures == nil })
	}); err != nil {
		return res, err
	}
	res.Check = tr.check(want)
	for _, s := range tr.sides {
		res.Results = append(res.Results, tr.result(s, &res))
	}
	report.SummarizeReplicaTrial(&res, c.pods, g.Emitted())
	return res, nil
}

// start spawns the replica processes.
func (tr *replicaTrial) start(ctx context.Context, st *target.Sim) error {
	c := tr.c
	v := c.variants[c.impls[0]]
	tr.msgs = make(chan sideMsg, 1024)
	tr.t0 = time.Now()
	for i, name := range tr.names {
		rs := replicaGroup
		rs.Identity = name
		sp := protocol.Spec{Scenario: report.ScenarioReplicas, Impl: c.impls[0], Core: v.core, Decoder: v.decoder, Diet: v.diet, Compact: v.compact,
			WireWorkers: c.wireWorkers, Pods: c.pods, Namespaces: c.namespaces, Endpoint: st.Endpoint(), Workers: c.workers,
			ReconcileIters: tr.iters(c.reconcileWork), Shards: c.shards, RingSize: c.ringSize, Policy: c.policy.String(),
			ContentType: c.contentType, WatchList: c.watchList, Seed: c.seed, Quiesce: c.quiesce, Profile: c.profile,
			Process: true, Replica: &rs}
		if c.profile != "" {
			sp.ProfileDir = filepath.Join(tr.dir, "profiles", fmt.Sprintf("replicas%d-%s-run%d-%s", tr.n, map[bool]string{true: "server", false: "client"}[tr.filters], tr.run, name))
		}
		s, err := spawnSide(ctx, i, sp, tr.msgs, tr.stderr)
		if err != nil {
			return err
		}
		s.impl = name // in errors
		tr.sides = append(tr.sides, &replicaSide{side: s, name: name, mark: map[string]protocol.Sample{}})
	}
	return nil
}

// converged reports whether the replicas' views hold an exactly balanced
// partition of the slots (replicas.Sticky of the slots in view is the
// slots in view; kept in tr.target), the replicas have reconciled pods
// keys together, and every queue is empty, by their latest samples.
func (tr *replicaTrial) converged(pods int) bool {
	var keys int64
	held := map[string][]int{}
	for _, s := range tr.sides {
		if s.last == nil || s.last.Replica.Queue > 0 {
			return false
		}
		held[s.name] = s.last.Replica.ActiveSlots
		keys += s.last.Replica.Keys
	}
	assign, err := replicas.Sticky(tr.names, replicaGroup.Slots, held)
	if err != nil || keys != int64(pods) {
		return false
	}
	for _, s := range tr.sides {
		if !slices.Equal(s.last.Replica.ActiveSlots, assign.OwnedSlots(s.name)) {
			return false
		}
	}
	tr.target = assign
	return true
}

// latest is the time of the newest of the replicas' latest samples.
func (tr *replicaTrial) latest() time.Time {
	var at int64
	for _, s := range tr.sides {
		if s.last != nil {
			at = max(at, s.last.At)
		}
	}
	return time.Unix(0, at)
}

// markAll keeps each replica's latest sample under name, to split its
// counters into phases.
func (tr *replicaTrial) markAll(name string) {
	for _, s := range tr.sides {
		if s.last != nil {
			s.mark[name] = *s.last
		}
	}
}

// quietPeriod is how long the group must have reconciled nothing, with
// every key in a view and empty queues, to count as caught up.
const quietPeriod = 500 * time.Millisecond

// quietTracker finds the end of catch-up from the replicas' samples.
type quietTracker struct {
	done  uint64
	since time.Time
}

func (q *quietTracker) settled(tr *replicaTrial, want int, churnEnd time.Time) bool {
	var keys int64
	var done uint64
	for _, s := range tr.sides {
		if s.last == nil || time.Unix(0, s.last.At).Before(churnEnd) || s.last.Replica.Queue > 0 {
			return false
		}
		keys += s.last.Replica.Keys
		done += s.last.Done
	}
	if keys != int64(want) {
		return false
	}
	now := time.Now()
	if done != q.done || q.since.IsZero() {
		q.done, q.since = done, now
		return false
	}
	return now.Sub(q.since) >= quietPeriod
}

func (tr *replicaTrial) broadcast(cmd protocol.Command) error {
	sides := make([]*side, len(tr.sides))
	for i, s := range tr.sides {
		sides[i] = s.side
	}
	return broadcast(sides, cmd)
}

// pump handles the replicas' messages until done() holds, a replica fails
// or ctx ends.
func (tr *replicaTrial) pump(ctx context.Context, done func() bool) error {
	return pump(ctx, tr.msgs, tr.handle, done)
}

func (tr *replicaTrial) handle(sm sideMsg) error {
	s := tr.sides[sm.i]
	m := sm.m
	switch m.Type {
	case protocol.MsgSample:
		if m.Sample.Replica == nil {
			return fmt.Errorf("%s: sample without replica figures", s.name)
		}
		if tr.phase == "converge" {
			for _, slot := range m.Sample.Replica.ActiveSlots {
				if !slices.Contains(s.slots, slot) {
					s.arrivals++
				}
			}
			s.slots = m.Sample.Replica.ActiveSlots
		}
		s.last = m.Sample
		tr.prog.update(tr.line)
	case protocol.MsgResult:
		if m.ReplicaState != nil {
			s.state = m.ReplicaState
		}
		if m.ReplicaResult != nil {
			s.figures = m.ReplicaResult
		}
	case protocol.MsgError:
		return fmt.Errorf("%s: %s", s.name, m.Error)
	case protocol.MsgExit:
		s.exited = true
		if m.Error != "" {
			return errors.New(m.Error)
		}
		return fmt.Errorf("%s ended before its result", s.name)
	}
	return nil
}

// line is the progress line.
func (tr *replicaTrial) line() string {
	out := fmt.Sprintf("[%s run %d/%d: %s %s]", tr.label(), tr.run, tr.c.runs, tr.phase, since(tr.t0))
	for _, s := range tr.sides {
		if p := s.last; p != nil {
			out += fmt.Sprintf(" | %s slots %d keys %d done %d heap %s", s.name, len(p.Replica.ActiveSlots), p.Replica.Keys, p.Done, report.FmtBytes(float64(p.Heap)))
		}
	}
	return out
}

// shutdown tells every replica to stop (they hand their slots over and
// delete their Leases) and waits for the processes to exit.
func (tr *replicaTrial) shutdown() {
	for _, s := range tr.sides {
		s.closeIn()
	}
	deadline := time.After(time.Minute)
	for slices.ContainsFunc(tr.sides, func(s *replicaSide) bool { return !s.exited }) {
		select {
		case sm := <-tr.msgs:
			if sm.m.Type == protocol.MsgExit {
				tr.sides[sm.i].exited = true
				if sm.m.Error != "" {
					fmt.Fprintf(tr.stderr, "loadgen: %s\n", sm.m.Error)
				}
			}
		case <-deadline:
			fmt.Fprintln(tr.stderr, "loadgen: a replica process did not exit within a minute")
			return
		}
	}
}

// check compares the replicas' final states with the server's (want): the
// union of the handlers' views and of the reconciled versions must equal
// it, no key in two views at the end, and no key's stays in two replicas'
// views overlapping in time at any point of the trial.
func (tr *replicaTrial) check(want map[string]string) report.ReplicaCheck {
	chk := report.ReplicaCheck{ServerObjects: len(want), Details: []string{}}
	note := func(s string) {
		if len(chk.Details) < maxDetails {
			chk.Details = append(chk.Details, s)
		}
	}
	views, reconciled := map[string]string{}, map[string]string{}
	holder := map[string]string{}
	for _, s := range tr.sides {
		for k, rv := range s.state.View {
			if h, ok := holder[k]; ok {
				chk.KeysInTwoViews++
				note(fmt.Sprintf("%s in the views of %s and %s at the end", k, h, s.name))
			}
			holder[k], views[k] = s.name, rv
		}
		maps.Copy(reconciled, s.state.Reconciled)
	}
	chk.ViewMismatches = diff(want, views, func(s string) { note("views: " + s) })
	chk.ReconciledMismatches = diff(want, reconciled, func(s string) { note("reconciled: " + s) })
	type stay struct {
		protocol.KeySpan
		who string
	}
	byKey := map[string][]stay{}
	for _, s := range tr.sides {
		for _, sp := range s.state.Spans {
			byKey[sp.Key] = append(byKey[sp.Key], stay{sp, s.name})
			chk.Stays++
		}
	}
	const open = int64(1<<63 - 1)
	for k, ss := range byKey {
		slices.SortFunc(ss, func(a, b stay) int { return cmp.Compare(a.From, b.From) })
		end, who := int64(0), ""
		for _, s := range ss {
			if s.From < end && s.who != who {
				chk.Overlaps++
				note(fmt.Sprintf("%s in the views of %s and %s at once", k, who, s.who))
			}
			to := s.To
			if to == 0 {
				to = open
			}
			if to > end {
				end, who = to, s.who
			}
		}
	}
	chk.Pass = chk.KeysInTwoViews == 0 && chk.ViewMismatches == 0 && chk.ReconciledMismatches == 0 && chk.Overlaps == 0
	for _, s := range tr.sides {
		s.state = nil
	}
	return chk
}

// result is one replica's figures, split into phases by its marked samples.
func (tr *replicaTrial) result(s *replicaSide, t *report.ReplicaTrial) report.ReplicaResult {
	f := s.figures
	r := report.ReplicaResult{Identity: s.name, ReplicaFigures: *f, TargetSlots: len(tr.target.OwnedSlots(s.name)), SlotArrivals: s.arrivals}
	conv, churn, caught := s.mark["converged"], s.mark["churn"], s.mark["caught-up"]
	if conv.Replica == nil || churn.Replica == nil || caught.Replica == nil {
		return r
	}
	r.SyncReconciles = conv.Done
	r.SyncDecodedObjects, r.SyncDecodedBytes = conv.Replica.Objects, conv.Replica.Bytes
	r.SyncCPUSeconds = conv.CPU
	r.ChurnDecodedObjects, r.ChurnDecodedBytes = caught.Replica.Objects-churn.Replica.Objects, caught.Replica.Bytes-churn.Replica.Bytes
	r.ChurnCPUSeconds = caught.CPU - churn.CPU
	if t.ConvergeSeconds > 0 {
		r.SyncReconcilesPerSecond = float64(r.SyncReconciles) / t.ConvergeSeconds
	}
	if span := t.Churn.Seconds + t.CatchUpSeconds; span > 0 {
		r.ChurnReconcilesPerSecond = float64(caught.Done-churn.Done) / span
	}
	return r
}

// replicasNote is the report's reading guide for the scenario.
const replicasNote = "Every replica is a process of its own on the same machine, and the simulated API server and churn writer run in the parent: " +
	"N replicas share the machine's cores (%d here), so aggregate reconciles/s cannot grow linearly with N (the processes compete for the same CPU, " +
	"and each replica pays fixed costs: its Leases, its slot informers, its share of the hand-over). What must shrink as 1/N is each replica's share: " +
	"objects cached, events and bytes decoded, and memory. With shardSelector ignored by the server (the client-side fallback) every slot informer " +
	"decodes the whole stream, so a replica holding k slots decodes k times what one unsharded informer does. " +
	"Slots go to replicas by rendezvous hashing with exact quotas, sticky to what each replica holds (replicas.Sticky): ⌊16/N⌋ or ⌈16/N⌉ each, so the largest replica holds " +
	"⌈16/N⌉/16 of the keys (0.375 for 3), and the retained heap per slot owned shows whether memory follows the share. " +
	"Slots moved in counts the slots that entered a replica's view until the group converged: its slots owned when each slot went straight " +
	"to its final owner, more when a replica that started first held slots that later ones then took."

func newReplicasReport(c config) *report.Replicas {
	g := replicaGroup
	return &report.Replicas{Group: report.ReplicaGroup{Counts: c.replicaCounts, ShardSelector: c.shardSelector, Slots: g.Slots,
		LeaseDurationSeconds: g.LeaseDuration.Seconds(), RenewDeadlineSeconds: g.RenewDeadline.Seconds(), RenewIntervalSeconds: g.RenewInterval.Seconds(),
		HandlerCalls: "one at a time per replica (runner Workers 1): the handler only updates the view and enqueues; --workers reconcile workers per replica"},
		Note: fmt.Sprintf(replicasNote, runtime.NumCPU()), Rows: []report.ReplicaRow{}, Trials: []report.ReplicaTrial{}}
}
