package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// shardinformer-only behaviour: parallel handlers, panics, bad input, the
// Block policy, and listener changes racing with the drain goroutines.

// hookLog records the pipeline hooks the tests look at.
type hookLog struct {
	pipeline.NopObserver
	mu         sync.Mutex
	panicked   []string // keys
	dropped    []error
	overflowed []string // listener names
	coalescing map[string][]bool
}

func (o *hookLog) HandlerPanicked(_, key string, _ any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.panicked = append(o.panicked, key)
}

func (o *hookLog) Dropped(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dropped = append(o.dropped, err)
}

func (o *hookLog) Overflowed(listener string, _, _ int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.overflowed = append(o.overflowed, listener)
}

func (o *hookLog) Coalescing(listener string, active bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.coalescing == nil {
		o.coalescing = map[string][]bool{}
	}
	o.coalescing[listener] = append(o.coalescing[listener], active)
}

func (o *hookLog) episodes(listener string) []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.coalescing[listener])
}

func (o *hookLog) snapshot() (panicked []string, dropped []error, overflowed []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.panicked), slices.Clone(o.dropped), slices.Clone(o.overflowed)
}

// --- parallel handlers ---

// ParallelPerKeyOrder: a parallel handler sees, per key, exactly what a
// handler registered through client-go's interface sees, and never two calls
// for one key at once.
func testParallelPerKeyOrder(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	const keys, rounds = 8, 15
	for i := range keys {
		mustCreate(t, c, cm("ns", fmt.Sprintf("k%d", i), "0"))
	}
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers)
	par, ser := newEventLog(im.exact), newEventLog(im.exact)
	regP, err := inf.AddParallelEventHandler(par, 4)
	if err != nil {
		t.Fatal(err)
	}
	regS := mustRegister(t)(inf.AddEventHandler(ser))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regP.HasSyncedChecker(), regS.HasSyncedChecker())

	for round := 1; round <= rounds; round++ {
		for i := range keys {
			mustUpdate(t, c, cm("ns", fmt.Sprintf("k%d", i), fmt.Sprint(round)))
		}
	}
	mustDelete(t, c, "ns/k0")
	mustDelete(t, c, "ns/k1")
	mustCreate(t, c, cm("ns", "k1", "again"))
	final := map[string]string{"ns/k1": "again"}
	for i := 2; i < keys; i++ {
		final[fmt.Sprintf("ns/k%d", i)] = fmt.Sprint(rounds)
	}
	for _, r := range []*testkit.Recorder{par, ser} {
		r.WaitFor(t, "the final state", func() bool { return maps.Equal(r.Labels(), final) })
		r.CheckConsistent(t) // includes: no concurrent calls for one key
	}
	if !im.exact {
		return // coalescing may merge differently for the two handlers
	}
	for i := range keys {
		k := fmt.Sprintf("ns/k%d", i)
		if got, want := par.Seq(k), ser.Seq(k); !slices.Equal(got, want) {
			t.Errorf("%s: parallel handler saw %v, serial handler %v", k, got, want)
		}
	}
}

// ParallelConcurrency: a parallel handler is called for different keys at
// once. Each call waits until some call for another key is in progress too;
// a handler that is never called concurrently fails at the guard.
func testParallelConcurrency(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	for i := range 16 {
		mustCreate(t, c, cm("ns", fmt.Sprintf("k%02d", i), "1"))
	}
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers)
	var (
		mu       sync.Mutex
		inflight = map[string]bool{}
		barrier  = make(chan struct{})
		once     sync.Once
		timedOut atomic.Bool
	)
	deadline := time.Now().Add(guard)
	par := newEventLog(im.exact)
	par.Before = func(e event) {
		mu.Lock()
		inflight[e.Key] = true
		if len(inflight) >= 2 {
			once.Do(func() { close(barrier) })
		}
		mu.Unlock()
		select {
		case <-barrier:
		case <-time.After(time.Until(deadline)):
			timedOut.Store(true)
		}
		mu.Lock()
		delete(inflight, e.Key)
		mu.Unlock()
	}
	reg, err := inf.AddParallelEventHandler(par, 4)
	if err != nil {
		t.Fatal(err)
	}
	testkit.RunSynced(t, inf)
	waitDone(t, "parallel handler sync", reg.HasSyncedChecker())
	if timedOut.Load() {
		t.Fatal("no two calls of the parallel handler overlapped")
	}
	if maxActive := par.MaxActive(); maxActive < 2 {
		t.Errorf("at most %d calls at once, want at least 2", maxActive)
	}
	par.CheckConsistent(t)
}

