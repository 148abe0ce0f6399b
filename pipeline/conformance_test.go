package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// The conformance suite runs the same behavioural tests against client-go's
// informer and against shardinformer in several configurations, through one
// constructor signature. A test asserts one observable result for every
// implementation unless doc.go documents a difference; then the difference is
// asserted explicitly and explained where it is.

type newInformer func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer

type impl struct {
	name string
	new  newInformer
	ours bool
	// exact: every notification reaches the handler as it was produced.
	// Coalesce with a tiny ring, or Buffer with a tiny budget, may merge a
	// key's notifications (doc.go); for them the tests check that what
	// arrives is consistent and ends at the right state instead of comparing
	// event sequences.
	exact bool
	// block: a full ring makes the shard wait for the handler, so a held
	// handler holds up the shard's other handlers and its sync (doc.go, Block).
	block bool
	// relaxed: WithRelaxedOrder, without client-go's cross-key order
	// (CrossShardOrder asserts the documented difference).
	relaxed bool
	// decodes: the cache holds objects encoded (WithCompactStore), so the
	// objects readers and handlers get are decoded: equal to the stored
	// ones, not the same pointers.
	decodes bool
	opts    []pipeline.Option
}

// same reports whether a and b are the same cached object: the same pointer,
// or, for an implementation that decodes, semantically equal.
func (im impl) same(a, b any) bool {
	if im.decodes {
		return apiequality.Semantic.DeepEqual(a, b)
	}
	return a == b
}

// newOurs builds our informer with the impl's options plus extra ones.
func (im impl) newOurs(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers, extra ...pipeline.Option) *pipeline.Informer {
	if !im.ours {
		panic("newOurs on " + im.name)
	}
	return pipeline.NewSharedIndexInformer(lw, example, resync, indexers, append(slices.Clone(im.opts), extra...)...)
}

func shardinformer(name string, exact, block bool, opts ...pipeline.Option) impl {
	return impl{
		name:  "shardinformer/" + name,
		ours:  true,
		exact: exact,
		block: block,
		opts:  opts,
		new: func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, example, resync, indexers, opts...)
		},
	}
}

var impls = append([]impl{
	{
		name:  "client-go",
		exact: true,
		new: func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, example, resync, indexers)
		},
	},
	shardinformer("shards=1", true, false, pipeline.WithShards(1)),
	shardinformer("shards=4", true, false, pipeline.WithShards(4)),
	// Buffer with a budget of 3 notifications: episodes of coalescing start
	// and end within the tests.
	shardinformer("shards=4/ring=2/budget=3", false, false, pipeline.WithShards(4), pipeline.WithRingCapacity(2), pipeline.WithBacklogBudget(3)),
	relaxed(shardinformer("shards=4/relaxed", true, false, pipeline.WithShards(4), pipeline.WithRelaxedOrder())),
	// The compact store: every object encoded in the cache and decoded for
	// the handlers and readers; a decoded-object cache of 2, so that nearly
	// every read decodes.
	decodes(shardinformer("shards=4/compact", true, false, pipeline.WithShards(4), pipeline.WithCompactStore(compact.Config{Decoded: 2}))),
	decodes(shardinformer("shards=4/ring=2/budget=3/compact", false, false, pipeline.WithShards(4), pipeline.WithRingCapacity(2), pipeline.WithBacklogBudget(3), pipeline.WithCompactStore(compact.Config{}))),
}, tinyRings()...)

func decodes(im impl) impl {
	im.decodes = true
	return im
}

func relaxed(im impl) impl {
	im.relaxed = true
	return im
}

// tinyRings exercises the overflow path under each policy: rings of two.
// Every policy but Coalesce delivers every notification (Buffer stays within
// its default budget here).
func tinyRings() []impl {
	var out []impl
	for _, p := range pipeline.FullRingPolicies() {
		out = append(out, shardinformer("shards=4/ring=2/"+p.String(), p != pipeline.Coalesce, p == pipeline.Block,
			pipeline.WithShards(4), pipeline.WithRingCapacity(2), pipeline.WithFullRingPolicy(p)))
	}
	return out
}

type conformanceTest struct {
	name      string
	listModes bool            // run with and without WatchList
	oursOnly  bool            // shardinformer-only behaviour
	only      func(impl) bool // further restricts the implementations, if set
	run       func(t *testing.T, im impl, watchList bool)
}

var conformanceTests = []conformanceTest{
	{name: "AddUpdateDelete", listModes: true, run: testAddUpdateDelete},
	{name: "TombstonesAfterRelist", listModes: true, run: testTombstonesAfterRelist},
	{name: "UnchangedRelistWithoutResync", listModes: true, run: testUnchangedRelistWithoutResync},
	{name: "LateHandler", run: testLateHandler},
	{name: "Resync", run: testResync},
	{name: "HandlerResyncNeedsInformerResync", run: testHandlerResyncNeedsInformerResync},
	{name: "RemoveEventHandler", run: testRemoveEventHandler},
	{name: "RemoveEventHandlerDropsPending", run: testRemoveEventHandlerDropsPending},
	{name: "HasSynced", run: testHasSynced},
	{name: "SetTransform", listModes: true, run: testSetTransform},
	{name: "SetTransformDelete", run: testSetTransformDelete},
	{name: "Indexers", run: testIndexers},
	{name: "Listers", run: testListers},
	{name: "InformerFactory", run: testInformerFactory},
	{name: "WatchErrorHandler", listModes: true, run: testWatchErrorHandler},
	{name: "RunTwiceAndStop", run: testRunTwiceAndStop},
	{name: "SlowHandlerGetsEveryEvent", run: testSlowHandlerGetsEveryEvent},
	{name: "CrossShardOrder", run: testCrossShardOrder},
	{name: "LastStoreSyncResourceVersion", listModes: true, run: testLastStoreSyncResourceVersion},
	{name: "IsStoppedTiming", run: testIsStoppedTiming},

	// shardinformer only (conformance_ours_test.go).
	{name: "ParallelPerKeyOrder", oursOnly: true, run: testParallelPerKeyOrder},
	{name: "ParallelConcurrency", oursOnly: true, run: testParallelConcurrency},
	{name: "ParallelWorkersInvalid", oursOnly: true, run: testParallelWorkersInvalid},
	{name: "PanicRecovered", oursOnly: true, run: testPanicRecovered},
	{name: "CrashOnPanic", oursOnly: true, only: func(im impl) bool { return im.name == "shardinformer/shards=4" }, run: testCrashOnPanic},
	{name: "KeylessObjectInList", oursOnly: true, run: testKeylessObjectInList},
	{name: "BlockRemoveReleasesShard", oursOnly: true, only: func(im impl) bool { return im.block }, run: testBlockRemoveReleasesShard},
	{name: "OverflowKeepsLevel", oursOnly: true, only: func(im impl) bool { return strings.Contains(im.name, "ring=2") }, run: testOverflowKeepsLevel},
	{name: "RemoveDuringJoin", oursOnly: true, only: func(im impl) bool { return strings.Contains(im.name, "ring=2") && !im.block }, run: testRemoveDuringJoin},
	{name: "StalledBeyondBudget", oursOnly: true, only: func(im impl) bool { return im.name == "shardinformer/shards=4" }, run: testStalledBeyondBudget},
}

