package index

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

var seedFlag = flag.Uint64("index.seed", 0, "seed of the randomized model test (0: fixed seeds plus one from the clock)")

// Index functions of the model test. All are deterministic functions of labels and annotations.
var modelIndexFuncs = map[string]cache.IndexFunc{
	// One value, or none for a cluster-scoped object.
	cache.NamespaceIndex: func(obj any) ([]string, error) {
		if obj.(metav1.Object).GetNamespace() == "" {
			return nil, nil
		}
		return cache.MetaNamespaceIndexFunc(obj)
	},
	// The values of labels a, b, c: zero to three values, possibly repeated.
	"labelValues": func(obj any) ([]string, error) {
		var out []string
		l := obj.(metav1.Object).GetLabels()
		for _, k := range []string{"a", "b", "c"} {
			if v, ok := l[k]; ok {
				out = append(out, v)
			}
		}
		return out, nil
	},
	// Exactly label a's value, or an empty (non-nil) slice.
	"byA": func(obj any) ([]string, error) {
		if v, ok := obj.(metav1.Object).GetLabels()["a"]; ok {
			return []string{v}, nil
		}
		return []string{}, nil
	},
	// The comma-separated tags annotation, in the order written (so reordering is a change of order
	// only), values possibly repeated.
	"tags": func(obj any) ([]string, error) {
		t := obj.(metav1.Object).GetAnnotations()["tags"]
		if t == "" {
			return nil, nil
		}
		return strings.Split(t, ","), nil
	},
	// Every "k=v" label pair: a high-cardinality multi-valued index.
	"pairs": func(obj any) ([]string, error) {
		var out []string
		for k, v := range obj.(metav1.Object).GetLabels() {
			out = append(out, k+"="+v)
		}
		return out, nil
	},
}

// The model starts with these indexes; the others are added by AddIndexers during the run.
var modelInitial = []string{cache.NamespaceIndex, "labelValues"}

func indexersOf(names ...string) cache.Indexers {
	out := cache.Indexers{}
	for _, n := range names {
		out[n] = modelIndexFuncs[n]
	}
	return out
}

type modelGen struct {
	r   *rand.Rand
	gen int
}

var (
	modelNamespaces = []string{"", "ns0", "ns1", "ns2"}
	modelValues     = []string{"x", "y", "z", "w"}
)

func (g *modelGen) key() (ns, name string) {
	ns = modelNamespaces[g.r.IntN(len(modelNamespaces))]
	// Enough names that a namespace's set crosses smallSetMax both ways.
	return ns, fmt.Sprintf("o%d", g.r.IntN(30))
}

func (g *modelGen) object(ns, name string) *corev1.ConfigMap {
	g.gen++
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace:       ns,
		Name:            name,
		ResourceVersion: fmt.Sprint(g.gen),
		Labels:          map[string]string{},
		Annotations:     map[string]string{},
	}}
	for _, k := range []string{"a", "b", "c"} {
		if g.r.IntN(3) > 0 {
			cm.Labels[k] = modelValues[g.r.IntN(len(modelValues))]
		}
	}
	if n := g.r.IntN(4); n > 0 {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = "t" + modelValues[g.r.IntN(len(modelValues))]
		}
		cm.Annotations["tags"] = strings.Join(tags, ",")
	}
	return cm
}

func TestModel(t *testing.T) {
	seeds := []uint64{1, 2}
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	} else {
		seeds = append(seeds, uint64(time.Now().UnixNano()))
	}
	steps := 300
	if testing.Short() {
		steps = 100
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			if err := runModel(seed, steps); err != nil {
				t.Fatalf("seed %d (rerun with -index.seed=%d): %v", seed, seed, err)
			}
		})
	}
}

