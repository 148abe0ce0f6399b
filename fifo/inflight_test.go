package fifo_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
	"github.com/shardinformer/shardinformer/internal/doorbell"
)

// settle pops, applies and finishes everything queued.
func settle(q *fifo.Queue, known *mapKnown) {
	for {
		items := popAll(q)
		if len(items) == 0 {
			q.Done(nil)
			return
		}
		for _, it := range items {
			known.apply(it)
		}
		q.Done(items)
	}
}

// The in-flight tests below pop a key and, before Done, write to the queue:
// the situation DeltaFIFO never has, because it holds its lock while its
// consumer processes. The expected outcome is what DeltaFIFO would produce had
// the in-flight deltas been applied before the write.

func TestInFlightReplaceQueuesOneTombstoneIfKeyStillExists(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			known := newMapKnown()
			q := newQueue(t, fifo.Config{Known: known})
			a1, b1 := configMap("ns/a", 1), configMap("ns/b", 2)
			mustNil(t, "Add", q.Add("ns/a", a1))
			mustNil(t, "Add", q.Add("ns/b", b1))
			flying := q.Pop(nil, 1) // ns/a in flight with [Added a1]
			if applied {
				known.apply(flying[0])
			}
			mustNil(t, "Replace", q.Replace([]fifo.Keyed{{Key: "ns/b", Object: b1}}))
			q.Done(flying)

			got := describeItems(popAll(q))
			want := "ns/b[Added:ns/b@2 Replaced:ns/b@2] initial=false; " +
				"ns/a[Deleted:tombstone{ns/a ns/a@1}] initial=false"
			if got != want {
				t.Errorf("after Replace without in-flight ns/a:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestInFlightReplaceQueuesNoTombstoneIfKeyIsGoingAway(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied bool
		prepare func(t *testing.T, q *fifo.Queue) // leaves ns/a queued, then it is popped
	}{
		{"deleted", false, func(t *testing.T, q *fifo.Queue) { mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 2))) }},
		{"deleted/applied", true, func(t *testing.T, q *fifo.Queue) { mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 2))) }},
		{"tombstoned", false, func(t *testing.T, q *fifo.Queue) {
			mustNil(t, "Delete", q.Delete("ns/a", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: configMap("ns/a", 1)}))
		}},
		{"updated-then-deleted", false, func(t *testing.T, q *fifo.Queue) {
			mustNil(t, "Update", q.Update("ns/a", configMap("ns/a", 2)))
			mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 3)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := newMapKnown()
			q := newQueue(t, fifo.Config{Known: known})
			mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
			settle(q, known) // ns/a is known
			tc.prepare(t, q)
			flying := q.Pop(nil, 1)
			if len(flying) != 1 || flying[0].Key != "ns/a" {
				t.Fatalf("Pop = %s, want ns/a", describeItems(flying))
			}
			if tc.applied {
				known.apply(flying[0])
			}
			mustNil(t, "Replace", q.Replace(nil))
			if items := popAll(q); len(items) != 0 {
				t.Errorf("Replace(nil) with ns/a in flight as %s queued %s, want nothing",
					describeDeltas(flying[0].Deltas), describeItems(items))
			}
			q.Done(flying)
		})
	}
}

func TestInFlightReplaceWithQueuedDeleteAddsNoTombstone(t *testing.T) {
	known := newMapKnown()
	q := newQueue(t, fifo.Config{Known: known})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	flying := q.Pop(nil, 1) // [Added a1] in flight
	mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 2)))
	mustNil(t, "Replace", q.Replace(nil))
	known.apply(flying[0])
	q.Done(flying)
	if got, want := describeItems(popAll(q)), "ns/a[Deleted:ns/a@2] initial=false"; got != want {
		t.Errorf("queued:\n got %s\nwant %s", got, want)
	}
}