func TestConformance(t *testing.T) {
	for _, ct := range conformanceTests {
		t.Run(ct.name, func(t *testing.T) {
			for _, im := range impls {
				if ct.oursOnly && !im.ours || ct.only != nil && !ct.only(im) {
					continue
				}
				t.Run(im.name, func(t *testing.T) {
					t.Parallel()
					if !ct.listModes {
						ct.run(t, im, false)
						return
					}
					for _, wl := range []bool{false, true} {
						t.Run(fmt.Sprintf("watchList=%v", wl), func(t *testing.T) { ct.run(t, im, wl) })
					}
				})
			}
		})
	}
}

var nsIndexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

var cmExample = &corev1.ConfigMap{}

// --- 1. add/update/delete ---

func testAddUpdateDelete(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, cm("ns1", "a", "1"), cm("ns1", "b", "1"), cm("ns2", "c", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	for _, k := range []string{"ns1/a", "ns1/b", "ns2/c"} {
		if got, want := r.Seq(k), []string{"add:1/initial"}; !slices.Equal(got, want) {
			t.Errorf("%s: initial events %v, want %v", k, got, want)
		}
	}

	mustCreate(t, c, cm("ns2", "d", "1"))
	mustUpdate(t, c, cm("ns1", "a", "2"))
	mustUpdate(t, c, cm("ns1", "a", "3"))
	mustDelete(t, c, "ns1/b")
	mustCreate(t, c, cm("ns2", "e", "1"))
	mustDelete(t, c, "ns2/e")
	mustCreate(t, c, cm("ns2", "e", "2"))
	mustUpdate(t, c, cm("ns2", "c", "2"))
	mustDelete(t, c, "ns2/c")
	// Every key's final state is one it had at no earlier point, so reaching
	// it means every event of the key has been handled.
	final := map[string]string{"ns1/a": "3", "ns2/d": "1", "ns2/e": "2"}
	r.WaitFor(t, "the final state", func() bool { return maps.Equal(r.Labels(), final) })
	r.CheckConsistent(t)

	if im.exact {
		want := map[string][]string{
			"ns1/a": {"add:1/initial", "update:1->2", "update:2->3"},
			"ns1/b": {"add:1/initial", "delete:1"},
			"ns2/c": {"add:1/initial", "update:1->2", "delete:2"},
			"ns2/d": {"add:1"},
			"ns2/e": {"add:1", "delete:1", "add:2"},
		}
		for k, w := range want {
			if got := r.Seq(k); !slices.Equal(got, w) {
				t.Errorf("%s: events %v, want %v", k, got, w)
			}
		}
	}
	for _, e := range r.All() {
		switch e.Kind {
		case "add":
			if e.Initial && (e.Key == "ns2/d" || e.Key == "ns2/e") {
				t.Errorf("%s: live add has isInInitialList=true", e.Key)
			}
		case "update":
			if rvNum(t, e.Obj) <= rvNum(t, e.Old) {
				t.Errorf("%s: update from resourceVersion %s to older %s", e.Key, rvOf(e.Old), rvOf(e.Obj))
			}
		case "tombstone":
			t.Errorf("%s: a deletion seen by the watch was delivered as %T", e.Key, e.Obj)
		case "sync", "replay":
			t.Errorf("%s: unexpected update without a new resourceVersion (%s)", e.Key, e)
		}
	}

	// The cache holds exactly the final state, and the very objects the
	// handler was given last.
	idx := inf.GetIndexer()
	for k, v := range final {
		obj, ok, err := idx.GetByKey(k)
		if err != nil || !ok || valueOf(obj) != v {
			t.Errorf("GetByKey(%s) = %v, %v, %v; want value %s", k, obj, ok, err, v)
			continue
		}
		evs := r.Events(k)
		if last := evs[len(evs)-1]; !im.same(last.Obj, obj) {
			t.Errorf("GetByKey(%s) returned another object than the handler's last one", k)
		}
	}
	for _, k := range []string{"ns1/b", "ns2/c"} {
		if obj, ok, err := idx.GetByKey(k); ok || err != nil {
			t.Errorf("GetByKey(%s) = %v, %v, %v; want absent", k, obj, ok, err)
		}
	}
	if obj, ok, err := idx.Get(cm("ns1", "a", "")); err != nil || !ok || valueOf(obj) != "3" {
		t.Errorf("Get(ns1/a) = %v, %v, %v; want value 3", obj, ok, err)
	}
	if _, ok, err := idx.Get(cm("ns1", "b", "")); ok || err != nil {
		t.Errorf("Get(ns1/b) = %v, %v; want absent", ok, err)
	}
	wantKeys := slices.Sorted(maps.Keys(final))
	for name, s := range map[string]cache.Store{"GetIndexer()": idx, "GetStore()": inf.GetStore()} {
		if got := slices.Sorted(slices.Values(s.ListKeys())); !slices.Equal(got, wantKeys) {
			t.Errorf("%s.ListKeys() = %v, want %v", name, got, wantKeys)
		}
		got := map[string]string{}
		for _, obj := range s.List() {
			got[objKey(obj)] = valueOf(obj)
		}
		if !maps.Equal(got, final) {
			t.Errorf("%s.List() = %v, want %v", name, got, final)
		}
	}
	if got := keysOf(idx.ByIndex(cache.NamespaceIndex, "ns2")); !slices.Equal(got, []string{"ns2/d", "ns2/e"}) {
		t.Errorf("ByIndex(namespace, ns2) = %v, want [ns2/d ns2/e]", got)
	}
}

// keysOf returns the sorted keys of objects returned with an error.
func keysOf(objs []any, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, objKey(o))
	}
	slices.Sort(keys)
	return keys
}

