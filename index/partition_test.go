package index

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func pod(ns, name string, lbl ...string) *corev1.Pod {
	l := map[string]string{}
	for i := 0; i+1 < len(lbl); i += 2 {
		l[lbl[i]] = lbl[i+1]
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
}

var errBoom = errors.New("boom")

// byApp indexes label app and fails for objects labelled fail=yes.
func byApp(obj any) ([]string, error) {
	l := obj.(metav1.Object).GetLabels()
	if l["fail"] == "yes" {
		return nil, errBoom
	}
	if v, ok := l["app"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

func mustSharded(t *testing.T, n int, indexers cache.Indexers) *Sharded {
	t.Helper()
	s, err := NewSharded(n, fnvShard(n), cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkAll(t *testing.T, s *Sharded) {
	t.Helper()
	for i := range s.Shards() {
		if err := checkInvariants(s.Partition(i)); err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
}

func keysOf(t *testing.T, objs []any) []string {
	t.Helper()
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		k, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func byIndexKeys(t *testing.T, s *Sharded, name, value string) []string {
	t.Helper()
	objs, err := s.ByIndex(name, value)
	if err != nil {
		t.Fatalf("ByIndex(%q, %q): %v", name, value, err)
	}
	return keysOf(t, objs)
}

func wantKeys(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

// wantIndexFuncErr checks err reports index byApp failing for key.
func wantIndexFuncErr(t *testing.T, err error, key string) {
	t.Helper()
	if !errors.Is(err, ErrIndexFunc) || !errors.Is(err, errBoom) {
		t.Fatalf("error %v, want one wrapping ErrIndexFunc and the function's error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"byApp"`) || !strings.Contains(msg, `"`+key+`"`) {
		t.Fatalf("error %q does not name index byApp and key %s", msg, key)
	}
}

func TestIndexFuncFailure(t *testing.T) {
	s := mustSharded(t, 3, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "byApp": byApp})
	if err := s.Add(pod("ns", "p", "app", "a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(pod("ns", "q", "app", "a")); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "ByIndex(byApp, a)", byIndexKeys(t, s, "byApp", "a"), "ns/p", "ns/q")

	// The update fails to index: stored anyway, out of its old value, not under any other.
	bad := pod("ns", "p", "app", "b", "fail", "yes")
	wantIndexFuncErr(t, s.Update(bad), "ns/p")
	if got, ok, _ := s.GetByKey("ns/p"); !ok || got != bad {
		t.Fatalf("GetByKey(ns/p) = %v, %v; want the object whose indexing failed", got, ok)
	}
	wantKeys(t, "ByIndex(byApp, a)", byIndexKeys(t, s, "byApp", "a"), "ns/q")
	wantKeys(t, "ByIndex(byApp, b)", byIndexKeys(t, s, "byApp", "b"))
	wantKeys(t, "ListIndexFuncValues(byApp)", s.ListIndexFuncValues("byApp"), "a")
	wantKeys(t, "ByIndex(namespace, ns)", byIndexKeys(t, s, cache.NamespaceIndex, "ns"), "ns/p", "ns/q")
	checkAll(t, s)

	// Failing again changes nothing but still reports it.
	wantIndexFuncErr(t, s.Update(pod("ns", "p", "app", "c", "fail", "yes")), "ns/p")
	wantKeys(t, "ListIndexFuncValues(byApp)", s.ListIndexFuncValues("byApp"), "a")

	// A later successful update indexes it again.
	if err := s.Update(pod("ns", "p", "app", "c")); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "ByIndex(byApp, c)", byIndexKeys(t, s, "byApp", "c"), "ns/p")
	checkAll(t, s)

	// A new object that fails is stored, and deleting it works.
	wantIndexFuncErr(t, s.Add(pod("other", "r", "fail", "yes")), "other/r")
	if _, ok, _ := s.GetByKey("other/r"); !ok {
		t.Fatal("object whose indexing failed on Add was not stored")
	}
	wantKeys(t, "ByIndex(namespace, other)", byIndexKeys(t, s, cache.NamespaceIndex, "other"), "other/r")
	if err := s.Delete(pod("other", "r")); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "ListKeys", sorted(s.ListKeys()), "ns/p", "ns/q")
	checkAll(t, s)

	// Replace and AddIndexers report failures, store everything and stay consistent.
	err := s.Replace([]any{pod("ns", "p", "app", "a"), pod("ns", "bad", "fail", "yes"), pod("x", "y", "app", "a")}, "10")
	wantIndexFuncErr(t, err, "ns/bad")
	wantKeys(t, "ListKeys", sorted(s.ListKeys()), "ns/bad", "ns/p", "x/y")
	wantKeys(t, "ByIndex(byApp, a)", byIndexKeys(t, s, "byApp", "a"), "ns/p", "x/y")
	checkAll(t, s)

	err = s.AddIndexers(cache.Indexers{"byApp2": func(obj any) ([]string, error) {
		v, err := byApp(obj)
		return v, err
	}})
	if !errors.Is(err, ErrIndexFunc) || !strings.Contains(err.Error(), `"byApp2"`) || !strings.Contains(err.Error(), `"ns/bad"`) {
		t.Fatalf("AddIndexers error %v, want ErrIndexFunc naming byApp2 and ns/bad", err)
	}
	if _, ok := s.GetIndexers()["byApp2"]; !ok {
		t.Fatal("indexer whose function failed on an existing object was not added")
	}
	wantKeys(t, "ByIndex(byApp2, a)", byIndexKeys(t, s, "byApp2", "a"), "ns/p", "x/y")
	checkAll(t, s)
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func TestPartitionUpsertDelete(t *testing.T) {
	p := NewPartition(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	a1, a2 := pod("ns", "a"), pod("ns", "a")
	if old, existed, err := p.Upsert("ns/a", a1); old != nil || existed || err != nil {
		t.Fatalf("first Upsert = %v, %v, %v", old, existed, err)
	}
	if old, existed, err := p.Upsert("ns/a", a2); old != a1 || !existed || err != nil {
		t.Fatalf("second Upsert = %v, %v, %v; want the first object", old, existed, err)
	}
	if got, ok := p.Get("ns/a"); !ok || got != a2 || p.Len() != 1 {
		t.Fatalf("Get = %v, %v, Len %d", got, ok, p.Len())
	}
	if old, existed := p.Delete("ns/a"); old != a2 || !existed {
		t.Fatalf("Delete = %v, %v", old, existed)
	}
	if old, existed := p.Delete("ns/a"); old != nil || existed {
		t.Fatalf("second Delete = %v, %v", old, existed)
	}
	if p.Len() != 0 {
		t.Fatalf("Len = %d after delete", p.Len())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		p.Upsert(fmt.Sprintf("ns/%d", i), pod("ns", fmt.Sprint(i)))
	}
	n := 0
	p.Range(func(key string, obj any) bool {
		n++
		return n < 5
	})
	if n != 5 {
		t.Fatalf("Range visited %d objects after f returned false at 5", n)
	}
	if err := p.Replace(map[string]any{"ns/x": pod("ns", "x")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Get("ns/3"); ok || p.Len() != 1 {
		t.Fatalf("Replace kept old content: Len %d", p.Len())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestLister(t *testing.T) {
	s := mustSharded(t, 4, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range 20 {
		ns := []string{"ns", "other"}[i%2]
		if err := s.Add(pod(ns, fmt.Sprintf("p%d", i), "app", fmt.Sprint(i%3))); err != nil {
			t.Fatal(err)
		}
	}
	lister := corev1listers.NewPodLister(s)
	pods, err := lister.Pods("ns").List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 10 {
		t.Fatalf("Pods(ns).List returned %d pods, want 10", len(pods))
	}
	for _, p := range pods {
		if p.Namespace != "ns" {
			t.Fatalf("Pods(ns).List returned %s/%s", p.Namespace, p.Name)
		}
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "0"})
	if pods, _ := lister.Pods("ns").List(sel); len(pods) != 4 { // p0 p6 p12 p18
		t.Fatalf("Pods(ns).List(app=0) returned %d pods, want 4", len(pods))
	}
	if pods, _ := lister.List(labels.Everything()); len(pods) != 20 {
		t.Fatalf("List returned %d pods, want 20", len(pods))
	}
	if p, err := lister.Pods("other").Get("p3"); err != nil || p.Name != "p3" {
		t.Fatalf("Pods(other).Get(p3) = %v, %v", p, err)
	}
	if _, err := lister.Pods("ns").Get("p3"); err == nil {
		t.Fatal("Pods(ns).Get(p3) found a pod of another namespace")
	}
}

func TestSyncMarks(t *testing.T) {
	s := mustSharded(t, 3, nil)
	if rv := s.LastStoreSyncResourceVersion(); rv != "" {
		t.Fatalf("initial LastStoreSyncResourceVersion = %q", rv)
	}
	if seq, rv := s.Partition(0).SyncMark(); seq != 0 || rv != "" {
		t.Fatalf("initial SyncMark = %d, %q", seq, rv)
	}
	s.Bookmark("5")
	if rv := s.LastStoreSyncResourceVersion(); rv != "5" {
		t.Fatalf("after Bookmark(5): %q", rv)
	}
	// The pipeline's way: each partition records the mark once it has applied what precedes it.
	seq := s.NextSyncMark()
	s.Partition(0).SetSyncMark(seq, "7")
	s.Partition(2).SetSyncMark(seq, "7")
	if rv := s.LastStoreSyncResourceVersion(); rv != "5" {
		t.Fatalf("with partition 1 behind: %q, want the older 5", rv)
	}
	s.Partition(1).SetSyncMark(seq, "7")
	if rv := s.LastStoreSyncResourceVersion(); rv != "7" {
		t.Fatalf("with every partition at mark %d: %q, want 7", seq, rv)
	}
	s.Partition(1).SetSyncMark(seq-1, "6") // older: ignored
	if got, rv := s.Partition(1).SyncMark(); got != seq || rv != "7" {
		t.Fatalf("an older mark moved the mark back to %d, %q", got, rv)
	}
	if err := s.Replace([]any{pod("ns", "a")}, "9"); err != nil {
		t.Fatal(err)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "9" {
		t.Fatalf("after Replace(..., 9): %q", rv)
	}
}

func TestErrors(t *testing.T) {
	key := cache.DeletionHandlingMetaNamespaceKeyFunc
	for _, tc := range []struct {
		name     string
		n        int
		shardOf  func(string) int
		keyFunc  cache.KeyFunc
		indexers cache.Indexers
	}{
		{"zero shards", 0, fnvShard(1), key, nil},
		{"nil shardOf", 1, nil, key, nil},
		{"nil keyFunc", 1, fnvShard(1), nil, nil},
		{"nil index func", 1, fnvShard(1), key, cache.Indexers{"x": nil}},
	} {
		if _, err := NewSharded(tc.n, tc.shardOf, tc.keyFunc, tc.indexers); err == nil {
			t.Errorf("NewSharded with %s: no error", tc.name)
		}
	}

	s := mustSharded(t, 2, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var ke cache.KeyError
	if err := s.Add("not an object"); !errors.As(err, &ke) {
		t.Fatalf("Add of a non-object: %v, want a cache.KeyError", err)
	}
	if _, _, err := s.Get(42); !errors.As(err, &ke) {
		t.Fatalf("Get of a non-object: %v, want a cache.KeyError", err)
	}
	s.Add(pod("ns", "keep"))
	if err := s.Replace([]any{pod("ns", "new"), 42}, "1"); !errors.As(err, &ke) {
		t.Fatalf("Replace with a non-object: %v, want a cache.KeyError", err)
	}
	if keys := s.ListKeys(); !slices.Equal(keys, []string{"ns/keep"}) || s.LastStoreSyncResourceVersion() != "" {
		t.Fatalf("failed Replace changed the cache: keys %q, rv %q", keys, s.LastStoreSyncResourceVersion())
	}

	_, err := s.ByIndex("byLabel", "x")
	if !errors.Is(err, ErrNoIndex) || err.Error() != `index: no such index "byLabel"` {
		t.Fatalf("ByIndex on an unknown index: %v", err)
	}
	err = s.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "new": byApp})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), cache.NamespaceIndex) {
		t.Fatalf("conflicting AddIndexers: %v", err)
	}
	if _, ok := s.GetIndexers()["new"]; ok {
		t.Fatal("conflicting AddIndexers added the other indexer")
	}
	if err := s.Partition(0).AddIndexers(cache.Indexers{cache.NamespaceIndex: byApp}); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting Partition.AddIndexers: %v", err)
	}

	// A tombstone is deleted by its Key even with a key function that does not know tombstones.
	plain, err := NewSharded(2, fnvShard(2), cache.MetaNamespaceKeyFunc, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.Add(pod("ns", "a"))
	if err := plain.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := plain.GetByKey("ns/a"); ok {
		t.Fatal("Delete of a tombstone left the object")
	}

	bad, err := NewSharded(2, func(string) int { return 2 }, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a shardOf result out of range did not panic")
		}
	}()
	bad.Add(pod("ns", "a"))
}

// TestUpsertStamped checks that a stamp is recorded with its object and returned by the next
// write of the key, including one that changes the index values, and that writes without a stamp
// (Upsert, Replace) record 0.
func TestUpsertStamped(t *testing.T) {
	p := NewPartition(cache.Indexers{"app": byApp, cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	steps := []struct {
		obj          *corev1.Pod
		stamp        uint64 // 0: Upsert
		wantOld      uint64
		wantExisting bool
	}{
		{pod("ns", "a", "app", "x"), 7, 0, false},
		{pod("ns", "a", "app", "x"), 8, 7, true}, // values unchanged
		{pod("ns", "a", "app", "y"), 9, 8, true}, // values changed
		{pod("ns", "a", "app", "y"), 0, 9, true},
		{pod("ns", "a", "app", "y"), 5, 0, true},
	}
	for i, st := range steps {
		var old uint64
		var existed bool
		var err error
		if st.stamp == 0 {
			_, existed, err = p.Upsert("ns/a", st.obj)
			old = st.wantOld // Upsert does not report it
		} else {
			_, old, existed, err = p.UpsertStamped("ns/a", st.obj, st.stamp)
		}
		if err != nil || old != st.wantOld || existed != st.wantExisting {
			t.Fatalf("step %d: old stamp %d, existed %v, err %v; want %d, %v", i, old, existed, err, st.wantOld, st.wantExisting)
		}
		if err := checkInvariants(p); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := p.Replace(map[string]any{"ns/a": pod("ns", "a", "app", "z")}); err != nil {
		t.Fatal(err)
	}
	if _, old, _, _ := p.UpsertStamped("ns/a", pod("ns", "a", "app", "z"), 1); old != 0 {
		t.Errorf("after Replace: old stamp %d, want 0", old)
	}
}

// TestPrefetch checks that Prefetch reads keys of every kind — present, absent, deleted (their
// slots tombstones), empty — without a change to the partition (content and invariants, indexes
// included), on an empty partition too, and that it stops asking for keys after PrefetchKeys.
func TestPrefetch(t *testing.T) {
	p := NewPartition(cache.Indexers{"app": byApp})
	p.Prefetch(slices.Values([]string{"ns/a", ""})) // empty

	var keys []string
	for i := range 3 * PrefetchKeys {
		key := fmt.Sprintf("ns/p%d", i)
		keys = append(keys, key)
		if _, _, err := p.Upsert(key, pod("ns", fmt.Sprintf("p%d", i), "app", "x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys[:PrefetchKeys] {
		p.Delete(key)
	}
	if _, _, err := p.Upsert("", pod("", "")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(p)

	asked := 0
	p.Prefetch(func(yield func(string) bool) {
		for _, key := range append([]string{"", "ns/absent"}, keys...) { // deleted ones first
			asked++
			if !yield(key) {
				return
			}
		}
	})
	if asked != PrefetchKeys {
		t.Errorf("Prefetch asked for %d keys, want %d", asked, PrefetchKeys)
	}
	if after := snapshot(p); !slices.Equal(after, before) {
		t.Errorf("Prefetch changed the partition:\n%v\nwant\n%v", after, before)
	}
	if err := checkInvariants(p); err != nil {
		t.Error(err)
	}
}

// snapshot describes a partition's content: every key with its object's name, sorted.
func snapshot(p *Partition) []string {
	var out []string
	p.Range(func(key string, obj any) bool {
		out = append(out, key+"="+obj.(*corev1.Pod).Name)
		return true
	})
	sort.Strings(out)
	return out
}