// runModel applies one random operation sequence to client-go's indexer and to Sharded indexers of
// several shard counts, comparing every observable after every step.
func runModel(seed uint64, steps int) error {
	g := &modelGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	ref := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexersOf(modelInitial...))
	var subjects []*Sharded
	for _, n := range []int{1, 2, 3, 8} {
		s, err := NewSharded(n, fnvShard(n), cache.DeletionHandlingMetaNamespaceKeyFunc, indexersOf(modelInitial...))
		if err != nil {
			return err
		}
		subjects = append(subjects, s)
	}
	for _, n := range []int{1, 3} { // stored forms (the compact store's plumbing)
		s, err := NewSharded(n, fnvShard(n), cache.DeletionHandlingMetaNamespaceKeyFunc, indexersOf(modelInitial...), WithCodec(boxCodec{}))
		if err != nil {
			return err
		}
		subjects = append(subjects, s)
	}
	pending := []string{"byA", "tags", "pairs"}

	for step := 0; step < steps; step++ {
		var op string
		var apply func(cache.Indexer) error
		switch x := g.r.IntN(100); {
		case x < 55:
			obj := g.object(g.key())
			op = "Update " + obj.Namespace + "/" + obj.Name
			apply = func(c cache.Indexer) error { return c.Update(obj) }
			if g.r.IntN(2) == 0 {
				op = "Add " + obj.Namespace + "/" + obj.Name
				apply = func(c cache.Indexer) error { return c.Add(obj) }
			}
		case x < 85:
			var obj any = g.object(g.key())
			keys := ref.ListKeys()
			if len(keys) > 0 && g.r.IntN(4) > 0 {
				cur, _, _ := ref.GetByKey(keys[g.r.IntN(len(keys))])
				obj = cur
			}
			if g.r.IntN(3) == 0 {
				key, _ := cache.MetaNamespaceKeyFunc(obj)
				obj = cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
			}
			op = fmt.Sprintf("Delete %v", obj)
			apply = func(c cache.Indexer) error { return c.Delete(obj) }
		case x < 93:
			// Replace with a mix of kept, updated and new objects.
			var list []any
			for _, o := range ref.List() {
				switch g.r.IntN(3) {
				case 0:
					list = append(list, o)
				case 1:
					cm := o.(*corev1.ConfigMap)
					list = append(list, g.object(cm.Namespace, cm.Name))
				}
			}
			for i := g.r.IntN(5); i > 0; i-- {
				list = append(list, g.object(g.key()))
			}
			rv := fmt.Sprint(g.gen)
			op = fmt.Sprintf("Replace(%d objects, %q)", len(list), rv)
			apply = func(c cache.Indexer) error { return c.Replace(slices.Clone(list), rv) }
		case x < 97 && len(pending) > 0:
			name := pending[0]
			pending = pending[1:]
			op = "AddIndexers " + name
			apply = func(c cache.Indexer) error { return c.AddIndexers(indexersOf(name)) }
		default:
			// A conflicting AddIndexers must fail on both and change nothing.
			names := slices.Collect(func(yield func(string) bool) {
				for n := range ref.GetIndexers() {
					if !yield(n) {
						return
					}
				}
			})
			sort.Strings(names)
			name := names[g.r.IntN(len(names))]
			op = "AddIndexers (conflict) " + name
			apply = func(c cache.Indexer) error { return c.AddIndexers(indexersOf(name)) }
		}

		refErr := apply(ref)
		for _, s := range subjects {
			err := apply(s)
			if (err == nil) != (refErr == nil) {
				return fmt.Errorf("step %d %s, %d shards: error %v, client-go %v", step, op, s.Shards(), err, refErr)
			}
			if err := compare(g, ref, s); err != nil {
				return fmt.Errorf("step %d %s, %d shards: %w", step, op, s.Shards(), err)
			}
			for i := range s.Shards() {
				if err := checkInvariants(s.Partition(i)); err != nil {
					return fmt.Errorf("step %d %s, %d shards: partition %d: %w", step, op, s.Shards(), i, err)
				}
			}
		}
	}
	return nil
}

// boxCodec stores each object in a box, and decodes a box to the very object
// it holds: every read that forgot to decode, and every index function given
// a stored form, shows in the model's comparisons.
type boxCodec struct{}

type box struct{ obj any }

func (boxCodec) Encode(obj any) (any, error) { return &box{obj}, nil }

func (boxCodec) Decode(stored any) (any, error) {
	if b, ok := stored.(*box); ok {
		return b.obj, nil
	}
	return stored, nil
}