// --- 2. tombstones after a relist ---

func testTombstonesAfterRelist(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, cm("ns", "a", "1"), cm("ns", "b", "1"), cm("ns", "c", "1"), cm("ns", "f", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	addA := r.Events("ns/a")[0]

	// Changes no watch reports; only a relist reveals them.
	c.Remove("ns/a")          // deleted
	c.Set(cm("ns", "b", "2")) // changed
	c.Set(cm("ns", "e", "1")) // created
	c.Remove("ns/f")          // deleted and created again:
	c.Set(cm("ns", "f", "2")) // client-go reports an update
	forceRelist(t, c)         // c unchanged
	final := map[string]string{"ns/b": "2", "ns/c": "1", "ns/e": "1", "ns/f": "2"}
	r.WaitFor(t, "the relisted state", func() bool { return maps.Equal(r.Labels(), final) })
	r.CheckConsistent(t)

	// The unchanged object (c) gets an update without a new resourceVersion:
	// without resync every handler counts as resyncing (see
	// UnchangedRelistWithoutResync).
	want := map[string][]string{
		"ns/a": {"add:1/initial", "tombstone:1"},
		"ns/b": {"add:1/initial", "update:1->2"},
		"ns/c": {"add:1/initial", "replay:1"},
		"ns/e": {"add:1"},
		"ns/f": {"add:1/initial", "update:1->2"},
	}
	// c's final state equals its initial one, so wait for its replay too.
	r.WaitEvent(t, "ns/c", "replay:1")
	for k, w := range want {
		if got := r.Seq(k); !slices.Equal(got, w) {
			t.Errorf("%s: events %v, want %v", k, got, w)
		}
	}
	evs := r.Events("ns/a")
	tomb, ok := evs[len(evs)-1].Obj.(cache.DeletedFinalStateUnknown)
	switch {
	case !ok:
		t.Errorf("ns/a: deleted while unwatched, delivered as %T, want cache.DeletedFinalStateUnknown", evs[len(evs)-1].Obj)
	case tomb.Key != "ns/a":
		t.Errorf("tombstone key %q, want ns/a", tomb.Key)
	case !im.same(tomb.Obj, addA.Obj):
		t.Errorf("tombstone carries %v (resourceVersion %s), want the last known object (resourceVersion %s)", tomb.Obj, rvOf(tomb.Obj), rvOf(addA.Obj))
	}

	idx := inf.GetIndexer()
	got := map[string]string{}
	for _, obj := range idx.List() {
		got[objKey(obj)] = valueOf(obj)
	}
	if !maps.Equal(got, final) {
		t.Errorf("cache after relist = %v, want %v", got, final)
	}
	if !inf.HasSynced() {
		t.Error("HasSynced is false after a relist")
	}
}

// UnchangedRelistWithoutResync: with resync disabled, client-go delivers a
// relist's unchanged objects to every handler as updates without a new
// resourceVersion: a listener is "syncing" from its registration until the
// first resync check, and without resync there is never a check
// (sharedProcessor.addListener sets listeners[l] = true). Ours did not until
// 38da723 (listener.syncing started false).
func testUnchangedRelistWithoutResync(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, cm("ns", "a", "1"), cm("ns", "b", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r1, r2 := newEventLog(im.exact), newEventLog(im.exact)
	reg1 := mustRegister(t)(inf.AddEventHandler(r1))
	reg2 := mustRegister(t)(inf.AddEventHandlerWithResyncPeriod(r2, 0))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg1.HasSyncedChecker(), reg2.HasSyncedChecker())

	forceRelist(t, c)
	// Updates written after the relist are the sync point: per key, the
	// relist's notification comes first.
	for _, n := range []string{"a", "b"} {
		mustUpdate(t, c, cm("ns", n, "2"))
	}
	for i, r := range []*testkit.Recorder{r1, r2} {
		for _, k := range []string{"ns/a", "ns/b"} {
			r.WaitEvent(t, k, "update:1->2")
			if got, want := r.Seq(k), []string{"add:1/initial", "replay:1", "update:1->2"}; !slices.Equal(got, want) {
				t.Errorf("handler %d: %s: events %v, want %v", i+1, k, got, want)
			}
		}
		r.CheckConsistent(t)
	}
}

// --- 3. a handler added after sync ---

func testLateHandler(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	const n = 20
	for i := range n {
		mustCreate(t, c, cm("ns", fmt.Sprintf("cm-%02d", i), "1"))
	}
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	early := newEventLog(im.exact)
	mustRegister(t)(inf.AddEventHandler(early))
	testkit.RunSynced(t, inf)

	// The late handler is held in its first call.
	hold := newLatch(t)
	defer hold.Release()
	late := newEventLog(im.exact)
	var first sync.Once
	late.Before = func(event) { first.Do(hold.Hold) }
	reg := mustRegister(t)(inf.AddEventHandler(late))
	hold.waitEntered(t, "the late handler's first call")
	if reg.HasSynced() {
		t.Error("the late handler's HasSynced is true while it is still handling its initial adds")
	}
	select {
	case <-reg.HasSyncedChecker().Done():
		t.Error("the late handler's HasSyncedChecker is done while it is still handling its initial adds")
	default:
	}
	hold.Release()
	waitDone(t, "late handler sync", reg.HasSyncedChecker())
	// Synced: every cached object has been handled, as an initial-list add.
	evs := late.All()
	keys := map[string]bool{}
	for _, e := range evs {
		if e.Kind != "add" || !e.Initial || e.Label != "1" {
			t.Errorf("late handler: %s %s before any live event, want add:1/initial", e.Key, e)
		}
		keys[e.Key] = true
	}
	if len(evs) != n || len(keys) != n {
		t.Errorf("late handler synced after %d events for %d keys, want %d initial adds", len(evs), len(keys), n)
	}

	// Then live events.
	mustUpdate(t, c, cm("ns", "cm-00", "2"))
	mustDelete(t, c, "ns/cm-01")
	mustCreate(t, c, cm("ns", "live", "1"))
	late.WaitEvent(t, "ns/cm-00", "update:1->2")
	late.WaitEvent(t, "ns/cm-01", "delete:1")
	late.WaitEvent(t, "ns/live", "add:1")
	for k, want := range map[string][]string{
		"ns/cm-00": {"add:1/initial", "update:1->2"},
		"ns/cm-01": {"add:1/initial", "delete:1"},
		"ns/live":  {"add:1"},
	} {
		if got := late.Seq(k); !slices.Equal(got, want) {
			t.Errorf("late handler: %s: events %v, want %v", k, got, want)
		}
	}

	// A second late handler, held while the cache changes: nothing is lost
	// or duplicated. client-go sends the cache contents under its lock at
	// registration; we send them from each shard's drain goroutine, so a
	// change racing with the registration may already be in the initial add.
	hold2 := newLatch(t)
	defer hold2.Release()
	late2 := newEventLog(im.exact)
	var first2 sync.Once
	late2.Before = func(event) { first2.Do(hold2.Hold) }
	reg2 := mustRegister(t)(inf.AddEventHandler(late2))
	hold2.waitEntered(t, "the second late handler's first call")
	mustUpdate(t, c, cm("ns", "cm-02", "2"))
	mustCreate(t, c, cm("ns", "during", "1"))
	hold2.Release()
	waitDone(t, "second late handler sync", reg2.HasSyncedChecker())
	want := map[string]string{"ns/cm-00": "2", "ns/cm-02": "2", "ns/live": "1", "ns/during": "1"}
	for i := 3; i < n; i++ {
		want[fmt.Sprintf("ns/cm-%02d", i)] = "1"
	}
	late2.WaitFor(t, "the second late handler to reach the cache state", func() bool { return maps.Equal(late2.Labels(), want) })
	if got := late2.Seq("ns/cm-02"); !slices.Equal(got, []string{"add:1/initial", "update:1->2"}) && !slices.Equal(got, []string{"add:2/initial"}) {
		t.Errorf("second late handler: cm-02 events %v, want [add:1/initial update:1->2] (or [add:2/initial] if the update raced with the registration)", got)
	}
	if got := late2.Seq("ns/during"); !slices.Equal(got, []string{"add:1"}) && !slices.Equal(got, []string{"add:1/initial"}) {
		t.Errorf("second late handler: during events %v, want one add", got)
	}
	late.CheckConsistent(t)
	late2.CheckConsistent(t)
}

// --- 4. resync ---

// Resync: with the informer's resync period equal to the handler's, the
// resync check finds the handler due every time, so it is "syncing" for the
// whole test and also receives a relist's unchanged objects, deterministically
// in both implementations. A handler without resync gets neither.
func testResync(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	keys := []string{"ns/a", "ns/b", "ns/c"}
	for _, k := range keys {
		mustCreate(t, c, cm("ns", k[3:], "1"))
	}
	inf := im.new(c.ListerWatcher(), cmExample, time.Second, nsIndexers)
	rr := newEventLog(im.exact) // resyncs with the informer's default period
	rn := newEventLog(im.exact) // never resyncs
	regR := mustRegister(t)(inf.AddEventHandler(rr))
	regN := mustRegister(t)(inf.AddEventHandlerWithResyncPeriod(rn, 0))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regR.HasSyncedChecker(), regN.HasSyncedChecker())

	rr.WaitFor(t, "a periodic resync of every object", func() bool {
		for _, k := range keys {
			if !slices.Contains(rr.Seq(k), "sync:1") {
				return false
			}
		}
		return true
	})
	// A real update of every key is the sync point for the other handler:
	// a resync wrongly sent to it would precede the update.
	for _, k := range keys {
		mustUpdate(t, c, cm("ns", k[3:], "2"))
	}
	for _, k := range keys {
		rn.WaitEvent(t, k, "update:1->2")
		rr.WaitEvent(t, k, "update:1->2")
	}

	// A relist that finds nothing changed: updates without a new
	// resourceVersion, with new objects (not the cached ones).
	forceRelist(t, c)
	rr.WaitFor(t, "the relist's unchanged objects", func() bool {
		for _, k := range keys {
			if !slices.Contains(rr.Seq(k), "replay:2") {
				return false
			}
		}
		return true
	})
	for _, k := range keys {
		mustUpdate(t, c, cm("ns", k[3:], "3"))
	}
	for _, k := range keys {
		rn.WaitEvent(t, k, "update:2->3")
		rr.WaitEvent(t, k, "update:2->3")
	}
	for _, k := range keys {
		if got, want := rn.Seq(k), []string{"add:1/initial", "update:1->2", "update:2->3"}; !slices.Equal(got, want) {
			t.Errorf("handler without resync: %s: events %v, want %v", k, got, want)
		}
		if got, want := rr.Seq(k, "sync"), []string{"add:1/initial", "update:1->2", "replay:2", "update:2->3"}; !slices.Equal(got, want) {
			t.Errorf("resyncing handler: %s: events (without periodic resyncs) %v, want %v", k, got, want)
		}
		for _, e := range rr.Events(k) {
			if e.Kind == "sync" && e.Old != e.Obj {
				t.Errorf("resyncing handler: %s: periodic resync with two objects", k)
			}
		}
	}
	rr.CheckConsistent(t)
	rn.CheckConsistent(t)
}

