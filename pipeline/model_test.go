package pipeline

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// The model test drives random creates, updates, deletes, silent changes
// revealed only by a relist (410 Gone after compaction), and dropped watches
// through the fake API server while an informer runs, then checks against the
// fake's final state (the reference model):
//
//   - the cache equals the model (keys and resourceVersions);
//   - for every handler and key, the notifications form a valid walk from
//     "absent" to the key's final state: add only when absent, update only when
//     present and its old object is the one the handler last saw, delete only
//     when present; and the version carried by the objects strictly increases
//     (no reordering, no state from the past), resyncs excepted;
//   - a handler registered with workers > 1 is never called concurrently for
//     one key.
//
// Every value written is a fresh number from one counter, so "newer" is
// "larger". client-go's informer runs through the same checker as a control.

type modelVariant struct {
	name string
	ours bool
	// What the run must show: overflow (every policy but Block), coalescing
	// episodes (Coalesce, Buffer with a tiny budget), or none (Buffer within
	// its budget, Grow: every notification delivered as produced). Whether
	// two notifications of one key meet in a coalesced overflow depends on
	// the relists the run happens to make; TestOutletOverflowKeepsValidWalks
	// merges deterministically.
	spills, episodes, exact bool
	new                     func(lw cache.ListerWatcher, o Observer) (cache.SharedIndexInformer, func(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error))
}

// overflowCounter counts overflow so the test can prove it exercised the
// full-ring paths.
type overflowCounter struct {
	NopObserver
	spilled, merged, episodes atomic.Int64
}

func (o *overflowCounter) Coalescing(_ string, active bool) {
	if active {
		o.episodes.Add(1)
	}
}

func (o *overflowCounter) Overflowed(_ string, n, merged int) {
	o.spilled.Add(int64(n))
	o.merged.Add(int64(merged))
}

func modelVariants() []modelVariant {
	vs := []modelVariant{{
		name: "impl=client-go",
		new: func(lw cache.ListerWatcher, _ Observer) (cache.SharedIndexInformer, func(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)) {
			inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
			return inf, inf.AddEventHandler
		},
	}}
	type policy struct {
		name                    string
		spills, episodes, exact bool
		opts                    []Option
	}
	var policies []policy
	for _, p := range FullRingPolicies() {
		policies = append(policies, policy{"policy=" + p.String(), p != Block, p == Coalesce, p != Coalesce, []Option{WithFullRingPolicy(p)}})
	}
	// Buffer with a budget of 2: episodes of coalescing start and end often.
	policies = append(policies, policy{"policy=buffer/budget=2", true, true, false, []Option{WithBacklogBudget(2)}})
	// The compact store, with a decoded-object cache of 2.
	policies = append(policies, policy{"policy=buffer/compact", true, false, true, []Option{WithCompactStore(compact.Config{Decoded: 2})}})
	for _, p := range policies {
		for _, n := range []int{1, 3} {
			vs = append(vs, modelVariant{
				name: fmt.Sprintf("impl=shardinformer/%s/shards=%d", p.name, n),
				ours: true, spills: p.spills, episodes: p.episodes, exact: p.exact,
				new: func(lw cache.ListerWatcher, o Observer) (cache.SharedIndexInformer, func(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)) {
					opts := append([]Option{WithShards(n), WithRingCapacity(4), WithObserver(o)}, p.opts...)
					inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}, opts...)
					return inf, func(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
						return inf.AddParallelEventHandler(h, 3)
					}
				},
			})
		}
	}
	return vs
}

func TestModel(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for _, v := range modelVariants() {
		for _, wl := range []bool{false, true} {
			for seed := range seeds {
				t.Run(fmt.Sprintf("%s/watchList=%v/seed=%d", v.name, wl, seed), func(t *testing.T) {
					t.Parallel()
					runModel(t, v, wl, uint64(seed))
				})
			}
		}
	}
}

