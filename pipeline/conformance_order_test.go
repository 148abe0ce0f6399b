package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/shards"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// --- 12. cross-key order, LastStoreSyncResourceVersion, IsStopped ---

// namesOnShards returns n names in namespace ns whose keys fall on n
// different shards of four (the shards the suite's configurations use), so
// that every write goes to its own shard whatever the configuration.
func namesOnShards(ns string, n int) []string {
	r, err := shards.New(4)
	if err != nil {
		panic(err)
	}
	var out []string
	used := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("o-%d", i)
		if s := r.Of(ns + "/" + name); !used[s] {
			used[s] = true
			out = append(out, name)
		}
	}
	return out
}

// CrossShardOrder: client-go's informer applies and delivers the stream in
// order, so a handler that has seen an object finds every object written
// before it in the cache (listers, read-your-writes clients). Here A is
// written before B, on another shard, and indexing A is slow: it waits until
// every handler has seen B, or 300 ms. client-go, which indexes A before it
// processes B, waits the 300 ms; so must we, instead of delivering B while
// A's shard is still indexing A. A third object on a third shard comes first
// in the same burst of the watch, so that A and B reach the drain
// goroutines, not the reflector goroutine's processing of idle shards (which
// would hold B back behind A for any informer). Checked for a handler
// registered through client-go's interface and, for ours, a parallel one.
// WithRelaxedOrder gives this up (doc.go): there B arrives first.
func testCrossShardOrder(t *testing.T, im impl, _ bool) {
	const ns = "order"
	names := namesOnShards(ns, 3)
	first, a, b := names[0], names[1], names[2]
	c := newFake(false)
	lw := testkit.NewLW(c.ListerWatcher())
	release := make(chan struct{})
	slow := func(obj any) ([]string, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == a {
			select {
			case <-release:
			case <-time.After(300 * time.Millisecond):
			}
		}
		return nil, nil
	}
	inf := im.new(lw, cmExample, 0, cache.Indexers{"slow": slow})
	type seen struct {
		handler string
		foundA  bool
	}
	results := make(chan seen, 2)
	handler := func(name string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if m, _ := meta.Accessor(obj); m.GetName() == b {
				_, ok, err := inf.GetIndexer().GetByKey(ns + "/" + a)
				if err != nil {
					t.Error(err)
				}
				results <- seen{name, ok}
			}
		}}
	}
	regs := []cache.ResourceEventHandlerRegistration{mustRegister(t)(inf.AddEventHandler(handler("serial")))}
	if im.ours {
		regs = append(regs, mustRegister(t)(inf.(*pipeline.Informer).AddParallelEventHandler(handler("parallel"), 3)))
	}
	testkit.RunSynced(t, inf, regs...)

	lw.Disconnect() // the three writes reach the reflector in one burst
	mustCreate(t, c, cm(ns, first, "1"), cm(ns, a, "1"), cm(ns, b, "1"))
	lw.Reconnect()
	defer close(release) // once every handler has looked: indexing A ends early only for an informer that delivers B first
	for range regs {
		select {
		case r := <-results:
			switch {
			case im.relaxed && r.foundA:
				t.Errorf("%s handler: found %s/%s in the cache on seeing %s/%s: without cross-key order it is still being indexed", r.handler, ns, a, ns, b)
			case !im.relaxed && !r.foundA:
				t.Errorf("%s handler: saw %s/%s before the cache held %s/%s, written before it", r.handler, ns, b, ns, a)
			}
		case <-time.After(guard):
			t.Fatalf("a handler did not see %s/%s", ns, b)
		}
	}
}