// HandlerResyncNeedsInformerResync: client-go ignores a handler's resync
// period when the informer was built without resync (determineResyncPeriod:
// "this shared informer doesn't support resyncing") and never resyncs. We
// lower the informer's resync check period to the handler's instead.
//
// Nothing happens in client-go, so there is no event to wait for: this test
// watches for three resync periods and fails on the first resync. It cannot
// pass wrongly by being slow; at worst a slow run misses a wrong resync.
func testHandlerResyncNeedsInformerResync(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandlerWithResyncPeriod(r, time.Second))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	time.Sleep(3 * time.Second) // three resync periods: see above
	if n := r.Count("sync"); n > 0 {
		t.Fatalf("handler got %d resyncs from an informer built with resync 0", n)
	}
}

// --- 5. RemoveEventHandler ---

func testRemoveEventHandler(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"), cm("ns", "b", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	keep, gone, never := newEventLog(im.exact), newEventLog(im.exact), newEventLog(im.exact)
	regKeep := mustRegister(t)(inf.AddEventHandler(keep))
	regGone := mustRegister(t)(inf.AddEventHandler(gone))
	regNever := mustRegister(t)(inf.AddEventHandler(never))
	if err := inf.RemoveEventHandler(regNever); err != nil {
		t.Fatalf("RemoveEventHandler before Run: %v", err)
	}
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regKeep.HasSyncedChecker(), regGone.HasSyncedChecker())

	if err := inf.RemoveEventHandler(regGone); err != nil {
		t.Fatalf("RemoveEventHandler: %v", err)
	}
	mustCreate(t, c, cm("ns", "x", "1"))
	keep.WaitEvent(t, "ns/x", "add:1")
	// ShutDownEventHandler removes again (a no-op) and waits until the
	// handler has stopped: it can receive nothing after this.
	shutDown(t, inf, regGone)
	if got := gone.Seq("ns/x"); len(got) > 0 {
		t.Errorf("removed handler got %v for an object created after its removal", got)
	}
	if got := gone.Count(); got != 2 {
		t.Errorf("removed handler got %d events, want its 2 initial adds", got)
	}
	if err := inf.RemoveEventHandler(regGone); err != nil {
		t.Errorf("third RemoveEventHandler: %v", err)
	}
	shutDown(t, inf, regNever)
	if got := never.Count(); got != 0 {
		t.Errorf("handler removed before Run got %d events", got)
	}

	// Removing a registration of another informer leaves both alone (client-go
	// ignores it; we return an error, which is not asserted here).
	other := im.new(newFake(false).ListerWatcher(), cmExample, 0, nsIndexers)
	regOther := mustRegister(t)(other.AddEventHandler(newEventLog(true)))
	_ = inf.RemoveEventHandler(regOther)
	_ = other.RemoveEventHandler(regKeep)

	mustUpdate(t, c, cm("ns", "a", "2"))
	keep.WaitEvent(t, "ns/a", "update:1->2")
	if got, want := keep.Seq("ns/a"), []string{"add:1/initial", "update:1->2"}; !slices.Equal(got, want) {
		t.Errorf("remaining handler: ns/a events %v, want %v", got, want)
	}
	keep.CheckConsistent(t)
}

