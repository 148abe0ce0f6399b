package index

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Tests of what a scan (table.each, and through it Partition.Range, List, ListKeys and the value-set
// reads of ByIndex, IndexKeys, Index) returns while the writer changes the table under it: each key
// at most once, and every key present throughout exactly once. The deterministic ones build the
// probe chains on purpose (keysAt) and do the writes from the scan's own callback, between two slots.

// keysAt returns n keys, prefix followed by a number, whose home slot in an array of size slots
// (a power of two) is home. hashKey's seed is random per process, so the keys differ from run to
// run but the layout they build does not.
func keysAt(prefix string, home, size uint64, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("%s%d", prefix, i); hashKey(k)&(size-1) == home {
			out = append(out, k)
		}
	}
	return out
}

// wantAt fails the test unless tab's array has size slots and slot i (mod size) holds key: the
// layout a test set out to build is the one it got.
func wantAt(t *testing.T, tab *table, size uint64, key string, i uint64) {
	t.Helper()
	a := tab.arr.Load()
	if uint64(len(a.cells)) != size {
		t.Fatalf("array of %d slots, want %d", len(a.cells), size)
	}
	if c := a.cells[i%size].Load(); c == nil || c == tombstone || c.key != key {
		t.Fatalf("slot %d holds %v, want %q", i%size, c, key)
	}
}

// chainCase is a probe chain: at its home slot, fillers members and then K, so that K sits at
// home+fillers. The wrap-around case starts the chain at the last slot, so K sits at slot 0.
type chainCase struct {
	name    string
	home    func(size uint64) uint64
	fillers int
}

var chainCases = []chainCase{
	{"straight", func(uint64) uint64 { return 2 }, 0},
	{"wrap", func(size uint64) uint64 { return size - 1 }, 1},
}

// wantOnce fails the test if a key was visited more than once, or a key of once not exactly once.
func wantOnce(t *testing.T, visits map[string]int, once ...string) {
	t.Helper()
	for key, n := range visits {
		if n > 1 {
			t.Errorf("%q visited %d times", key, n)
		}
	}
	for _, key := range once {
		if visits[key] != 1 {
			t.Errorf("%q, a member throughout, visited %d times", key, visits[key])
		}
	}
}