// compare checks every observable of s against ref.
func compare(g *modelGen, ref cache.Indexer, s *Sharded) error {
	refKeys, keys := ref.ListKeys(), s.ListKeys()
	sort.Strings(refKeys)
	sort.Strings(keys)
	if !slices.Equal(keys, refKeys) {
		return fmt.Errorf("ListKeys = %q, client-go %q", keys, refKeys)
	}
	if err := sameObjects("List", s.List(), ref.List()); err != nil {
		return err
	}
	probe := append(slices.Clone(refKeys), "ns0/absent", "absent", "ns1/o1", "o2")
	for _, key := range probe {
		o, ok, err := s.GetByKey(key)
		ro, rok, _ := ref.GetByKey(key)
		if err != nil || ok != rok || o != ro {
			return fmt.Errorf("GetByKey(%q) = %v, %v, %v; client-go %v, %v", key, o, ok, err, ro, rok)
		}
	}
	refIdx, idx := ref.GetIndexers(), s.GetIndexers()
	if len(refIdx) != len(idx) {
		return fmt.Errorf("GetIndexers has %d indexers, client-go %d", len(idx), len(refIdx))
	}
	for name := range refIdx {
		if idx[name] == nil {
			return fmt.Errorf("GetIndexers lacks %q", name)
		}
		refVals, vals := ref.ListIndexFuncValues(name), s.ListIndexFuncValues(name)
		sort.Strings(refVals)
		sort.Strings(vals)
		if !slices.Equal(vals, refVals) {
			return fmt.Errorf("ListIndexFuncValues(%q) = %q, client-go %q", name, vals, refVals)
		}
		for _, v := range append(refVals, "absent", "ns0", "x", "tx", "a=x") {
			objs, err := s.ByIndex(name, v)
			refObjs, refErr := ref.ByIndex(name, v)
			if err != nil || refErr != nil {
				return fmt.Errorf("ByIndex(%q, %q): %v; client-go %v", name, v, err, refErr)
			}
			if err := sameObjects(fmt.Sprintf("ByIndex(%q, %q)", name, v), objs, refObjs); err != nil {
				return err
			}
			keys, err := s.IndexKeys(name, v)
			refKeys, _ := ref.IndexKeys(name, v)
			if err != nil || !slices.Equal(keys, refKeys) {
				return fmt.Errorf("IndexKeys(%q, %q) = %q, %v; client-go %q", name, v, keys, err, refKeys)
			}
		}
		for range 3 {
			probe := g.object(g.key())
			g.gen-- // probes do not consume resource versions the model's objects would see
			objs, err := s.Index(name, probe)
			refObjs, refErr := ref.Index(name, probe)
			if err != nil || refErr != nil {
				return fmt.Errorf("Index(%q, %v): %v; client-go %v", name, probe.Labels, err, refErr)
			}
			if err := sameObjects(fmt.Sprintf("Index(%q, labels %v tags %q)", name, probe.Labels, probe.Annotations["tags"]), objs, refObjs); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{"unknown", "byA", "tags", "pairs"} {
		if refIdx[name] != nil {
			continue
		}
		if _, err := s.ByIndex(name, "x"); !errors.Is(err, ErrNoIndex) {
			return fmt.Errorf("ByIndex(%q) on an unknown index: %v, want ErrNoIndex", name, err)
		}
		if _, err := s.IndexKeys(name, "x"); !errors.Is(err, ErrNoIndex) {
			return fmt.Errorf("IndexKeys(%q) on an unknown index: %v, want ErrNoIndex", name, err)
		}
		if _, err := s.Index(name, &corev1.ConfigMap{}); !errors.Is(err, ErrNoIndex) {
			return fmt.Errorf("Index(%q) on an unknown index: %v, want ErrNoIndex", name, err)
		}
		if v := s.ListIndexFuncValues(name); v == nil || len(v) != 0 {
			return fmt.Errorf("ListIndexFuncValues(%q) on an unknown index = %#v, want empty", name, v)
		}
	}
	return nil
}

// sameObjects compares two results as multisets of stored objects (identity, not equality).
func sameObjects(what string, got, want []any) error {
	if got == nil {
		return fmt.Errorf("%s returned nil, want a non-nil slice", what)
	}
	count := map[any]int{}
	for _, o := range want {
		count[o]++
	}
	for _, o := range got {
		count[o]--
	}
	for o, n := range count {
		if n != 0 {
			key, _ := cache.MetaNamespaceKeyFunc(o)
			return fmt.Errorf("%s: object %s (rv %s) returned %d times too few (%d objects, client-go %d)",
				what, key, o.(metav1.Object).GetResourceVersion(), n, len(got), len(want))
		}
	}
	return nil
}