// RemoveEventHandlerDropsPending: once RemoveEventHandler returns, a handler
// gets at most the call in progress; notifications queued for it are dropped.
// In client-go the listener's pop goroutine returns as soon as its input is
// closed, and the run goroutine exits after the current call. Here the
// handler is held in one call while a later notification of the same key is
// already queued for it.
func testRemoveEventHandlerDropsPending(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "k", "0"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	hold := newLatch(t)
	defer hold.Release()
	a, b := newEventLog(im.exact), newEventLog(im.exact)
	a.Before = func(e event) {
		if e.Kind == "update" && e.Label == "2" {
			hold.Hold()
		}
	}
	regA := mustRegister(t)(inf.AddEventHandler(a))
	regB := mustRegister(t)(inf.AddEventHandler(b))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", regA.HasSyncedChecker(), regB.HasSyncedChecker())

	// Hold A in update 2, then publish update 3 to both handlers: once B has
	// it, it waits for A too.
	mustUpdate(t, c, cm("ns", "k", "1"))
	mustUpdate(t, c, cm("ns", "k", "2"))
	hold.waitEntered(t, "handler A to be handling update 2")
	mustUpdate(t, c, cm("ns", "k", "3"))
	b.WaitKnown(t, "ns/k", "3")

	if err := inf.RemoveEventHandler(regA); err != nil {
		t.Fatal(err)
	}
	hold.Release()
	shutDown(t, inf, regA)
	if got, want := a.Seq("ns/k"), []string{"add:0/initial", "update:0->1", "update:1->2"}; !slices.Equal(got, want) {
		t.Errorf("removed handler: events %v, want %v (nothing after the call in progress at removal)", got, want)
	}
}

// --- 6. HasSynced ---

func testHasSynced(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	const n = 10
	for i := range n {
		mustCreate(t, c, cm("ns", fmt.Sprintf("cm-%02d", i), "1"))
	}
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	if inf.HasSynced() || inf.GetController().HasSynced() {
		t.Error("HasSynced is true before Run")
	}
	if rv := inf.LastSyncResourceVersion(); rv != "" {
		t.Errorf("LastSyncResourceVersion before Run = %q, want empty", rv)
	}
	if name := inf.HasSyncedChecker().Name(); name == "" {
		t.Error("HasSyncedChecker has no name")
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if cache.WaitFor(expired, "", inf.HasSyncedChecker()) {
		t.Error("cache.WaitFor on an informer that never ran reported success")
	}

	hold := newLatch(t)
	defer hold.Release()
	slow, fast := newEventLog(im.exact), newEventLog(im.exact)
	var first sync.Once
	slow.Before = func(event) { first.Do(hold.Hold) }
	regSlow := mustRegister(t)(inf.AddEventHandler(slow))
	regFast := mustRegister(t)(inf.AddEventHandler(fast))
	if regSlow.HasSynced() || regFast.HasSynced() {
		t.Error("a registration's HasSynced is true before Run")
	}
	testkit.Run(t, inf)
	hold.waitEntered(t, "the slow handler's first initial add")
	ctx, cancelCtx := context.WithTimeout(context.Background(), guard)
	defer cancelCtx()
	// Under Block the held handler holds up its shard, so the informer
	// cannot sync before it is released (doc.go, Block).
	if !im.block {
		if !cache.WaitFor(ctx, "", inf.HasSyncedChecker(), regFast.HasSyncedChecker()) {
			t.Fatal("informer and fast handler did not sync")
		}
		if got := fast.Count(); got != n {
			t.Errorf("fast handler synced after %d events, want %d", got, n)
		}
		if !inf.GetController().HasSynced() {
			t.Error("GetController().HasSynced() is false after the informer synced")
		}
	}
	if regSlow.HasSynced() {
		t.Error("the slow handler's HasSynced is true while it handles its first initial add")
	}
	hold.Release()
	if !cache.WaitFor(ctx, "", regSlow.HasSyncedChecker()) {
		t.Fatal("slow handler did not sync")
	}
	if got := slow.Count(); got != n {
		t.Errorf("slow handler synced after %d events, want %d", got, n)
	}
	for _, e := range slow.All() {
		if e.Kind != "add" || !e.Initial {
			t.Errorf("slow handler: %s %s, want an initial add", e.Key, e)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, regSlow.HasSynced, regFast.HasSynced) {
		t.Error("WaitForCacheSync failed")
	}
	if name := regSlow.HasSyncedChecker().Name(); name == "" {
		t.Error("registration's HasSyncedChecker has no name")
	}
}

// --- 7. SetTransform ---

func transformed(obj any) bool {
	o, ok := obj.(*corev1.ConfigMap)
	return ok && o.ManagedFields == nil && o.Labels["transformed"] == "yes"
}

func stripAndLabel(obj any) (any, error) {
	o, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	o = o.DeepCopy()
	o.ManagedFields = nil
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels["transformed"] = "yes"
	return o, nil
}

func managed(ns, name, v string) *corev1.ConfigMap {
	o := cm(ns, name, v)
	o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "conformance", Operation: metav1.ManagedFieldsOperationUpdate}}
	return o
}