func runModel(t *testing.T, v modelVariant, watchList bool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	c := fakeapi.New(fakeapi.Config{
		NewList:   func() runtime.Object { return &corev1.ConfigMapList{} },
		WatchList: watchList,
		DeepCopy:  true,
	})
	version := 0
	next := func() string { version++; return strconv.Itoa(version) }
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns-%d/cm-%02d", i%3, i)
	}
	cm := func(key, v string) *corev1.ConfigMap {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		return configMap(ns, name, v)
	}
	exists := map[string]bool{} // the test's own view of the server, kept in step with every write
	for _, k := range keys[:20] {
		must(t)(c.Create(cm(k, next())))
		exists[k] = true
	}

	counter := &overflowCounter{}
	inf, addParallel := v.new(c.ListerWatcher(), counter)
	fast, slow, par := newChecker("fast"), newChecker("slow"), newChecker("parallel")
	slow.delay = 200 * time.Microsecond
	for _, h := range []*checker{fast, slow} {
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := addParallel(par); err != nil {
		t.Fatal(err)
	}
	testkit.RunSynced(t, inf)
	late := newChecker("late") // added after sync: starts from the cache contents
	lateAt := 150
	// The slow handler is also held for a stretch of steps, until the fast one
	// has caught up with them, so that its rings fill up whatever the
	// machine's speed and every overflow path runs (not under Block).
	holdFrom, holdTo := 50, 250
	hold := make(chan struct{})
	defer func() {
		if slow.hold.Load() != nil {
			close(hold)
		}
	}()

	for step := range 400 {
		switch {
		case !v.spills: // Block: a held handler would hold up the fast one too
		case step == holdFrom:
			slow.hold.Store(&hold)
		case step == holdTo: // release once the informer has caught up with the writes
			model := c.Objects()
			testkit.Eventually(t, "the fast handler to catch up while the slow one is held", func() bool { return fast.matches(model) })
			slow.hold.Store(nil)
			close(hold)
		}
		if step == lateAt {
			if _, err := inf.AddEventHandler(late); err != nil {
				t.Fatal(err)
			}
		}
		k := keys[rng.IntN(len(keys))]
		switch r := rng.IntN(100); {
		case r < 30 && !exists[k]:
			must(t)(c.Create(cm(k, next())))
			exists[k] = true
		case r < 65 && exists[k]: // a burst, so slow handlers fall behind
			for range 1 + rng.IntN(8) {
				must(t)(c.Update(cm(k, next())))
			}
		case r < 80 && exists[k]:
			must(t)(c.Delete(k))
			delete(exists, k)
		case r < 87: // changes only a relist can reveal
			for range 1 + rng.IntN(3) {
				k := keys[rng.IntN(len(keys))]
				if exists[k] && rng.IntN(2) == 0 {
					c.Remove(k)
					delete(exists, k)
				} else {
					c.Set(cm(k, next()))
					exists[k] = true
				}
			}
			c.Compact()
			c.DropWatches()
		case r < 92:
			c.DropWatches() // resume from the last resourceVersion
		case r < 95:
			c.Bookmark()
		}
	}

	model := c.Objects()
	testkit.Eventually(t, "cache and handlers to converge", func() bool {
		if !cacheEquals(inf.GetStore(), model) {
			return false
		}
		for _, h := range []*checker{fast, slow, par, late} {
			if !h.matches(model) {
				return false
			}
		}
		return true
	})
	for _, h := range []*checker{fast, slow, par, late} {
		for _, e := range h.errors() {
			t.Errorf("%s: %s", h.name, e)
		}
	}
	// The run must have exercised the full-ring path it is meant to prove.
	if v.spills && counter.spilled.Load() == 0 {
		t.Errorf("no notification overflowed a ring: the overflow path was not exercised")
	}
	if v.episodes && counter.episodes.Load() == 0 {
		t.Errorf("no coalescing episode: the budget was never reached")
	}
	if v.exact && counter.merged.Load()+counter.episodes.Load() != 0 {
		t.Errorf("%d notifications merged in %d episodes; this policy delivers every one within its budget", counter.merged.Load(), counter.episodes.Load())
	}
	if t.Failed() {
		t.Logf("seed %d", seed)
	}
}