func testParallelWorkersInvalid(t *testing.T, im impl, _ bool) {
	inf := im.newOurs(newFake(false).ListerWatcher(), cmExample, 0, nsIndexers)
	for _, w := range []int{0, -1} {
		if _, err := inf.AddParallelEventHandler(newEventLog(true), w); err == nil {
			t.Errorf("AddParallelEventHandler with %d workers succeeded", w)
		}
		if _, err := inf.AddParallelEventHandlerWithOptions(newEventLog(true), w, cache.HandlerOptions{}); err == nil {
			t.Errorf("AddParallelEventHandlerWithOptions with %d workers succeeded", w)
		}
	}
	if _, err := inf.AddParallelEventHandler(newEventLog(true), 1); err != nil {
		t.Errorf("AddParallelEventHandler with 1 worker: %v", err)
	}
}

// --- panics ---

// panicky panics on every call for one key and records the others.
type panicky struct {
	*testkit.Recorder
	key    string
	panics atomic.Int32
}

func (p *panicky) check(obj any) {
	if objKey(obj) == p.key {
		p.panics.Add(1)
		panic("conformance: handler panic")
	}
}

func (p *panicky) OnAdd(obj any, initial bool) { p.check(obj); p.Recorder.OnAdd(obj, initial) }
func (p *panicky) OnUpdate(old, obj any)       { p.check(obj); p.Recorder.OnUpdate(old, obj) }
func (p *panicky) OnDelete(obj any)            { p.check(obj); p.Recorder.OnDelete(obj) }

// PanicRecovered: a panicking call is recovered and reported; the handler
// still syncs (its panicking initial add counts as handled) and gets later
// events, and other handlers are not affected.
func testPanicRecovered(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"), cm("ns", "boom", "1"), cm("ns", "c", "1"))
	obs := &hookLog{}
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers, pipeline.WithObserver(obs))
	p := &panicky{Recorder: newEventLog(im.exact), key: "ns/boom"}
	pp := &panicky{Recorder: newEventLog(im.exact), key: "ns/boom"} // parallel
	other := newEventLog(im.exact)
	regP := mustRegister(t)(inf.AddEventHandler(p))
	regPP, err := inf.AddParallelEventHandler(pp, 3)
	if err != nil {
		t.Fatal(err)
	}
	regO := mustRegister(t)(inf.AddEventHandler(other))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regP.HasSyncedChecker(), regPP.HasSyncedChecker(), regO.HasSyncedChecker())

	mustUpdate(t, c, cm("ns", "boom", "2"))
	mustUpdate(t, c, cm("ns", "a", "2"))
	mustCreate(t, c, cm("ns", "d", "1"))
	for _, h := range []*panicky{p, pp} {
		h.WaitEvent(t, "ns/a", "update:1->2")
		h.WaitEvent(t, "ns/d", "add:1")
		h.WaitKnown(t, "ns/c", "1")
		h.CheckConsistent(t)
	}
	other.WaitEvent(t, "ns/boom", "update:1->2")
	if got, want := other.Seq("ns/boom"), []string{"add:1/initial", "update:1->2"}; !slices.Equal(got, want) {
		t.Errorf("other handler: boom events %v, want %v", got, want)
	}
	// HandlerPanicked is called after the recovery, so wait for it.
	testkit.Eventually(t, "four reported panics", func() bool {
		panicked, _, _ := obs.snapshot()
		return len(panicked) >= 4
	})
	if got := p.panics.Load() + pp.panics.Load(); got != 4 {
		t.Errorf("handlers panicked %d times, want 4 (add and update of boom, twice)", got)
	}
	if panicked, _, _ := obs.snapshot(); len(panicked) != 4 || slices.ContainsFunc(panicked, func(k string) bool { return k != "ns/boom" }) {
		t.Errorf("Observer.HandlerPanicked keys = %v, want ns/boom four times", panicked)
	}
}