// TestRangeTombstoneReuse pauses Partition.Range right after it returned K, then deletes K, adds J
// (same probe chain: it takes K's tombstone) and adds K again, one slot further along the chain,
// where the scan is about to look. K must not be returned twice.
func TestRangeTombstoneReuse(t *testing.T) {
	const size = 8 // an empty partition's item map, which these few keys do not grow
	for _, tc := range chainCases {
		t.Run(tc.name, func(t *testing.T) {
			home := tc.home(size)
			chain := keysAt("chain", home, size, tc.fillers+2)
			fillers, k, j := chain[:tc.fillers], chain[tc.fillers], chain[tc.fillers+1]
			stable := slices.Concat(keysAt("s4-", 4, size, 1), keysAt("s5-", 5, size, 1), fillers)
			p := NewPartition(cache.Indexers{})
			for _, key := range append(slices.Clone(stable), k) {
				p.Upsert(key, key)
			}
			items := p.st.Load().items
			slot := home + uint64(tc.fillers)
			wantAt(t, items, size, k, slot)

			visits := map[string]int{}
			paused := false
			p.Range(func(key string, _ any) bool {
				visits[key]++
				if key == k && !paused {
					paused = true
					p.Delete(k)
					p.Upsert(j, j)
					p.Upsert(k, k)
					wantAt(t, items, size, j, slot)
					wantAt(t, items, size, k, slot+1)
				}
				return true
			})
			if !paused {
				t.Fatal("Range never returned K")
			}
			wantOnce(t, visits, stable...)
			if err := checkInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// valueSetOf returns the set of value v in the partition's index at position 0.
func valueSetOf(t *testing.T, p *Partition, v string) *valueSet {
	t.Helper()
	vs, ok := p.st.Load().idx[0].sets.Load(v)
	if !ok {
		t.Fatalf("no set for %q", v)
	}
	return vs
}

// TestValueSetFlip pauses a scan of the large set of app=A (the path of ByIndex, IndexKeys and
// Index) right after it returned K, then moves K to app=B (its slot becomes a tombstone), adds J
// with app=A (J takes the tombstone) and moves K back to app=A: K's cell, now indexed under A
// again, lands one slot further along the chain. K must not be returned twice.
func TestValueSetFlip(t *testing.T) {
	const size = 32 // a set promoted at smallSetMax+1 members, which these few keys do not grow
	obj := func(key, app string) *corev1.Pod { return pod("ns", key, "app", app) }
	for _, tc := range chainCases {
		t.Run(tc.name, func(t *testing.T) {
			home := tc.home(size)
			chain := keysAt("chain", home, size, tc.fillers+2)
			fillers, k, j := chain[:tc.fillers], chain[tc.fillers], chain[tc.fillers+1]
			var stable []string // fill the small set, away from the chain
			for h := range uint64(smallSetMax) {
				stable = append(stable, keysAt(fmt.Sprintf("s%d-", h), 8+h, size, 1)...)
			}
			stable = append(stable, fillers...)
			p := NewPartition(cache.Indexers{"app": byApp})
			for _, key := range append(slices.Clone(stable), k) {
				if _, _, err := p.Upsert(key, obj(key, "A")); err != nil {
					t.Fatal(err)
				}
			}
			vs := valueSetOf(t, p, "A")
			if vs.large == nil {
				t.Fatal("the set of A is small")
			}
			slot := home + uint64(tc.fillers)
			wantAt(t, vs.large, size, k, slot)

			visits := map[string]int{}
			paused := false
			vs.eachIndexed(0, func(c *cell, ver *version) bool {
				visits[c.key]++
				if app := ver.obj.(*corev1.Pod).Labels["app"]; app != "A" {
					t.Errorf("%q returned with app %q", c.key, app)
				}
				if c.key == k && !paused {
					paused = true
					for _, w := range []struct{ key, app string }{{k, "B"}, {j, "A"}, {k, "A"}} {
						if _, _, err := p.Upsert(w.key, obj(w.key, w.app)); err != nil {
							t.Fatal(err)
						}
					}
					if valueSetOf(t, p, "A") != vs {
						t.Fatal("the set of A was replaced")
					}
					wantAt(t, vs.large, size, j, slot)
					wantAt(t, vs.large, size, k, slot+1)
				}
				return true
			})
			if !paused {
				t.Fatal("the scan never returned K")
			}
			wantOnce(t, visits, stable...)
			if err := checkInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScanAcrossRebuild pauses a scan after K, sets up the duplicate (K deleted, J in its
// tombstone, K again further along), then rebuilds the array under the scan by growing or
// shrinking the table. The scan keeps the array it loaded, which is never written again.
func TestScanAcrossRebuild(t *testing.T) {
	for _, rebuild := range []string{"grow", "shrink"} {
		t.Run("rebuild="+rebuild, func(t *testing.T) {
			size := uint64(8) // the array the scan loads
			if rebuild == "shrink" {
				size = 128
			}
			tab := newTable(0)
			members := map[string]*cell{}
			add := func(key string) {
				members[key] = &cell{key: key}
				tab.insert(members[key], hashKey(key))
			}
			del := func(key string) {
				tab.remove(members[key], hashKey(key))
				delete(members, key)
			}
			// Homes modulo 128 are homes modulo 8 too. The extra keys start the shrink case from a
			// larger array and grow the other one; they live far from the chain.
			chain := keysAt("chain", 2, 128, 2)
			k, j := chain[0], chain[1]
			stable := slices.Concat(keysAt("s4-", 4, 128, 1), keysAt("s5-", 5, 128, 1))
			extra := keysAt("x", 64, 128, 60)
			if rebuild == "shrink" {
				for _, key := range extra {
					add(key)
				}
			}
			for _, key := range append(slices.Clone(stable), k) {
				add(key)
			}
			wantAt(t, tab, size, k, 2)
			visits := map[string]int{}
			paused := false
			tab.each(func(c *cell) bool {
				visits[c.key]++
				if c.key == k && !paused {
					paused = true
					before := tab.arr.Load()
					del(k)
					add(j)
					add(k)
					wantAt(t, tab, size, j, 2)
					wantAt(t, tab, size, k, 3)
					for _, key := range extra {
						if rebuild == "grow" {
							add(key)
						} else {
							del(key)
						}
					}
					if tab.arr.Load() == before {
						t.Fatal("the array was not rebuilt")
					}
				}
				return true
			})
			if !paused {
				t.Fatal("the scan never met K")
			}
			wantOnce(t, visits, stable...)
			if err := checkTable(tab); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTableScanModel runs scans whose callback makes random inserts and removals (biased towards
// the key just visited, so that removed keys come back into probe chains the scan has not finished),
// through growth, shrinking and tombstone reuse, and checks every scan against a model: no key
// twice, only cells that were members during the scan, every member of the whole scan exactly once.
func TestTableScanModel(t *testing.T) { runTableScanModel(t) }

func runTableScanModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tab := newTable(0)
	members := map[string]*cell{}
	toggle := func(key string) *cell {
		if c, ok := members[key]; ok {
			tab.remove(c, hashKey(key))
			delete(members, key)
			return nil
		}
		c := &cell{key: key}
		tab.insert(c, hashKey(key))
		members[key] = c
		return c
	}
	rounds := 4000
	if testing.Short() {
		rounds = 1000
	}
	for round := range rounds {
		span := 4 + round%60
		randomKey := func() string { return fmt.Sprintf("k%d", rng.IntN(span)) }
		for range rng.IntN(20) {
			toggle(randomKey())
		}
		start := maps.Clone(members)
		touched := map[string]bool{}
		wasMember := map[*cell]bool{}
		for _, c := range members {
			wasMember[c] = true
		}
		var removed []string
		visits := map[string]int{}
		tab.each(func(c *cell) bool {
			if !wasMember[c] {
				t.Fatalf("round %d: visited %q, a cell that was not a member during the scan", round, c.key)
			}
			visits[c.key]++
			for range rng.IntN(4) {
				var key string
				switch x := rng.IntN(6); {
				case x < 2:
					key = c.key
				case x < 4 && len(removed) > 0:
					key = removed[rng.IntN(len(removed))]
				default:
					key = randomKey()
				}
				touched[key] = true
				if nc := toggle(key); nc != nil {
					wasMember[nc] = true
				} else {
					removed = append(removed, key)
				}
			}
			return true
		})
		for key, n := range visits {
			if n > 1 {
				t.Fatalf("round %d: %q visited %d times", round, key, n)
			}
		}
		for key := range start {
			if !touched[key] && visits[key] != 1 {
				t.Fatalf("round %d: %q, a member throughout, visited %d times", round, key, visits[key])
			}
		}
		if err := checkTable(tab); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestPartitionScanModel is TestTableScanModel for a partition's reads: Range, and scans of the
// sets of app=A and app=B, whose callbacks upsert (moving keys between A and B) and delete keys at
// random. A read returns no key twice, each object with a state the key had during the scan
// (qualifying for the set), and every key that qualified throughout exactly once.
func TestPartitionScanModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	p := NewPartition(cache.Indexers{"app": byApp})
	state := map[string]*corev1.Pod{} // the model: key -> current object
	write := func(key string) *corev1.Pod {
		if _, ok := state[key]; ok && rng.IntN(4) == 0 {
			p.Delete(key)
			delete(state, key)
			return nil
		}
		app := "A"
		if rng.IntN(3) == 0 {
			app = "B"
		}
		o := pod("ns", key, "app", app)
		if _, _, err := p.Upsert(key, o); err != nil {
			t.Fatal(err)
		}
		state[key] = o
		return o
	}
	rounds := 3000
	if testing.Short() {
		rounds = 800
	}
	for round := range rounds {
		span := 10 + round%40
		randomKey := func() string { return fmt.Sprintf("k%d", rng.IntN(span)) }
		for range rng.IntN(10) {
			write(randomKey())
		}
		// qualifies reports whether an object is in the scanned view; "" is Range (every object).
		scanned := []string{"", "A", "B"}[rng.IntN(3)]
		qualifies := func(o *corev1.Pod) bool { return o != nil && (scanned == "" || o.Labels["app"] == scanned) }
		throughout := map[string]bool{} // keys qualifying at every moment so far
		seen := map[*corev1.Pod]bool{}  // objects current at some moment of the scan
		for key, o := range state {
			throughout[key] = qualifies(o)
			seen[o] = true
		}
		visits := map[string]int{}
		visit := func(key string, o *corev1.Pod) {
			if !seen[o] || !qualifies(o) || o.Name != key {
				t.Fatalf("round %d, scan %q: returned %q with an object it never had in the view", round, scanned, key)
			}
			visits[key]++
			for range rng.IntN(4) {
				k := randomKey()
				if rng.IntN(2) == 0 {
					k = key
				}
				o := write(k)
				seen[o] = true
				throughout[k] = throughout[k] && qualifies(o)
			}
		}
		if scanned == "" {
			p.Range(func(key string, obj any) bool {
				visit(key, obj.(*corev1.Pod))
				return true
			})
		} else if vs, ok := p.st.Load().idx[0].sets.Load(scanned); ok {
			vs.eachIndexed(0, func(c *cell, ver *version) bool {
				visit(c.key, ver.obj.(*corev1.Pod))
				return true
			})
		}
		for key, n := range visits {
			if n > 1 {
				t.Fatalf("round %d, scan %q: %q returned %d times", round, scanned, key, n)
			}
		}
		for key, ok := range throughout {
			if ok && visits[key] != 1 {
				t.Fatalf("round %d, scan %q: %q qualified throughout, returned %d times", round, scanned, key, visits[key])
			}
		}
		if err := checkInvariants(p); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// collidingNames returns n names in namespace "ns" whose keys route to the same one of shards
// partitions and share the low 10 bits of their hash: one probe chain in every table of up to 1024
// slots, so in the item map and in the sets of namespace "ns" and of app=a.
func collidingNames(shards, n int) []string {
	shardOf := fnvShard(shards)
	var out []string
	var shard int
	var low uint64
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("c%d", i)
		key := "ns/" + name
		h := hashKey(key) & 1023
		if len(out) == 0 {
			shard, low = shardOf(key), h
		} else if shardOf(key) != shard || h != low {
			continue
		}
		out = append(out, name)
	}
	return out
}

// TestShardedScansNoDuplicates is the public-API stress test. K and F start a probe chain that the
// stable keys continue (they collide, see collidingNames); one writer deletes K, adds J (same chain:
// it takes K's tombstone), re-adds K (at the end of the chain), deletes J and moves K back to the
// start; then moves F from app=a to app=b, adds G (same chain, app=a), moves F back (to the end of
// the chain), deletes G and moves F to the start again; over and over, while readers call ListKeys,
// List, ByIndex, IndexKeys and Index. No result may hold a key twice, and every result holds every
// stable key. Run it with -race.
func TestShardedScansNoDuplicates(t *testing.T) {
	const (
		shards  = 2
		stables = 100
		readers = 2
	)
	writes := 1500
	if testing.Short() {
		writes = 400
	}
	s := mustSharded(t, shards, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "app": byApp})
	coll := collidingNames(shards, 4+stables)
	k, j, f, g, stable := coll[0], coll[1], coll[2], coll[3], coll[4:]
	for _, name := range append([]string{k, f}, stable...) {
		if err := s.Add(pod("ns", name, "app", "a")); err != nil {
			t.Fatal(err)
		}
	}

	var reads atomic.Int64
	stop := startReaders(t, readers, func(id int, done *atomic.Bool) error {
		return scanReader(s, id, stable, done, &reads)
	})
	// The writer: this goroutine.
	// Each line leaves K (F) at the start of the chain, where the next one expects it: the last two
	// steps move it back into the tombstone J (G) left there.
	steps := []struct {
		name, app string
		del       bool
	}{
		{k, "", true}, {j, "a", false}, {k, "a", false}, {j, "", true}, {k, "", true}, {k, "a", false},
		{f, "b", false}, {g, "a", false}, {f, "a", false}, {g, "", true}, {f, "b", false}, {f, "a", false},
	}
	for range writes {
		for _, st := range steps {
			var err error
			if st.del {
				err = s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/" + st.name})
			} else {
				err = s.Update(pod("ns", st.name, "app", st.app))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	checkAll(t, s)
	t.Logf("%d reads during %d writes", reads.Load(), writes*len(steps))
}

// scanReader reads s until done and returns the first result with a key twice or without a stable
// key, or with an object of ByIndex(app, a) or Index not labelled app=a.
func scanReader(s *Sharded, id int, stable []string, done *atomic.Bool, reads *atomic.Int64) error {
	probe := pod("ns", "probe", "app", "a")
	check := func(what string, keys []string) error {
		n := make(map[string]int, len(keys))
		for _, key := range keys {
			if n[key]++; n[key] > 1 {
				return fmt.Errorf("reader %d: %s returned %s twice", id, what, key)
			}
		}
		for _, name := range stable {
			if n["ns/"+name] != 1 {
				return fmt.Errorf("reader %d: %s lacks %s, present throughout", id, what, name)
			}
		}
		return nil
	}
	keysOfApp := func(what string, objs []any) ([]string, error) {
		keys := make([]string, 0, len(objs))
		for _, o := range objs {
			p := o.(*corev1.Pod)
			if what != "List" && p.Labels["app"] != "a" {
				return nil, fmt.Errorf("reader %d: %s returned %s with app %q", id, what, p.Name, p.Labels["app"])
			}
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		return keys, nil
	}
	for i := id; !done.Load(); i++ {
		reads.Add(1)
		var what string
		var keys []string
		var err error
		switch i % 6 {
		case 0:
			what, keys = "ListKeys", s.ListKeys()
		case 1:
			what = "List"
			keys, err = keysOfApp(what, s.List())
		case 2:
			what = "ByIndex(app, a)"
			var objs []any
			if objs, err = s.ByIndex("app", "a"); err == nil {
				keys, err = keysOfApp(what, objs)
			}
		case 3:
			what = "ByIndex(namespace, ns)"
			var objs []any
			if objs, err = s.ByIndex(cache.NamespaceIndex, "ns"); err == nil {
				keys, err = keysOfApp("List", objs) // every object qualifies
			}
		case 4:
			what = "IndexKeys(app, a)"
			keys, err = s.IndexKeys("app", "a")
		case 5:
			what = "Index(app, probe)"
			var objs []any
			if objs, err = s.Index("app", probe); err == nil {
				keys, err = keysOfApp(what, objs)
			}
		}
		if err != nil {
			return err
		}
		if err := check(what, keys); err != nil {
			return err
		}
	}
	return nil
}
