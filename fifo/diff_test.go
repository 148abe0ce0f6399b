package fifo_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
)

var seedFlag = flag.Uint64("fifo.seed", 0, "run the randomized fifo tests with this seed only")

// seeds returns the seeds a randomized test runs: -fifo.seed if set, else n
// consecutive seeds (fewer with -short).
func seeds(n int) []uint64 {
	if *seedFlag != 0 {
		return []uint64{*seedFlag}
	}
	if testing.Short() {
		n /= 10
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestDifferentialDeltaFIFO runs random sequences of writes and pops against
// client-go's DeltaFIFO (with EmitDeltaTypeReplaced) and against a Queue, each
// with a consumer that applies what it pops to its own store, and compares
// every popped key, its deltas, its initial-list flag, and HasSynced after
// every step. Odd seeds set the same transform on both queues.
func TestDifferentialDeltaFIFO(t *testing.T) {
	for _, seed := range seeds(400) {
		if err := runDifferential(seed, 150); err != nil {
			t.Fatalf("seed %d (rerun with -run=%s -fifo.seed=%d):\n%v", seed, t.Name(), seed, err)
		}
	}
}

var diffKeys = []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "other/a"}

type diffRun struct {
	rng    *rand.Rand
	rv     int
	latest map[string]*corev1.ConfigMap // the producer's newest object per key
	trace  []string

	ref      *cache.DeltaFIFO
	refStore cache.Store

	q     *fifo.Queue
	known *mapKnown
}

func (r *diffRun) fail(format string, args ...any) error {
	return fmt.Errorf("%s\nsteps:\n  %s", fmt.Sprintf(format, args...), strings.Join(r.trace, "\n  "))
}

func (r *diffRun) newObj(key string) *corev1.ConfigMap {
	r.rv++
	return configMap(key, r.rv)
}

func runDifferential(seed uint64, steps int) error {
	r := &diffRun{
		rng:      rand.New(rand.NewPCG(seed, 0x5eed)),
		latest:   map[string]*corev1.ConfigMap{},
		refStore: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc),
		known:    newMapKnown(),
	}
	var transform cache.TransformFunc
	if seed%2 == 1 {
		transform = markTransform
	}
	r.ref = cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           cache.DeletionHandlingMetaNamespaceKeyFunc,
		KnownObjects:          sortedStore{r.refStore},
		EmitDeltaTypeReplaced: true,
		Transformer:           transform,
	})
	// DeltaFIFO has no way to ask whether it is empty, and its Pop blocks on an
	// empty queue unless the queue is closed. Closing it affects nothing but
	// Pop, which then returns ErrFIFOClosed instead of blocking when empty.
	r.ref.Close()
	q, err := fifo.New(fifo.Config{Known: r.known, Transform: transform})
	if err != nil {
		return err
	}
	r.q = q

	// Informers start with a list; most runs do too.
	if r.rng.IntN(10) < 7 {
		if err := r.replace(); err != nil {
			return err
		}
	}
	for range steps {
		var err error
		switch p := r.rng.IntN(100); {
		case p < 35:
			err = r.addOrUpdate()
		case p < 50:
			err = r.delete()
		case p < 57:
			err = r.replace()
		case p < 62:
			err = r.resync()
		default:
			err = r.consume(1 + r.rng.IntN(4))
		}
		if err != nil {
			return err
		}
		if err := r.compareState(); err != nil {
			return err
		}
	}
	if err := r.consume(1 << 20); err != nil {
		return err
	}
	ref := map[string]string{}
	for _, obj := range r.refStore.List() {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		ref[key] = describeObj(obj)
	}
	ours := map[string]string{}
	for key, obj := range r.known.snapshot() {
		ours[key] = describeObj(obj)
	}
	if !maps.Equal(ref, ours) {
		return r.fail("after draining, stores differ:\n  DeltaFIFO consumer: %v\n  Queue consumer:     %v", ref, ours)
	}
	return nil
}

func (r *diffRun) addOrUpdate() error {
	key := diffKeys[r.rng.IntN(len(diffKeys))]
	obj := r.newObj(key)
	r.latest[key] = obj
	if r.rng.IntN(2) == 0 {
		r.trace = append(r.trace, "Add "+describeObj(obj))
		return r.both("Add", r.ref.Add(obj), r.q.Add(key, obj))
	}
	r.trace = append(r.trace, "Update "+describeObj(obj))
	return r.both("Update", r.ref.Update(obj), r.q.Update(key, obj))
}