func testSetTransform(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, managed("ns", "a", "1"), managed("ns", "b", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	if err := inf.SetTransform(stripAndLabel); err != nil {
		t.Fatalf("SetTransform before Run: %v", err)
	}
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	if err := inf.SetTransform(stripAndLabel); err == nil {
		t.Error("SetTransform after Run succeeded")
	}
	mustCreate(t, c, managed("ns", "c", "1"))
	mustUpdate(t, c, managed("ns", "a", "2"))
	r.WaitEvent(t, "ns/c", "add:1")
	r.WaitEvent(t, "ns/a", "update:1->2")
	for _, e := range r.All() {
		if !transformed(e.Obj) || e.Old != nil && !transformed(e.Old) {
			t.Errorf("%s: handler got an untransformed object in %s", e.Key, e)
		}
	}
	objs := inf.GetIndexer().List()
	if len(objs) != 3 {
		t.Errorf("cache holds %d objects, want 3", len(objs))
	}
	for _, obj := range objs {
		if !transformed(obj) {
			t.Errorf("cache holds an untransformed object %s", objKey(obj))
		}
	}
}

// SetTransformDelete: client-go's RealFIFO transforms the object of a
// Deleted delta like any other (only tombstones are left alone), so OnDelete
// receives the transformed final state. (Our fifo skipped it before 0a80006.)
func testSetTransformDelete(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, managed("ns", "a", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	if err := inf.SetTransform(stripAndLabel); err != nil {
		t.Fatal(err)
	}
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	mustDelete(t, c, "ns/a")
	r.WaitEvent(t, "ns/a", "delete:1")
	for _, e := range r.Events("ns/a") {
		if !transformed(e.Obj) {
			t.Errorf("handler got an untransformed object in %s", e)
		}
	}
}

// --- 8. indexers ---

// tagsIndex indexes a ConfigMap under each comma-separated value of its
// "tags" data: a multi-valued index.
func tagsIndex(obj any) ([]string, error) {
	o, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("not a ConfigMap: %T", obj)
	}
	if o.Data["tags"] == "" {
		return nil, nil
	}
	return strings.Split(o.Data["tags"], ","), nil
}

func valueIndex(obj any) ([]string, error) { return []string{valueOf(obj)}, nil }

func tagged(ns, name, v, tags string) *corev1.ConfigMap {
	return withData(cm(ns, name, v), "tags", tags)
}

func testIndexers(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c,
		tagged("ns1", "a", "1", "red,blue"),
		tagged("ns1", "b", "1", "blue"),
		tagged("ns2", "c", "1", "red"),
		tagged("ns2", "d", "1", ""))
	inf := im.new(c.ListerWatcher(), cmExample, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "tags": tagsIndex})
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	idx := inf.GetIndexer()

	check := func(index, value string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := keysOf(idx.ByIndex(index, value)); !slices.Equal(got, want) {
			t.Errorf("ByIndex(%s, %s) = %v, want %v", index, value, got, want)
		}
		keys, err := idx.IndexKeys(index, value)
		if got := slices.Sorted(slices.Values(keys)); err != nil || !slices.Equal(got, want) {
			t.Errorf("IndexKeys(%s, %s) = %v, %v; want %v", index, value, got, err, want)
		}
	}
	values := func(index string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := slices.Sorted(slices.Values(idx.ListIndexFuncValues(index))); !slices.Equal(got, want) {
			t.Errorf("ListIndexFuncValues(%s) = %v, want %v", index, got, want)
		}
	}
	check(cache.NamespaceIndex, "ns1", "ns1/a", "ns1/b")
	check(cache.NamespaceIndex, "ns2", "ns2/c", "ns2/d")
	check("tags", "red", "ns1/a", "ns2/c")
	check("tags", "blue", "ns1/a", "ns1/b")
	check("tags", "green")
	values("tags", "blue", "red")
	values(cache.NamespaceIndex, "ns1", "ns2")
	if got := keysOf(idx.Index("tags", tagged("x", "probe", "", "red,green"))); !slices.Equal(got, []string{"ns1/a", "ns2/c"}) {
		t.Errorf("Index(tags, {red,green}) = %v, want [ns1/a ns2/c]", got)
	}
	if got := keysOf(idx.Index("tags", tagged("x", "probe", "", "blue"))); !slices.Equal(got, []string{"ns1/a", "ns1/b"}) {
		t.Errorf("Index(tags, {blue}) = %v, want [ns1/a ns1/b]", got)
	}
	if _, err := idx.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex of an unknown index succeeded")
	}
	if _, err := idx.IndexKeys("nope", "x"); err == nil {
		t.Error("IndexKeys of an unknown index succeeded")
	}
	if _, err := idx.Index("nope", cm("ns1", "a", "")); err == nil {
		t.Error("Index of an unknown index succeeded")
	}
	if got := idx.ListIndexFuncValues("nope"); len(got) != 0 {
		t.Errorf("ListIndexFuncValues of an unknown index = %v, want none", got)
	}
	if got := slices.Sorted(maps.Keys(idx.GetIndexers())); !slices.Equal(got, []string{cache.NamespaceIndex, "tags"}) {
		t.Errorf("GetIndexers() = %v", got)
	}

	// Updates move keys between values, deletes remove them, and a value
	// nobody has any more is gone from ListIndexFuncValues.
	mustUpdate(t, c, tagged("ns1", "a", "2", "green"))
	mustDelete(t, c, "ns2/c")
	mustCreate(t, c, tagged("ns2", "e", "1", "blue,green"))
	final := map[string]string{"ns1/a": "2", "ns1/b": "1", "ns2/d": "1", "ns2/e": "1"}
	r.WaitFor(t, "the updates", func() bool { return maps.Equal(r.Labels(), final) })
	check("tags", "red")
	check("tags", "blue", "ns1/b", "ns2/e")
	check("tags", "green", "ns1/a", "ns2/e")
	values("tags", "blue", "green")
	check(cache.NamespaceIndex, "ns2", "ns2/d", "ns2/e")

	// AddIndexers after Run indexes the objects already cached, then keeps up.
	if err := inf.AddIndexers(cache.Indexers{"value": valueIndex}); err != nil {
		t.Fatalf("AddIndexers after Run: %v", err)
	}
	check("value", "1", "ns1/b", "ns2/d", "ns2/e")
	check("value", "2", "ns1/a")
	if err := inf.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}); err == nil {
		t.Error("AddIndexers with an existing index name succeeded")
	}
	mustUpdate(t, c, tagged("ns1", "b", "2", "blue"))
	r.WaitKnown(t, "ns1/b", "2")
	check("value", "1", "ns2/d", "ns2/e")
	check("value", "2", "ns1/a", "ns1/b")
	values("value", "1", "2")
	r.CheckConsistent(t)
}