// CrashOnPanic runs a child process whose handler panics under
// WithCrashOnPanic: the panic must crash it, as in client-go.
func testCrashOnPanic(t *testing.T, im impl, _ bool) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestConformanceCrashOnPanicChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+im.name)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("child process: %v, want a crash; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "panic: conformance: crash on panic") {
		t.Fatalf("child exited with %v but not from the handler's panic; output:\n%s", err, out)
	}
}

const crashChildEnv = "SHARDINFORMER_CONFORMANCE_CRASH_CHILD"

// TestConformanceCrashOnPanicChild is the child process of
// TestConformance/CrashOnPanic; it skips unless started by it.
func TestConformanceCrashOnPanicChild(t *testing.T) {
	name := os.Getenv(crashChildEnv)
	if name == "" {
		t.Skip("helper process of TestConformance/CrashOnPanic")
	}
	i := slices.IndexFunc(impls, func(im impl) bool { return im.name == name })
	if i < 0 {
		t.Fatalf("unknown implementation %q", name)
	}
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"))
	inf := impls[i].newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers, pipeline.WithCrashOnPanic())
	mustRegister(t)(inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { panic("conformance: crash on panic") },
	}))
	testkit.Run(t, inf)
	<-time.After(guard)
	t.Fatal("the handler's panic did not crash the process")
}

// --- bad input ---

// KeylessObjectInList: a list holding an object without a key (here not an
// object at all: runtime.Unknown) is applied without it, the error is
// reported, and the informer syncs and keeps working. (client-go's informer
// fails the whole relist instead; doc.go, Bad input.)
func testKeylessObjectInList(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"), cm("ns", "b", "1"))
	lw := newHookedLW(c, false)
	lw.list = func(obj runtime.Object) runtime.Object {
		l := obj.(*corev1.ConfigMapList)
		out := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: l.ResourceVersion}}
		for i := range l.Items {
			out.Items = append(out.Items, runtime.RawExtension{Object: &l.Items[i]})
			if i == 0 {
				out.Items = append(out.Items, runtime.RawExtension{Raw: []byte(`{"kind":"NoKey"}`)})
			}
		}
		return out
	}
	obs := &hookLog{}
	inf := im.newOurs(lw, cmExample, 0, nsIndexers, pipeline.WithObserver(obs))
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	if got := slices.Sorted(slices.Values(inf.GetIndexer().ListKeys())); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("cache keys %v, want [ns/a ns/b]", got)
	}
	if got := r.Count(); got != 2 {
		t.Errorf("handler got %d events, want 2 initial adds", got)
	}
	// The rejection is reported after the rest of the list is queued, so
	// possibly after the sync.
	testkit.Eventually(t, "Observer.Dropped to get a cache.KeyError", func() bool {
		_, dropped, _ := obs.snapshot()
		return slices.ContainsFunc(dropped, func(err error) bool {
			var ke cache.KeyError
			return errors.As(err, &ke)
		})
	})
	mustCreate(t, c, cm("ns", "c", "1"))
	r.WaitEvent(t, "ns/c", "add:1")
	r.CheckConsistent(t)
}

// --- Block ---

