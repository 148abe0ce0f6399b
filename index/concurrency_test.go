package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// nameKey keys objects by name alone, so that a key can move between namespaces and every update
// may change its namespace index value: the case where a stale read would show.
func nameKey(obj any) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := metaOf(obj)
	if err != nil {
		return "", err
	}
	return m.GetName(), nil
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a metav1.Object", obj)
	}
	return m, nil
}

// tagIndex indexes the comma-separated "tags" annotation.
func tagIndex(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if t := m.GetAnnotations()["tags"]; t != "" {
		return strings.Split(t, ","), nil
	}
	return nil, nil
}

func hasTag(obj any, tag string) bool {
	vals, _ := tagIndex(obj)
	return slices.Contains(vals, tag)
}

// TestConcurrentReaders runs one writer against four readers and checks, for every read:
//   - every object ByIndex(namespace, v) returns has namespace v, and likewise for tags and Index;
//   - no key is returned twice;
//   - keys that always exist and always carry tag "all" are always returned by List and by
//     ByIndex(tags, "all"), although their namespace and other tags change on every update;
//   - per key, resource versions never go backwards across a reader's calls, nor below a deletion
//     the reader has observed;
//   - a key whose object did not change during a ByIndex call is returned iff the object
//     qualifies (checked after the call: an object still current that was written before the call
//     started was the key's state throughout the call).
func TestConcurrentReaders(t *testing.T) {
	const (
		shards  = 4
		stable  = 24 // keys never deleted, always tagged "all"
		churn   = 48 // keys upserted and deleted at random
		writes  = 6000
		readers = 4
	)
	s, err := NewSharded(shards, fnvShard(shards), nameKey, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"tags":               tagIndex,
	})
	if err != nil {
		t.Fatal(err)
	}
	namespaces := []string{"ns0", "ns1", "ns2"}
	tags := []string{"t0", "t1", "t2", "t3"}
	var rv int64
	newObj := func(r *rand.Rand, name string, isStable bool) *corev1.Pod {
		rv++
		var tg []string
		if isStable {
			tg = append(tg, "all")
		}
		for _, x := range tags {
			if r.IntN(2) == 0 {
				tg = append(tg, x)
			}
		}
		r.Shuffle(len(tg), func(i, j int) { tg[i], tg[j] = tg[j], tg[i] })
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespaces[r.IntN(len(namespaces))],
			ResourceVersion: strconv.FormatInt(rv, 10),
			Annotations:     map[string]string{"tags": strings.Join(tg, ",")},
		}}
	}
	wr := rand.New(rand.NewPCG(7, 7))
	for i := range stable {
		if err := s.Add(newObj(wr, fmt.Sprintf("s%d", i), true)); err != nil {
			t.Fatal(err)
		}
	}

	var reads atomic.Int64
	// completed is the highest resource version whose write has returned: every object with a
	// version at most completed was stored (or already replaced) before completed was loaded.
	var completed atomic.Int64
	completed.Store(rv)
	stop := startReaders(t, readers, func(id int, done *atomic.Bool) error {
		return reader(s, id, stable, churn, namespaces, tags, &completed, done, &reads)
	})
	// And one goroutine prefetching every key, as a writer would before a batch (under -race: it
	// reads what the writer writes, across deletions, tombstones, rebuilds and Replace).
	var keys []string
	for i := range max(stable, churn) {
		keys = append(keys, fmt.Sprintf("s%d", i), fmt.Sprintf("c%d", i)) // s%d beyond stable: absent
	}
	stopPrefetch := startReaders(t, 1, func(_ int, done *atomic.Bool) error {
		for !done.Load() {
			for i := range shards {
				s.Partition(i).Prefetch(slices.Values(keys))
			}
		}
		return nil
	})

	// The writer: this goroutine.
	for i := range writes {
		switch x := wr.IntN(100); {
		case x < 45:
			err = s.Update(newObj(wr, fmt.Sprintf("s%d", wr.IntN(stable)), true))
		case x < 80:
			err = s.Update(newObj(wr, fmt.Sprintf("c%d", wr.IntN(churn)), false))
		case x < 99:
			err = s.Delete(cache.DeletedFinalStateUnknown{Key: fmt.Sprintf("c%d", wr.IntN(churn))})
		default:
			list := make([]any, 0, stable+churn/2)
			for j := range stable {
				list = append(list, newObj(wr, fmt.Sprintf("s%d", j), true))
			}
			for j := 0; j < churn; j += 2 {
				list = append(list, newObj(wr, fmt.Sprintf("c%d", j), false))
			}
			err = s.Replace(list, strconv.FormatInt(rv, 10))
		}
		if err != nil {
			t.Fatal(err)
		}
		completed.Store(rv)
		if i == writes/2 {
			err := s.AddIndexers(cache.Indexers{"late": func(obj any) ([]string, error) {
				return []string{obj.(metav1.Object).GetNamespace()}, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	stopPrefetch()
	for i := range shards {
		if err := checkInvariants(s.Partition(i)); err != nil {
			t.Errorf("partition %d: %v", i, err)
		}
	}
	t.Logf("%d reads during %d writes", reads.Load(), writes)
}

// startReaders starts n reader goroutines, each running read(id, done), which reads until done and
// returns the first violation it sees. The returned stop sets done, waits for every reader and
// reports their errors on t; it runs once, at the latest when the test ends (a t.Fatal of the
// writer leaves no reader behind).
func startReaders(t *testing.T, n int, read func(id int, done *atomic.Bool) error) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, n)
	for id := range n {
		wg.Go(func() { errs[id] = read(id, &done) }) // reader goroutine
	}
	stop = sync.OnceFunc(func() {
		done.Store(true)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
	t.Cleanup(stop)
	return stop
}

// reader queries s until done and returns the first violation it sees.
func reader(s *Sharded, id, stable, churn int, namespaces, tags []string, completed *atomic.Int64, done *atomic.Bool, reads *atomic.Int64) error {
	r := rand.New(rand.NewPCG(uint64(id), 99))
	lastRV := map[string]int64{}
	seeLate := false
	// observe checks one result: no key twice, every object satisfies ok, versions never go back.
	observe := func(what string, objs []any, ok func(*corev1.Pod) bool) (map[string]bool, error) {
		keys := make(map[string]bool, len(objs))
		for _, o := range objs {
			p := o.(*corev1.Pod)
			if keys[p.Name] {
				return nil, fmt.Errorf("reader %d: %s returned %s twice", id, what, p.Name)
			}
			keys[p.Name] = true
			if !ok(p) {
				return nil, fmt.Errorf("reader %d: %s returned %s in namespace %s with tags %q",
					id, what, p.Name, p.Namespace, p.Annotations["tags"])
			}
			v, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
			if v < lastRV[p.Name] {
				return nil, fmt.Errorf("reader %d: %s returned %s at rv %d after rv %d", id, what, p.Name, v, lastRV[p.Name])
			}
			lastRV[p.Name] = v
		}
		return keys, nil
	}
	allStable := func(what string, keys map[string]bool) error {
		for i := range stable {
			if k := fmt.Sprintf("s%d", i); !keys[k] {
				return fmt.Errorf("reader %d: %s lacks %s, which always qualifies", id, what, k)
			}
		}
		return nil
	}
	rvOf := func(p *corev1.Pod) int64 {
		v, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
		return v
	}
	randomKey := func() string {
		if r.IntN(2) == 0 {
			return fmt.Sprintf("s%d", r.IntN(stable))
		}
		return fmt.Sprintf("c%d", r.IntN(churn))
	}
	// sample returns a few keys' objects before a call; complete checks, after the call, that a key
	// whose object was current before the call (written before w0 or seen in the sample) and still
	// is after it was returned iff its object qualifies.
	var sampled [6]struct {
		key string
		obj any
	}
	sample := func() {
		for i := range sampled {
			sampled[i].key = randomKey()
			sampled[i].obj, _, _ = s.GetByKey(sampled[i].key)
		}
	}
	complete := func(what string, w0 int64, keys map[string]bool, qualifies func(*corev1.Pod) bool) error {
		for _, sm := range sampled {
			key := sm.key
			o, ok, _ := s.GetByKey(key)
			if !ok || (o != sm.obj && rvOf(o.(*corev1.Pod)) > w0) {
				continue
			}
			p := o.(*corev1.Pod)
			if keys[key] != qualifies(p) {
				return fmt.Errorf("reader %d: %s: returned %s = %v, but its object (rv %d, namespace %s, tags %q) was current throughout",
					id, what, key, keys[key], rvOf(p), p.Namespace, p.Annotations["tags"])
			}
		}
		return nil
	}
	for !done.Load() {
		reads.Add(1)
		w0 := completed.Load()
		switch r.IntN(7) {
		case 0:
			ns := namespaces[r.IntN(len(namespaces))]
			sample()
			objs, err := s.ByIndex(cache.NamespaceIndex, ns)
			if err != nil {
				return err
			}
			what := "ByIndex(namespace, " + ns + ")"
			ok := func(p *corev1.Pod) bool { return p.Namespace == ns }
			keys, err := observe(what, objs, ok)
			if err != nil {
				return err
			}
			if err := complete(what, w0, keys, ok); err != nil {
				return err
			}
		case 1:
			tag := tags[r.IntN(len(tags))]
			sample()
			objs, err := s.ByIndex("tags", tag)
			if err != nil {
				return err
			}
			what := "ByIndex(tags, " + tag + ")"
			ok := func(p *corev1.Pod) bool { return hasTag(p, tag) }
			keys, err := observe(what, objs, ok)
			if err != nil {
				return err
			}
			if err := complete(what, w0, keys, ok); err != nil {
				return err
			}
		case 2:
			objs, err := s.ByIndex("tags", "all")
			if err != nil {
				return err
			}
			keys, err := observe("ByIndex(tags, all)", objs, func(p *corev1.Pod) bool { return hasTag(p, "all") })
			if err != nil {
				return err
			}
			if err := allStable("ByIndex(tags, all)", keys); err != nil {
				return err
			}
		case 3:
			keys, err := observe("List", s.List(), func(*corev1.Pod) bool { return true })
			if err != nil {
				return err
			}
			if err := allStable("List", keys); err != nil {
				return err
			}
		case 4:
			key := randomKey()
			o, ok, err := s.GetByKey(key)
			if err != nil {
				return err
			}
			if !ok {
				if key[0] == 's' {
					return fmt.Errorf("reader %d: GetByKey(%s) missed a key that always exists", id, key)
				}
				// Deleted after every object of key written before w0: none of them may come back.
				lastRV[key] = max(lastRV[key], w0+1)
				continue
			}
			if _, err := observe("GetByKey("+key+")", []any{o}, func(p *corev1.Pod) bool { return p.Name == key }); err != nil {
				return err
			}
		case 5:
			t1, t2 := tags[r.IntN(len(tags))], tags[r.IntN(len(tags))]
			probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"tags": t1 + "," + t2}}}
			objs, err := s.Index("tags", probe)
			if err != nil {
				return err
			}
			if _, err := observe("Index(tags, "+t1+","+t2+")", objs, func(p *corev1.Pod) bool { return hasTag(p, t1) || hasTag(p, t2) }); err != nil {
				return err
			}
		case 6:
			ns := namespaces[r.IntN(len(namespaces))]
			objs, err := s.ByIndex("late", ns)
			if errors.Is(err, ErrNoIndex) && !seeLate {
				continue
			}
			if err != nil {
				return fmt.Errorf("reader %d: ByIndex(late) after it existed: %w", id, err)
			}
			seeLate = true
			if _, err := observe("ByIndex(late, "+ns+")", objs, func(p *corev1.Pod) bool { return p.Namespace == ns }); err != nil {
				return err
			}
		}
	}
	return nil
}
