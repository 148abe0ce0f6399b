package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shardinformer/shardinformer/index"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// stalled is a handler that blocks in its first call until released.
type stalled struct {
	entered     chan struct{}
	release     chan struct{}
	once        sync.Once
	releaseOnce sync.Once
	rec         *testkit.Recorder
}

// unblock releases the handler; safe to call more than once.
func (s *stalled) unblock() { s.releaseOnce.Do(func() { close(s.release) }) }

// runStalled runs inf and makes sure, even when the test fails, that the
// stalled handler is released before the informer is stopped (cleanups run
// last-in first-out).
func runStalled(t *testing.T, inf *Informer, s *stalled) {
	testkit.RunSynced(t, inf)
	t.Cleanup(s.unblock)
}

func newStalled() *stalled {
	return &stalled{entered: make(chan struct{}), release: make(chan struct{}), rec: newRecorder()}
}

func (s *stalled) wait() {
	s.once.Do(func() { close(s.entered) })
	<-s.release
}
func (s *stalled) OnAdd(obj any, init bool) { s.wait(); s.rec.OnAdd(obj, init) }
func (s *stalled) OnUpdate(old, obj any)    { s.wait(); s.rec.OnUpdate(old, obj) }
func (s *stalled) OnDelete(obj any)         { s.wait(); s.rec.OnDelete(obj) }