func TestInFlightResyncSkipsKey(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			known := newMapKnown()
			q := newQueue(t, fifo.Config{Known: known})
			mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
			mustNil(t, "Add", q.Add("ns/b", configMap("ns/b", 2)))
			settle(q, known)
			mustNil(t, "Update", q.Update("ns/a", configMap("ns/a", 3)))
			flying := q.Pop(nil, 1)
			if applied {
				known.apply(flying[0])
			}
			mustNil(t, "Resync", q.Resync())
			q.Done(flying)
			if got, want := describeItems(popAll(q)), "ns/b[Sync:ns/b@2] initial=false"; got != want {
				t.Errorf("Resync with ns/a in flight queued:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestInFlightDelete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		write   func(q *fifo.Queue) error // queues ns/a, which is then popped
		known   bool                      // ns/a is known before the write
		applied bool                      // the in-flight deltas are applied before Delete
		want    string                    // queued after Delete
	}{
		{"added", func(q *fifo.Queue) error { return q.Add("ns/a", configMap("ns/a", 1)) }, false, false,
			"ns/a[Deleted:ns/a@9] initial=false"},
		{"added/applied", func(q *fifo.Queue) error { return q.Add("ns/a", configMap("ns/a", 1)) }, false, true,
			"ns/a[Deleted:ns/a@9] initial=false"},
		{"updated", func(q *fifo.Queue) error { return q.Update("ns/a", configMap("ns/a", 2)) }, true, false,
			"ns/a[Deleted:ns/a@9] initial=false"},
		{"deleted/applied", func(q *fifo.Queue) error { return q.Delete("ns/a", configMap("ns/a", 2)) }, true, true, ""},
		// The in-flight deletion is not applied yet, so the partition still
		// holds ns/a; once it is applied the key is gone, so a second delete
		// must be dropped all the same.
		{"deleted/not-applied", func(q *fifo.Queue) error { return q.Delete("ns/a", configMap("ns/a", 2)) }, true, false, ""},
		{"tombstoned/applied", func(q *fifo.Queue) error {
			return q.Delete("ns/a", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: configMap("ns/a", 1)})
		}, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := newMapKnown()
			q := newQueue(t, fifo.Config{Known: known})
			if tc.known {
				mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
				settle(q, known)
			}
			mustNil(t, "write", tc.write(q))
			flying := q.Pop(nil, 1)
			if tc.applied {
				known.apply(flying[0])
			}
			mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 9)))
			if !tc.applied {
				known.apply(flying[0])
			}
			q.Done(flying)
			if got := describeItems(popAll(q)); got != tc.want {
				t.Errorf("Delete with ns/a in flight as %s queued:\n got %q\nwant %q",
					describeDeltas(flying[0].Deltas), got, tc.want)
			}
		})
	}
}

// consumerView models what an informer's handlers see: client-go's
// processDeltas applied to a map. It records broken expectations instead of
// failing, so that it can run on any goroutine.
type consumerView struct {
	objs map[string]any
	errs []string
}

func (v *consumerView) apply(it fifo.Item) {
	for _, d := range it.Deltas {
		old, exists := v.objs[it.Key]
		switch d.Type {
		case cache.Deleted:
			if !exists {
				v.errs = append(v.errs, fmt.Sprintf("second delete notification for %s: %s", it.Key, describeDeltas(it.Deltas)))
			}
			if tomb, ok := d.Object.(cache.DeletedFinalStateUnknown); ok && exists && tomb.Obj != old {
				v.errs = append(v.errs, fmt.Sprintf("tombstone for %s carries %s, the cache holds %s",
					it.Key, describeObj(tomb.Obj), describeObj(old)))
			}
			delete(v.objs, it.Key)
		case cache.Sync:
			// A resync repeats the object the cache holds, never a stale one.
			if !exists || d.Object != old {
				v.errs = append(v.errs, fmt.Sprintf("Sync for %s carries %s, the cache holds %s",
					it.Key, describeObj(d.Object), describeObj(old)))
			}
			v.objs[it.Key] = d.Object
		default:
			v.objs[it.Key] = d.Object
		}
	}
}

// producer writes random changes to a queue and keeps the state the source
// of truth (the API server) has after each of them.
type producer struct {
	rng    *rand.Rand
	q      *fifo.Queue
	rv     int
	server map[string]*corev1.ConfigMap
	keys   []string
	log    []string
}

func newProducer(seed uint64, q *fifo.Queue, nkeys int) *producer {
	p := &producer{rng: rand.New(rand.NewPCG(seed, 0xf1f0)), q: q, server: map[string]*corev1.ConfigMap{}}
	for i := range nkeys {
		p.keys = append(p.keys, fmt.Sprintf("ns/k%d", i))
	}
	return p
}

func (p *producer) obj(key string) *corev1.ConfigMap {
	p.rv++
	return configMap(key, p.rv)
}

// step makes one random write, as a reflector would relay it.
func (p *producer) step() error {
	key := p.keys[p.rng.IntN(len(p.keys))]
	cur, exists := p.server[key]
	switch r := p.rng.IntN(100); {
	case r < 55:
		o := p.obj(key)
		p.server[key] = o
		p.log = append(p.log, "set "+describeObj(o))
		if exists {
			return p.q.Update(key, o)
		}
		return p.q.Add(key, o)
	case r < 75:
		// A delete of an absent key is a late duplicate and must be dropped.
		var o any = p.obj(key)
		if exists && p.rng.IntN(4) == 0 {
			o = cache.DeletedFinalStateUnknown{Key: key, Obj: cur}
		}
		delete(p.server, key)
		p.log = append(p.log, "delete "+describeObj(o))
		return p.q.Delete(key, o)
	case r < 85:
		// A relist after missed events: some keys vanished, appeared or changed.
		for _, k := range p.keys {
			switch p.rng.IntN(4) {
			case 0:
				delete(p.server, k)
			case 1:
				p.server[k] = p.obj(k)
			}
		}
		list := make([]fifo.Keyed, 0, len(p.server))
		for _, k := range slices.Sorted(maps.Keys(p.server)) {
			list = append(list, fifo.Keyed{Key: k, Object: p.server[k]})
		}
		p.rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		p.log = append(p.log, fmt.Sprintf("replace %d keys", len(list)))
		return p.q.Replace(list)
	default:
		p.log = append(p.log, "resync")
		return p.q.Resync()
	}
}