// must fails the test on a write error: must(t)(c.Create(obj)).
func must(t *testing.T) func(runtime.Object, error) {
	return func(_ runtime.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func cacheEquals(s cache.Store, model map[string]runtime.Object) bool {
	if len(s.ListKeys()) != len(model) {
		return false
	}
	for k, want := range model {
		got, ok, _ := s.GetByKey(k)
		if !ok || got.(*corev1.ConfigMap).ResourceVersion != want.(*corev1.ConfigMap).ResourceVersion {
			return false
		}
	}
	return true
}

// checker is a handler that validates every notification against what it
// saw before for the same key.
type checker struct {
	name  string
	delay time.Duration
	hold  atomic.Pointer[chan struct{}] // while set, calls wait until it is closed

	mu       sync.Mutex
	view     map[string]int // key -> version the handler last saw (absent: not in map)
	high     map[string]int // key -> highest version ever seen
	inflight map[string]bool
	errs     []string
}

func newChecker(name string) *checker {
	return &checker{name: name, view: map[string]int{}, high: map[string]int{}, inflight: map[string]bool{}}
}

func versionOf(obj any) (int, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return 0, false
		}
		obj = t.Obj
	}
	v, err := strconv.Atoi(obj.(*corev1.ConfigMap).Data["v"])
	if err != nil {
		panic(err)
	}
	return v, true
}

func (c *checker) failf(format string, args ...any) {
	if len(c.errs) < 20 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

// enter marks key in flight (detecting overlapping calls for one key) and
// returns a func to leave.
func (c *checker) enter(key string) func() {
	c.mu.Lock()
	if c.inflight[key] {
		c.failf("%s: concurrent calls for one key", key)
	}
	c.inflight[key] = true
	c.mu.Unlock()
	if h := c.hold.Load(); h != nil {
		<-*h
	}
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return func() {
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
	}
}

func (c *checker) OnAdd(obj any, _ bool) {
	key := keyOf(obj)
	defer c.enter(key)()
	v, _ := versionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.view[key]; ok {
		c.failf("%s: add of v%d while the handler holds v%d", key, v, old)
	}
	c.advance(key, v, false)
	c.view[key] = v
}

func (c *checker) OnUpdate(oldObj, obj any) {
	key := keyOf(obj)
	defer c.enter(key)()
	old, _ := versionOf(oldObj)
	v, _ := versionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.view[key]
	switch {
	case !ok:
		c.failf("%s: update v%d->v%d of a key the handler does not hold", key, old, v)
	case cur != old:
		c.failf("%s: update from v%d but the handler last saw v%d", key, old, cur)
	}
	c.advance(key, v, v == old)
	c.view[key] = v
}

func (c *checker) OnDelete(obj any) {
	key := keyOf(obj)
	defer c.enter(key)()
	v, known := versionOf(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.view[key]
	if !ok {
		c.failf("%s: delete of a key the handler does not hold", key)
	}
	if known && v < cur {
		c.failf("%s: delete carries v%d, older than v%d the handler saw", key, v, cur)
	}
	delete(c.view, key)
}

// advance checks that v moves forward for key.
// REQUIRES: c.mu held.
func (c *checker) advance(key string, v int, resync bool) {
	if hi := c.high[key]; v < hi || (v == hi && !resync && hi != 0) {
		c.failf("%s: v%d after v%d: went back in time", key, v, hi)
	}
	c.high[key] = max(c.high[key], v)
}

func (c *checker) matches(model map[string]runtime.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.view) != len(model) {
		return false
	}
	for k, obj := range model {
		v, _ := versionOf(obj)
		if c.view[k] != v {
			return false
		}
	}
	return true
}

func (c *checker) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}