// A stalled handler under Coalesce neither holds up another handler nor
// keeps more than one waiting notification per key, and once released it
// converges to the final state of every key.
func TestStalledHandlerCoalesceIsBoundedAndIsolated(t *testing.T) {
	const keys, rounds = 20, 50
	c := newCluster(false)
	for _, n := range names(keys) {
		if _, err := c.Create(configMap("ns", n, "0")); err != nil {
			t.Fatal(err)
		}
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(2), WithRingCapacity(4), WithFullRingPolicy(Coalesce))
	stall, normal := newStalled(), newRecorder()
	if _, err := inf.AddEventHandler(stall); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(normal); err != nil {
		t.Fatal(err)
	}
	runStalled(t, inf, stall) // the informer syncs even though one handler is stuck
	<-stall.entered

	for r := 1; r <= rounds; r++ {
		for _, n := range names(keys) {
			if _, err := c.Update(configMap("ns", n, fmt.Sprint(r))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The normal handler reaches the final state of every key while the other
	// one is stuck (it may itself be coalesced: its ring holds only 4).
	final := fmt.Sprint(rounds)
	converged := func(r *testkit.Recorder) func() bool {
		return func() bool {
			for _, n := range names(keys) {
				ev := r.Seq("ns/" + n)
				last := ""
				if len(ev) > 0 {
					last = ev[len(ev)-1]
				}
				if !strings.HasSuffix(last, ">"+final) && last != "add:"+final && last != "add:"+final+"/initial" {
					return false
				}
			}
			return true
		}
	}
	testkit.Eventually(t, "the normal handler to see the final state", converged(normal))

	// Bound: at most one ring's worth per shard plus one overflow entry per key.
	st := inf.Stats()
	for _, l := range st.Listeners {
		if l.InOverflow > keys {
			t.Errorf("%s: %d notifications in overflow, more than the %d keys", l.Name, l.InOverflow, keys)
		}
		if l.InRing > 2*4 {
			t.Errorf("%s: %d notifications in rings, more than 2 shards × capacity 4", l.Name, l.InRing)
		}
	}

	stall.unblock()
	testkit.Eventually(t, "the stalled handler to converge", converged(stall.rec))
	if got := stall.rec.Count(); got >= keys*(rounds+1) {
		t.Errorf("stalled handler got %d notifications; coalescing should have merged most of %d", got, keys*(rounds+1))
	}
}

// Under Block a stalled handler holds up its shard (backpressure), and every
// notification is delivered once it is released.
func TestStalledHandlerBlockDeliversEverything(t *testing.T) {
	const keys, rounds = 10, 20
	c := newCluster(false)
	for _, n := range names(keys) {
		if _, err := c.Create(configMap("ns", n, "0")); err != nil {
			t.Fatal(err)
		}
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(1), WithRingCapacity(2), WithFullRingPolicy(Block))
	stall, normal := newStalled(), newRecorder()
	inf.AddEventHandler(stall)
	inf.AddEventHandler(normal)
	for r := 1; r <= rounds; r++ {
		for _, n := range names(keys) {
			c.Set(configMap("ns", n, fmt.Sprint(r))) // applied by the initial list
		}
	}
	// With one shard and rings of 2, the normal handler cannot get far ahead
	// of the stuck one: the shard waits.
	ctxDone := make(chan struct{})
	go func() {
		<-stall.entered
		if n := normal.Count(); n > keys {
			t.Errorf("normal handler got %d notifications while the shard should be blocked", n)
		}
		stall.unblock()
		close(ctxDone)
	}()
	runStalled(t, inf, stall)
	<-ctxDone
	testkit.Eventually(t, "everything delivered", func() bool { return stall.rec.Count() == keys && normal.Count() == keys })
}

// Under Grow nothing is merged: a released stalled handler sees every event.
func TestStalledHandlerGrowKeepsEveryEvent(t *testing.T) {
	const keys, rounds = 10, 30
	c := newCluster(false)
	for _, n := range names(keys) {
		c.Create(configMap("ns", n, "0"))
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(2), WithRingCapacity(2), WithFullRingPolicy(Grow))
	stall := newStalled()
	inf.AddEventHandler(stall)
	runStalled(t, inf, stall)
	<-stall.entered
	for r := 1; r <= rounds; r++ {
		for _, n := range names(keys) {
			c.Update(configMap("ns", n, fmt.Sprint(r)))
		}
	}
	testkit.Eventually(t, "overflow to hold the backlog", func() bool {
		ov := 0
		for _, l := range inf.Stats().Listeners {
			ov += l.InOverflow
		}
		return ov > keys // more than one per key: nothing merged
	})
	stall.unblock()
	testkit.Eventually(t, "every event delivered", func() bool { return stall.rec.Count() == keys*(rounds+1) })
}

type droppedCounter struct {
	NopObserver
	mu   sync.Mutex
	errs []error
	pans atomic.Int64
}

func (d *droppedCounter) Dropped(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
}
func (d *droppedCounter) HandlerPanicked(string, string, any) { d.pans.Add(1) }

// A failing index function does not lose the object: it is cached and
// delivered, left out of that index only, and the error is reported.
func TestFailingIndexFunctionKeepsObject(t *testing.T) {
	c := newCluster(false)
	c.Create(configMap("ns", "good", "1"))
	c.Create(configMap("ns", "bad", "1"))
	obs := &droppedCounter{}
	byValue := func(obj any) ([]string, error) {
		cm := obj.(*corev1.ConfigMap)
		if cm.Name == "bad" {
			return nil, errors.New("cannot index")
		}
		return []string{cm.Data["v"]}, nil
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{"byValue": byValue}, WithObserver(obs))
	rec := newRecorder()
	inf.AddEventHandler(rec)
	testkit.RunSynced(t, inf)
	testkit.Eventually(t, "both adds", func() bool { return rec.Count() == 2 })
	if _, ok, _ := inf.GetIndexer().GetByKey("ns/bad"); !ok {
		t.Fatal("object with a failing index function is not cached")
	}
	objs, err := inf.GetIndexer().ByIndex("byValue", "1")
	if err != nil || len(objs) != 1 || keyOf(objs[0]) != "ns/good" {
		t.Errorf("ByIndex = %v, %v; want only ns/good", objs, err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.errs) != 1 || !errors.Is(obs.errs[0], index.ErrIndexFunc) {
		t.Errorf("reported errors = %v, want one index.ErrIndexFunc", obs.errs)
	}
}

// A panicking handler is recovered and counted; it and the other handlers
// keep receiving later notifications.
func TestPanickingHandlerIsRecovered(t *testing.T) {
	c := newCluster(false)
	c.Create(configMap("ns", "a", "1"))
	obs := &droppedCounter{}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithObserver(obs))
	rec, other := newRecorder(), newRecorder()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { panic("boom") },
		UpdateFunc: func(old, obj any) { rec.OnUpdate(old, obj) },
	})
	inf.AddEventHandler(other)
	testkit.RunSynced(t, inf)
	c.Update(configMap("ns", "a", "2"))
	testkit.Eventually(t, "the update after the panic", func() bool { return rec.Count() == 1 && other.Count() == 2 })
	if obs.pans.Load() != 1 {
		t.Errorf("panics counted = %d, want 1", obs.pans.Load())
	}
}

// TestWritesAfterStopAreSilent checks that the reflector's writes after the
// informer stopped (under Block it may be waiting for space at that moment)
// return no error, so it logs nothing, as with client-go's informer.
func TestWritesAfterStopAreSilent(t *testing.T) {
	c := newCluster(false)
	inf, err := New(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithFullRingPolicy(Block))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	cancel()
	<-done
	st := &store{inf: inf}
	cm := configMap("ns", "a", "1")
	for name, err := range map[string]error{
		"Add": st.Add(cm), "Update": st.Update(cm), "Delete": st.Delete(cm),
		"Replace": st.Replace([]any{cm}, "9"),
	} {
		if err != nil {
			t.Errorf("%s after stop: %v, want nil", name, err)
		}
	}
}