func checkConverged(server map[string]*corev1.ConfigMap, view *consumerView, known *mapKnown) error {
	var problems []string
	problems = append(problems, view.errs...)
	got := known.snapshot()
	for key, want := range server {
		if view.objs[key] != any(want) {
			problems = append(problems, fmt.Sprintf("%s: consumer has %s, source has %s", key, describeObj(view.objs[key]), describeObj(want)))
		}
		if got[key] != any(want) {
			problems = append(problems, fmt.Sprintf("%s: partition has %s, source has %s", key, describeObj(got[key]), describeObj(want)))
		}
	}
	for key, obj := range view.objs {
		if _, ok := server[key]; !ok {
			problems = append(problems, fmt.Sprintf("%s: consumer has %s, source has nothing", key, describeObj(obj)))
		}
	}
	for key, obj := range got {
		if _, ok := server[key]; !ok {
			problems = append(problems, fmt.Sprintf("%s: partition has %s, source has nothing", key, describeObj(obj)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// TestInFlightRandomInterleaving interleaves, on one goroutine and driven by a
// seeded random source, writes with every stage of a batch's flight: Pop of a
// random size, applying its items one by one, and Done. After draining, the
// consumer's view and the partition must equal the source of truth, and no
// key may get a second delete notification, a stale Sync or a tombstone that
// does not carry the object the cache holds.
func TestInFlightRandomInterleaving(t *testing.T) {
	for _, seed := range seeds(300) {
		if err := runInterleaving(seed, 200); err != nil {
			t.Fatalf("seed %d (rerun with -run=%s -fifo.seed=%d): %v", seed, t.Name(), seed, err)
		}
	}
}

func runInterleaving(seed uint64, steps int) error {
	known := newMapKnown()
	q, err := fifo.New(fifo.Config{Known: known})
	if err != nil {
		return err
	}
	p := newProducer(seed, q, 6)
	view := &consumerView{objs: map[string]any{}}
	var batch []fifo.Item
	applied := 0
	fail := func(err error) error {
		return fmt.Errorf("%v\nproducer log:\n  %s", err, strings.Join(p.log, "\n  "))
	}
	consume := func() {
		switch {
		case batch == nil:
			batch = q.Pop(nil, 1+p.rng.IntN(5))
			applied = 0
			p.log = append(p.log, fmt.Sprintf("  pop %s", describeItems(batch)))
		case applied < len(batch):
			known.apply(batch[applied])
			view.apply(batch[applied])
			applied++
		default:
			q.Done(batch)
			batch = nil
		}
	}
	for range steps {
		if p.rng.IntN(2) == 0 {
			if err := p.step(); err != nil {
				return fail(err)
			}
		} else {
			consume()
		}
		if len(view.errs) > 0 {
			return fail(fmt.Errorf("%s", strings.Join(view.errs, "\n")))
		}
	}
	for batch != nil || q.Len() > 0 {
		consume()
	}
	if err := checkConverged(p.server, view, known); err != nil {
		return fail(err)
	}
	return nil
}

// TestConcurrentProducerConsumer runs a producer and a consumer on their own
// goroutines (for the race detector and real interleavings). The producer ends
// with a mark; the consumer stops when Done reports it, and must then have
// converged to the producer's final state.
func TestConcurrentProducerConsumer(t *testing.T) {
	for _, seed := range seeds(20) {
		known := newMapKnown()
		q := newQueue(t, fifo.Config{Known: known})
		p := newProducer(seed, q, 16)
		view := &consumerView{objs: map[string]any{}}
		bell := doorbell.New() // the consumer parks on it, the producer rings it after each write
		// Not a timing assertion: it only turns a lost wake-up into a failure.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var wg sync.WaitGroup
		var lastSeq uint64
		reached := false
		wg.Go(func() { // the consumer (the shard's drain goroutine)
			rng := rand.New(rand.NewPCG(seed, 1))
			var buf []fifo.Item
			for {
				buf = q.Pop(buf[:0], 1+rng.IntN(128))
				for _, it := range buf {
					known.apply(it)
					view.apply(it)
				}
				m, ok := q.Done(buf)
				if ok {
					if m.Seq <= lastSeq {
						view.errs = append(view.errs, fmt.Sprintf("mark %d after mark %d", m.Seq, lastSeq))
					}
					lastSeq = m.Seq
					if m.RV == "final" {
						reached = true
						return
					}
				}
				if len(buf) == 0 && !bell.Wait(ctx, q.Pending) {
					return
				}
			}
		})
		for i := range 2000 {
			if err := p.step(); err != nil {
				t.Fatalf("seed %d: write: %v", seed, err)
			}
			if i%100 == 99 {
				q.Mark(fifo.Mark{Seq: uint64(i), RV: fmt.Sprint(i)})
			}
			bell.Ring()
		}
		q.Mark(fifo.Mark{Seq: 1 << 40, RV: "final"})
		bell.Ring()
		wg.Wait()
		cancel()
		if !reached {
			t.Fatalf("seed %d: the consumer stopped before the final mark", seed)
		}
		if err := checkConverged(p.server, view, known); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