func (r *diffRun) delete() error {
	var key string
	if len(r.latest) > 0 && r.rng.IntN(3) > 0 {
		key = slices.Sorted(maps.Keys(r.latest))[r.rng.IntN(len(r.latest))]
	} else {
		key = diffKeys[r.rng.IntN(len(diffKeys))] // possibly unknown everywhere
	}
	var obj any = r.newObj(key)
	if r.rng.IntN(4) == 0 {
		var last any
		if o, ok := r.latest[key]; ok {
			last = o
		}
		obj = cache.DeletedFinalStateUnknown{Key: key, Obj: last}
	}
	delete(r.latest, key)
	r.trace = append(r.trace, "Delete "+describeObj(obj))
	return r.both("Delete", r.ref.Delete(obj), r.q.Delete(key, obj))
}

func (r *diffRun) replace() error {
	include := r.rng.Float64()
	var list []*corev1.ConfigMap
	for _, key := range diffKeys {
		if r.rng.Float64() >= include {
			continue
		}
		obj, ok := r.latest[key]
		if !ok || r.rng.IntN(2) == 0 {
			obj = r.newObj(key) // changed (or new) since the last write
		}
		list = append(list, obj)
	}
	r.rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	clear(r.latest)
	refList := make([]any, len(list))
	ourList := make([]fifo.Keyed, len(list))
	names := make([]string, len(list))
	for i, obj := range list {
		key := obj.Namespace + "/" + obj.Name
		r.latest[key] = obj
		refList[i] = obj
		ourList[i] = fifo.Keyed{Key: key, Object: obj}
		names[i] = describeObj(obj)
	}
	r.trace = append(r.trace, fmt.Sprintf("Replace %v", names))
	return r.both("Replace", r.ref.Replace(refList, ""), r.q.Replace(ourList))
}

func (r *diffRun) resync() error {
	r.trace = append(r.trace, "Resync")
	return r.both("Resync", r.ref.Resync(), r.q.Resync())
}

func (r *diffRun) both(op string, refErr, ourErr error) error {
	if refErr != nil || ourErr != nil {
		return r.fail("%s: DeltaFIFO error %v, Queue error %v", op, refErr, ourErr)
	}
	return nil
}

// consume pops up to n keys from both queues, one key at a time, applying each
// to the consumer's store, and compares what came out.
func (r *diffRun) consume(n int) error {
	r.trace = append(r.trace, fmt.Sprintf("Consume %d", n))
	for range n {
		var refKey string
		var refDeltas cache.Deltas
		var refInitial bool
		refHas := true
		_, err := r.ref.Pop(func(obj any, isInInitialList bool) error {
			refDeltas = obj.(cache.Deltas)
			refInitial = isInInitialList
			refKey, _ = cache.DeletionHandlingMetaNamespaceKeyFunc(refDeltas.Newest().Object)
			for _, d := range refDeltas {
				var err error
				if d.Type == cache.Deleted {
					err = r.refStore.Delete(d.Object)
				} else {
					err = r.refStore.Update(d.Object)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, cache.ErrFIFOClosed) {
			refHas = false // empty
		} else if err != nil {
			return r.fail("DeltaFIFO Pop: %v", err)
		}

		items := r.q.Pop(nil, 1)
		for _, it := range items {
			r.known.apply(it)
		}
		r.q.Done(items)

		switch {
		case !refHas && len(items) == 0:
			return nil
		case !refHas:
			return r.fail("DeltaFIFO is empty but Queue popped %s", describeItems(items))
		case len(items) != 1:
			return r.fail("DeltaFIFO popped %s%s but Queue popped %d items: %s",
				refKey, describeDeltas(refDeltas), len(items), describeItems(items))
		}
		got := items[0]
		r.trace = append(r.trace, fmt.Sprintf("  popped %s%s initial=%v", refKey, describeDeltas(refDeltas), refInitial))
		if got.Key != refKey || describeDeltas(got.Deltas) != describeDeltas(refDeltas) || got.Initial != refInitial {
			return r.fail("popped item differs:\n  DeltaFIFO: %s%s initial=%v\n  Queue:     %s",
				refKey, describeDeltas(refDeltas), refInitial, describeItems(items))
		}
	}
	return nil
}

// compareState compares what both queues expose between steps.
func (r *diffRun) compareState() error {
	if ref, ours := r.ref.HasSynced(), r.q.HasSynced(); ref != ours {
		return r.fail("HasSynced: DeltaFIFO %v, Queue %v", ref, ours)
	}
	return nil
}