// BlockRemoveReleasesShard: under Block a held handler with a full ring
// holds up its shard; removing it releases the shard (doc.go: the push waits
// on the listener's context).
func testBlockRemoveReleasesShard(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"))
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers)
	hold := newLatch(t)
	defer hold.Release()
	stuck, witness := newEventLog(im.exact), newEventLog(im.exact)
	stuck.Before = func(e event) {
		if e.Key == "ns/hot" {
			hold.Hold()
		}
	}
	regStuck := mustRegister(t)(inf.AddEventHandler(stuck))
	regW := mustRegister(t)(inf.AddEventHandler(witness))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regStuck.HasSyncedChecker(), regW.HasSyncedChecker())

	mustCreate(t, c, cm("ns", "hot", "0"))
	hold.waitEntered(t, "the stuck handler to hold")
	const updates = 10 // far more than the ring holds
	for v := 1; v <= updates; v++ {
		mustUpdate(t, c, cm("ns", "hot", fmt.Sprint(v)))
	}
	if err := inf.RemoveEventHandler(regStuck); err != nil {
		t.Fatal(err)
	}
	witness.WaitEvent(t, "ns/hot", fmt.Sprintf("update:%d->%d", updates-1, updates))
	if got := len(witness.Seq("ns/hot")); got != updates+1 {
		t.Errorf("witness got %d events for hot, want %d", got, updates+1)
	}
	hold.Release()
	shutDown(t, inf, regStuck)
	witness.CheckConsistent(t)
}

// --- listener changes racing with a busy shard ---

type zombie struct{ calls atomic.Int32 }

func (z *zombie) OnAdd(any, bool)   { z.calls.Add(1) }
func (z *zombie) OnUpdate(any, any) { z.calls.Add(1) }
func (z *zombie) OnDelete(any)      { z.calls.Add(1) }

// RemoveDuringJoin: a handler added after Run and removed before a busy
// shard got to its join request must not be fed by that shard afterwards.
// The shard's drain role is held in an index function while the
// handler is added and removed; after that its ring (capacity 2) would
// overflow if the shard still published to it, which Observer.Overflowed
// reports by listener name.
func testRemoveDuringJoin(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "g", "0"))
	gate := newLatch(t)
	defer gate.Release()
	obs := &hookLog{}
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, cache.Indexers{"gate": gateIndex(gate)}, pipeline.WithObserver(obs))
	w := newEventLog(im.exact)
	regW := mustRegister(t)(inf.AddEventHandler(w))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regW.HasSyncedChecker())

	mustUpdate(t, c, withLabels(cm("ns", "g", "1"), "gate", "hold"))
	gate.waitEntered(t, "g's drain role to be held")
	z := &zombie{}
	regZ := mustRegister(t)(inf.AddEventHandler(z))
	if err := inf.RemoveEventHandler(regZ); err != nil {
		t.Fatal(err)
	}
	gate.Release()
	for v := 2; v <= 6; v++ {
		mustUpdate(t, c, cm("ns", "g", fmt.Sprint(v)))
	}
	w.WaitKnown(t, "ns/g", "6")
	// One more write makes sure the batches above were flushed (Overflowed
	// is reported in the flush).
	mustUpdate(t, c, cm("ns", "g", "7"))
	w.WaitKnown(t, "ns/g", "7")
	shutDown(t, inf, regZ)
	_, _, overflowed := obs.snapshot()
	for _, name := range overflowed {
		if strings.Contains(name, "zombie") {
			t.Fatalf("a shard still publishes to the removed handler (Observer.Overflowed for %s)", name)
		}
	}
}

// --- full rings ---

// OverflowKeepsLevel: a handler held while one key is created, deleted and
// created again several times overflows its ring (capacity 2); afterwards it
// must still end at the key's latest state. Under Coalesce a key that was
// added and deleted within the overflow (nothing to tell) must still take
// the next add (doc.go: add+delete is nothing, delete+add an update); before
// 38da723 pending.merge dropped it.
func testOverflowKeepsLevel(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers)
	hold := newLatch(t)
	defer hold.Release()
	r := newEventLog(im.exact)
	r.Before = func(e event) {
		if e.Key == "ns/h" {
			hold.Hold()
		}
	}
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())

	mustCreate(t, c, cm("ns", "h", "1"))
	hold.waitEntered(t, "the handler to be held")
	// With the worker held, the first two notifications fill e's ring and
	// the rest overflow.
	mustCreate(t, c, cm("ns", "e", "1"))
	mustDelete(t, c, "ns/e")
	mustCreate(t, c, cm("ns", "e", "2"))
	mustDelete(t, c, "ns/e")
	mustCreate(t, c, cm("ns", "e", "3"))
	hold.Release()
	mustUpdate(t, c, cm("ns", "e", "4"))
	r.WaitKnown(t, "ns/e", "4")
	r.CheckConsistent(t)
	if im.exact {
		if got, want := r.Seq("ns/e"), []string{"add:1", "delete:1", "add:2", "delete:2", "add:3", "update:3->4"}; !slices.Equal(got, want) {
			t.Errorf("ns/e: events %v, want %v", got, want)
		}
	}
}