// LastStoreSyncResourceVersion, as client-go's store keeps it (client-go
// 1.36+): the initial list's resourceVersion once synced, then, once a
// handler has received a watch event, that event's object's (create, update,
// delete), a bookmark's, and a relist's.
func testLastStoreSyncResourceVersion(t *testing.T, im impl, wl bool) {
	c := newFake(wl)
	mustCreate(t, c, cm("ns", "a", "1"))
	inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
	if rv := inf.GetIndexer().LastStoreSyncResourceVersion(); rv != "" {
		t.Errorf("before Run: %q, want \"\"", rv)
	}
	r := newEventLog(im.exact)
	reg := mustRegister(t)(inf.AddEventHandler(r))
	testkit.Run(t, inf)
	rvIs := func(what, want string) {
		t.Helper()
		got := inf.GetIndexer().LastStoreSyncResourceVersion()
		if im.relaxed && got != want {
			// Delivery is not gated on the store watermark: a handler may
			// see a relist's object while other shards still apply the
			// relist, and the watermark catches up after.
			testkit.Eventually(t, what, func() bool {
				got = inf.GetIndexer().LastStoreSyncResourceVersion()
				return got == want
			})
		}
		if got != want {
			t.Errorf("%s: LastStoreSyncResourceVersion = %q, want %q", what, got, want)
		}
	}
	server := func() string { return fmt.Sprint(c.ResourceVersion()) }
	// The moment HasSynced turns true, the store holds the list's version
	// (kube-controller-manager's staleness integration test reads it so).
	testkit.Eventually(t, "HasSynced", func() bool { return inf.HasSynced() })
	rvIs("as HasSynced turns true", server())
	testkit.WaitSynced(t, reg.HasSynced)
	rvIs("after the initial list", server())
	if got := inf.GetStore().LastStoreSyncResourceVersion(); got != server() {
		t.Errorf("GetStore().LastStoreSyncResourceVersion = %q, want %q", got, server())
	}

	last := func(key string) any {
		evs := r.Events(key)
		return evs[len(evs)-1].Obj
	}
	mustCreate(t, c, cm("ns", "b", "1"))
	r.WaitEvent(t, "ns/b", "add:1")
	rvIs("after an add", rvOf(last("ns/b")))
	mustUpdate(t, c, cm("ns", "a", "2"))
	r.WaitEvent(t, "ns/a", "update:1->2")
	rvIs("after an update", rvOf(last("ns/a")))
	mustDelete(t, c, "ns/b")
	r.WaitEvent(t, "ns/b", "delete:1")
	if rvOf(last("ns/b")) != server() {
		t.Fatalf("the deletion's object has resourceVersion %s, want the server's %s", rvOf(last("ns/b")), server())
	}
	rvIs("after a delete", server())

	// A bookmark at a resourceVersion no event has carried.
	c.Set(cm("scratch", "s", ""))
	c.Remove("scratch/s")
	c.Bookmark()
	testkit.Eventually(t, "a bookmark's resourceVersion", func() bool {
		return inf.GetIndexer().LastStoreSyncResourceVersion() == server()
	})

	// A relist's, after a change no watch reports.
	c.Set(cm("ns", "c", "1"))
	forceRelist(t, c)
	r.WaitEvent(t, "ns/c", "add:1")
	rvIs("after a relist", server())
}

// IsStoppedTiming: client-go's informer reports stopped once its controller
// has returned, that is once nothing writes the cache any more, and before
// the handlers' goroutines have exited. In a synctest bubble, after the
// context is cancelled and every goroutine has blocked: while an index
// function holds the cache's writer, the informer is not stopped; while a
// handler is held, it is, and RunWithContext has not returned.
func testIsStoppedTiming(t *testing.T, im impl, _ bool) {
	t.Run("writer held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newFake(false)
			mustCreate(t, c, cm("ns", "a", "1"))
			l := newLatch(t)
			inf := im.new(c.ListerWatcher(), cmExample, 0, cache.Indexers{"gate": gateIndex(l)})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				inf.RunWithContext(ctx)
			}()
			synctest.Wait()
			if !inf.HasSynced() {
				t.Fatal("not synced")
			}
			mustCreate(t, c, withLabels(cm("ns", "held", "1"), "gate", "hold"))
			synctest.Wait()
			l.waitEntered(t, "the index function to hold the writer")
			cancel()
			synctest.Wait()
			if inf.IsStopped() {
				t.Error("IsStopped is true while the informer is still writing the cache (an index function runs)")
			}
			l.Release()
			<-done
			if !inf.IsStopped() {
				t.Error("IsStopped is false after RunWithContext returned")
			}
		})
	})
	t.Run("handler held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newFake(false)
			mustCreate(t, c, cm("ns", "a", "1"))
			l := newLatch(t)
			inf := im.new(c.ListerWatcher(), cmExample, 0, nsIndexers)
			mustRegister(t)(inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				if m, _ := meta.Accessor(obj); m.GetName() == "held" {
					l.Hold()
				}
			}}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				inf.RunWithContext(ctx)
			}()
			synctest.Wait()
			mustCreate(t, c, cm("ns", "held", "1"))
			synctest.Wait()
			l.waitEntered(t, "the handler to be held")
			cancel()
			synctest.Wait()
			if !inf.IsStopped() {
				t.Error("IsStopped is false after the cache's writer has stopped (only a handler runs)")
			}
			select {
			case <-done:
				t.Error("RunWithContext returned while a handler call was under way")
			default:
			}
			l.Release()
			<-done
		})
	})
}