// --- 9. listers ---

func testListers(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c,
		withLabels(cm("ns1", "a", "1"), "app", "x"),
		withLabels(cm("ns1", "b", "1"), "app", "y"),
		withLabels(cm("ns2", "c", "1"), "app", "x"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())

	lister := corev1listers.NewConfigMapLister(inf.GetIndexer())
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	names := func(objs []*corev1.ConfigMap, err error) []string {
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		out := []string{}
		for _, o := range objs {
			out = append(out, o.Namespace+"/"+o.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		what string
		got  []string
		want []string
	}{
		{"List(everything)", names(lister.List(labels.Everything())), []string{"ns1/a", "ns1/b", "ns2/c"}},
		{"List(app=x)", names(lister.List(sel)), []string{"ns1/a", "ns2/c"}},
		{"ConfigMaps(ns1).List(everything)", names(lister.ConfigMaps("ns1").List(labels.Everything())), []string{"ns1/a", "ns1/b"}},
		{"ConfigMaps(ns1).List(app=x)", names(lister.ConfigMaps("ns1").List(sel)), []string{"ns1/a"}},
		{"ConfigMaps(ns3).List(everything)", names(lister.ConfigMaps("ns3").List(labels.Everything())), []string{}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if o, err := lister.ConfigMaps("ns2").Get("c"); err != nil || o.Data["v"] != "1" {
		t.Errorf("ConfigMaps(ns2).Get(c) = %v, %v", o, err)
	}
	if _, err := lister.ConfigMaps("ns2").Get("a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMaps(ns2).Get(a): error %v, want NotFound", err)
	}

	mustUpdate(t, c, withLabels(cm("ns1", "b", "2"), "app", "x"))
	mustDelete(t, c, "ns2/c")
	r.WaitKnown(t, "ns1/b", "2")
	r.WaitKnown(t, "ns2/c", "")
	if got := names(lister.List(sel)); !slices.Equal(got, []string{"ns1/a", "ns1/b"}) {
		t.Errorf("after changes, List(app=x) = %v, want [ns1/a ns1/b]", got)
	}
	if _, err := lister.ConfigMaps("ns2").Get("c"); !apierrors.IsNotFound(err) {
		t.Errorf("after delete, Get(ns2/c): error %v, want NotFound", err)
	}
}

// InformerFactory: the informer plugged into a generated SharedInformerFactory
// over client-go's fake clientset; the factory's lister reads our cache.
func testInformerFactory(t *testing.T, im impl, _ bool) {
	client := fake.NewClientset(cm("ns1", "a", "1"), cm("ns2", "b", "1"))
	// The fake clientset drops events written before its watch exists; this
	// reactor registers the watch and then reports it.
	watching := make(chan struct{}, 1)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(gvr, action.GetNamespace())
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.InformerFor(cmExample, func(cl kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return cl.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return cl.CoreV1().ConfigMaps(metav1.NamespaceAll).Watch(ctx, opts)
			},
		}, cl)
		return im.new(lw, cmExample, resync, nsIndexers)
	})
	if got := factory.Core().V1().ConfigMaps().Informer(); got.GetIndexer() != inf.GetIndexer() {
		t.Fatalf("the factory's informer (%T) does not use the registered informer's cache", got)
	}
	lister := factory.Core().V1().ConfigMaps().Lister()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	if o, err := lister.ConfigMaps("ns2").Get("b"); err != nil || o.Data["v"] != "1" {
		t.Errorf("lister Get(ns2/b) = %v, %v", o, err)
	}
	select {
	case <-watching:
	case <-ctx.Done():
		t.Fatal("the informer never watched")
	}
	cms := client.CoreV1().ConfigMaps("ns1")
	if _, err := cms.Create(ctx, cm("ns1", "z", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the lister to see ns1/z", func() bool {
		o, err := lister.ConfigMaps("ns1").Get("z")
		return err == nil && o.Data["v"] == "1"
	})
	if _, err := cms.Update(ctx, cm("ns1", "z", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the lister to see ns1/z updated", func() bool {
		o, err := lister.ConfigMaps("ns1").Get("z")
		return err == nil && o.Data["v"] == "2"
	})
	if err := cms.Delete(ctx, "z", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the lister to lose ns1/z", func() bool {
		_, err := lister.ConfigMaps("ns1").Get("z")
		return apierrors.IsNotFound(err)
	})
	objs, err := lister.List(labels.Everything())
	if err != nil || len(objs) != 2 {
		t.Errorf("lister List = %d objects, %v; want 2", len(objs), err)
	}
}

// --- 10. watch errors, IsStopped, LastSyncResourceVersion ---