// StalledBeyondBudget: under the default policy a stalled handler keeps every
// notification until its backlog reaches the budget, then its overflow is
// merged per key, so what it holds stays within budget + one entry per key
// and the rings' capacity whatever the number of events; the other handler
// is not held up; the switch is reported (Coalescing hook, Stats); released,
// the stalled handler walks validly to every key's final state and the
// episode ends.
func testStalledBeyondBudget(t *testing.T, im impl, _ bool) {
	const keys, rounds, budget, ringCap = 20, 50, 40, 4
	c := newFake(false)
	for i := range keys {
		mustCreate(t, c, cm("ns", fmt.Sprint("k", i), "0"))
	}
	hooks := &hookLog{}
	inf := im.newOurs(c.ListerWatcher(), cmExample, 0, nsIndexers,
		pipeline.WithRingCapacity(ringCap), pipeline.WithBacklogBudget(budget), pipeline.WithObserver(hooks))
	hold := newLatch(t)
	stalled, normal := newEventLog(false), newEventLog(false)
	stalled.Before = func(e event) {
		if !e.Initial {
			hold.Hold()
		}
	}
	regS := mustRegister(t)(inf.AddEventHandler(stalled))
	regN := mustRegister(t)(inf.AddEventHandler(normal))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regS.HasSyncedChecker(), regN.HasSyncedChecker())
	name := inf.Stats().Listeners[0].Name

	for r := 1; r <= rounds; r++ {
		for i := range keys {
			mustUpdate(t, c, cm("ns", fmt.Sprint("k", i), fmt.Sprint(r)))
		}
	}
	for i := range keys {
		normal.WaitKnown(t, fmt.Sprint("ns/k", i), fmt.Sprint(rounds))
	}
	hold.waitEntered(t, "the stalled handler")
	shards := len(inf.Stats().Shards)
	testkit.Eventually(t, "the stalled handler's notifications to be queued", func() bool {
		for _, l := range inf.Stats().Listeners {
			if l.Name == name {
				return l.InRing+l.InOverflow >= budget
			}
		}
		return false
	})
	for _, l := range inf.Stats().Listeners {
		if l.Name != name {
			continue
		}
		if l.InOverflow > budget+keys {
			t.Errorf("stalled handler: %d in overflow, more than budget %d + %d keys", l.InOverflow, budget, keys)
		}
		if l.InRing > shards*ringCap {
			t.Errorf("stalled handler: %d in rings, more than %d shards × %d", l.InRing, shards, ringCap)
		}
		if !l.Coalescing {
			t.Errorf("stalled handler beyond its budget: Stats().Coalescing = false")
		}
	}
	if got := hooks.episodes(name); !slices.Equal(got, []bool{true}) {
		t.Errorf("Coalescing hook for the stalled handler: %v, want [true]", got)
	}

	hold.Release()
	for i := range keys {
		stalled.WaitKnown(t, fmt.Sprint("ns/k", i), fmt.Sprint(rounds))
	}
	stalled.CheckConsistent(t)
	normal.CheckConsistent(t)
	if got, all := stalled.Count("update"), keys*rounds; got >= all {
		t.Errorf("stalled handler got %d updates of %d: nothing was merged", got, all)
	}
	testkit.Eventually(t, "the episode to end", func() bool {
		got := hooks.episodes(name)
		return len(got) == 2 && !got[1]
	})
	for _, l := range inf.Stats().Listeners {
		if l.Coalescing || l.InOverflow != 0 {
			t.Errorf("%s after catching up: coalescing %v, %d in overflow", l.Name, l.Coalescing, l.InOverflow)
		}
	}
}