func testWatchErrorHandler(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, cm("ns", "a", "1"))
	lw := newHookedLW(c, wl)
	inf := im.new(lw, cmExample, 0, nsIndexers)
	injected := errors.New("conformance: injected watch failure")
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	// Both setters, one per list mode.
	if wl {
		if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if ctx == nil || r == nil {
				report(fmt.Errorf("handler called with ctx %v, reflector %v", ctx, r))
			}
			report(err)
		}); err != nil {
			t.Fatalf("SetWatchErrorHandlerWithContext before Run: %v", err)
		}
	} else {
		if err := inf.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
			if r == nil {
				report(errors.New("handler called without a reflector"))
			}
			report(err)
		}); err != nil {
			t.Fatalf("SetWatchErrorHandler before Run: %v", err)
		}
	}
	if inf.IsStopped() {
		t.Error("IsStopped before Run")
	}
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	stop := testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	if inf.IsStopped() {
		t.Error("IsStopped while running")
	}
	// The reflector records the list's resourceVersion after handing the
	// list to the store, so the informer may report synced a moment before
	// (in client-go too; the window is wider with shards applying in parallel).
	var rv0 uint64
	testkit.Eventually(t, "LastSyncResourceVersion after sync", func() bool {
		rv, err := strconv.ParseUint(inf.LastSyncResourceVersion(), 10, 64)
		rv0 = rv
		return err == nil && rv > 0
	})
	if err := inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err == nil {
		t.Error("SetWatchErrorHandler after Run succeeded")
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}); err == nil {
		t.Error("SetWatchErrorHandlerWithContext after Run succeeded")
	}

	// The resourceVersion moves on with the watch.
	mustCreate(t, c, cm("ns", "b", "1"))
	r.WaitEvent(t, "ns/b", "add:1")
	obj, _, _ := inf.GetIndexer().GetByKey("ns/b")
	rvB := rvNum(t, obj)
	if rvB <= rv0 {
		t.Errorf("new object's resourceVersion %d is not after the first sync's %d", rvB, rv0)
	}
	testkit.Eventually(t, "LastSyncResourceVersion to reach the new object's", func() bool {
		rv, err := strconv.ParseUint(inf.LastSyncResourceVersion(), 10, 64)
		return err == nil && rv >= rvB
	})

	// Without WatchList the reflector re-watches and reports the failure.
	// With WatchList it restarts a WatchList stream, falls back to LIST on
	// failure without reporting it, then watches: fail both.
	fails := 1
	if wl {
		fails = 2
	}
	lw.failWatches(injected, fails)
	c.DropWatches()
	timeout := time.After(guard)
	for seen := false; !seen; {
		select {
		case err := <-errs:
			seen = errors.Is(err, injected)
			if !seen && strings.Contains(err.Error(), "handler called") {
				t.Error(err)
			}
		case <-timeout:
			t.Fatal("the watch error handler was not called with the watch's error")
		}
	}
	if !wl {
		// The informer recovers (after the reflector loop's backoff; with
		// WatchList the backoff has grown and the wait would be long).
		mustCreate(t, c, cm("ns", "c", "1"))
		r.WaitEvent(t, "ns/c", "add:1")
	}
	stop()
	if !inf.IsStopped() {
		t.Error("IsStopped is false after RunWithContext returned")
	}
}

// --- 11. Run twice, stop ---

func testRunTwiceAndStop(t *testing.T, im impl, _ bool) {
	c := newFake(false)
	mustCreate(t, c, cm("ns", "a", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	stop := testkit.RunSynced(t, inf)

	// A second Run returns at once and disturbs nothing.
	second := make(chan struct{})
	go func() {
		defer close(second)
		inf.Run(make(chan struct{}))
	}()
	waitClosed(t, "a second Run to return", second)
	mustCreate(t, c, cm("ns", "b", "1"))
	r.WaitEvent(t, "ns/b", "add:1")

	stop()
	if !inf.IsStopped() {
		t.Error("IsStopped is false after stop")
	}
	if !inf.HasSynced() {
		t.Error("HasSynced turned false after stop")
	}
	if _, err := inf.AddEventHandler(newEventLog(true)); err == nil {
		t.Error("AddEventHandler after stop succeeded")
	}
	if _, err := inf.AddEventHandlerWithResyncPeriod(newEventLog(true), time.Minute); err == nil {
		t.Error("AddEventHandlerWithResyncPeriod after stop succeeded")
	}
	if err := inf.AddIndexers(cache.Indexers{"value": valueIndex}); err == nil {
		t.Error("AddIndexers after stop succeeded")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("RemoveEventHandler after stop: %v", err)
	}
	if obj, ok, err := inf.GetIndexer().GetByKey("ns/b"); err != nil || !ok || valueOf(obj) != "1" {
		t.Errorf("cache after stop: GetByKey(ns/b) = %v, %v, %v", obj, ok, err)
	}
	// An informer never starts again.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	third := make(chan struct{})
	go func() {
		defer close(third)
		inf.RunWithContext(ctx)
	}()
	waitClosed(t, "Run after stop to return", third)
}

// --- slow handlers ---

// SlowHandlerGetsEveryEvent: a handler slower than the writes (2 ms per
// update, 2000 updates) receives every update, in order, as client-go
// delivers them: under the default policy its backlog stays within the budget,
// whether it waits in the ring or, with rings of two, in the overflow. Only
// the configurations that merge by design (exact=false) may deliver fewer, and
// must still end at every key's final state.
func testSlowHandlerGetsEveryEvent(t *testing.T, im impl, _ bool) {
	const keys, rounds = 10, 200
	c := newFake(false)
	for i := range keys {
		mustCreate(t, c, cm("ns", fmt.Sprint("k", i), "0"))
	}
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	r := newEventLog(im.exact)
	r.Before = func(e event) {
		if e.Kind == "update" {
			time.Sleep(2 * time.Millisecond)
		}
	}
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.RunSynced(t, inf)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	for round := 1; round <= rounds; round++ {
		for i := range keys {
			mustUpdate(t, c, cm("ns", fmt.Sprint("k", i), strconv.Itoa(round)))
		}
	}
	for i := range keys {
		r.WaitKnown(t, fmt.Sprint("ns/k", i), strconv.Itoa(rounds))
	}
	r.CheckConsistent(t)
	if !im.exact {
		return
	}
	if got := r.Count("update"); got != keys*rounds {
		t.Errorf("UpdateFunc called %d times, want %d", got, keys*rounds)
	}
	want := []string{"add:0/initial"}
	for round := 1; round <= rounds; round++ {
		want = append(want, fmt.Sprintf("update:%d->%d", round-1, round))
	}
	for i := range keys {
		if got := r.Seq(fmt.Sprint("ns/k", i)); !slices.Equal(got, want) {
			t.Errorf("ns/k%d: %d events, want the %d written in order; got %v", i, len(got), len(want), got)
		}
	}
}
