package apisim

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/shardinformer/shardinformer/shardselector"
)

// shards splits the hash space into three uneven ranges, and adds a fourth
// selector: the union of two non-adjacent pieces of it.
func shards() []shardselector.Selector {
	a, b := uint64(0x5555000000000000), uint64(0xa000000000000000)
	one := func(rs ...shardselector.Range) shardselector.Selector {
		return shardselector.Selector{Field: shardselector.FieldUID, Ranges: rs}
	}
	return []shardselector.Selector{
		one(shardselector.Range{Start: 0, Last: a - 1}),
		one(shardselector.Range{Start: a, Last: b - 1}),
		one(shardselector.Range{Start: b, Last: math.MaxUint64}),
		one(shardselector.Range{Start: 0, Last: 0x2fffffffffffffff}, shardselector.Range{Start: 0xc000000000000000, Last: math.MaxUint64}),
	}
}

// inShard returns the store's pods whose uid the selector selects, by key.
func inShard(s *Server, sel shardselector.Selector) map[string]string {
	out := map[string]string{}
	for _, p := range s.List("") {
		if sel.Matches(string(p.UID)) {
			out[key(p)] = p.ResourceVersion
		}
	}
	return out
}

// TestShardSelectorOff: without Config.ShardedListAndWatch the parameter is
// ignored, as by the API server with its feature gate off — even when it
// does not parse.
func TestShardSelectorOff(t *testing.T) {
	s := startServer(t, Config{})
	fill(t, s, 50, 2)
	cs := clientFor(t, s, ContentTypeProtobuf)
	for _, sel := range []string{shards()[0].String(), "shardRange(object.metadata.uid, '0x0', '0x1')", "garbage("} {
		l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{ShardSelector: sel})
		if err != nil || len(l.Items) != 50 || l.ShardInfo != nil {
			t.Errorf("selector %q with the gate off: %v, %d items, shardInfo %v; want all 50 and none", sel, err, len(l.Items), l.ShardInfo)
		}
	}
}

// TestShardSelectorList lists each shard of a partition, and a union of
// ranges, through the typed clientset, in pages, and through the metadata
// and dynamic clients: each returns exactly the objects whose uid hash lies
// in its ranges, together every object once; typed lists echo the
// selector in its canonical form.
func TestShardSelectorList(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{ShardedListAndWatch: true})
	fill(t, s, 300, 3)
	if err := drive(s.Widgets(), NewWidget).load(60, 2); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamicClient(t, s, WidgetsResource)
	for _, mt := range mediaTypes {
		cs := clientFor(t, s, mt.mediaType)
		seen := map[string]int{}
		for i, sel := range shards() {
			t.Run(fmt.Sprintf("contentType=%s/shard=%d", mt.name, i), func(t *testing.T) {
				want := inShard(s, sel)
				if len(want) == 0 || len(want) == 300 {
					t.Fatalf("shard %s selects %d of 300 pods; want a proper subset", sel, len(want))
				}
				// A non-canonical spelling: the echo is canonical.
				spelled := strings.ReplaceAll(strings.ReplaceAll(sel.String(), "'", `"`), ", ", " ,\n")
				l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ShardSelector: spelled})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, l, "*v1.Pod"), want); !ok {
					t.Fatalf("shard list: %s", why)
				}
				if l.ShardInfo == nil || l.ShardInfo.Selector != sel.String() {
					t.Errorf("shardInfo %v; want %s", l.ShardInfo, sel)
				}
				if i < 3 {
					for k := range want {
						seen[k]++
					}
				}

				first, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ShardSelector: sel.String(), Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				// The API server's remainingItemCount ignores the shard selector.
				if first.RemainingItemCount == nil || *first.RemainingItemCount != 290 || first.ShardInfo == nil {
					t.Errorf("first page: remaining %v shardInfo %v; want 290 and the echo", first.RemainingItemCount, first.ShardInfo)
				}
				p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
					opts.ShardSelector = sel.String()
					return cs.CoreV1().Pods("").List(ctx, opts)
				})
				p.PageSize = 9
				paged, _, err := p.List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, paged, "*v1.Pod"), want); !ok {
					t.Fatalf("paged shard list: %s", why)
				}

				ml, err := mc.Resource(PodsResource).List(ctx, metav1.ListOptions{ShardSelector: sel.String()})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, ml, "*v1.PartialObjectMetadata"), want); !ok || ml.ShardInfo != nil {
					t.Errorf("metadata shard list: %s; shardInfo %v (the API server drops it)", why, ml.ShardInfo)
				}
				cr, err := dyn.list(ctx, "", metav1.ListOptions{ShardSelector: sel.String()})
				if err != nil {
					t.Fatal(err)
				}
				wantCR := map[string]string{}
				for _, w := range s.Widgets().List("") {
					if sel.Matches(string(w.GetUID())) {
						wantCR[w.GetNamespace()+"/"+w.GetName()] = w.GetResourceVersion()
					}
				}
				if ok, why := sameMap(listed(t, cr, "*unstructured.Unstructured"), wantCR); !ok {
					t.Errorf("custom resource shard list: %s", why)
				}
				if md, _ := cr.(*unstructured.UnstructuredList).Object["metadata"].(map[string]any); md["shardInfo"] != nil {
					t.Errorf("custom resource list carries shardInfo %v; the API server's unstructured lists do not", md["shardInfo"])
				}
			})
		}
		if len(seen) != 300 {
			t.Errorf("the three shards cover %d of 300 pods", len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s listed by %d shards", k, n)
			}
		}
	}

	byNS := shardselector.Selector{Field: shardselector.FieldNamespace, Ranges: []shardselector.Range{{Start: 0, Last: math.MaxUint64 / 2}}}
	l, err := clientFor(t, s, ContentTypeJSON).CoreV1().Pods("").List(ctx, metav1.ListOptions{ShardSelector: byNS.String()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range s.List("") {
		if byNS.Matches(p.Namespace) {
			want[key(p)] = p.ResourceVersion
		}
	}
	if ok, why := sameMap(listed(t, l, "*v1.Pod"), want); !ok || len(want)%100 != 0 {
		t.Errorf("namespace shard: %s; %d pods (want whole namespaces of 100)", why, len(want))
	}
}

// TestShardSelectorErrors: a selector that does not parse fails LIST and
// WATCH with the API server's 500 and message.
func TestShardSelectorErrors(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{ShardedListAndWatch: true})
	fill(t, s, 5, 1)
	cs := clientFor(t, s, ContentTypeProtobuf)
	for _, tc := range []struct{ sel, msg string }{
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
			`invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`},
		{"   ", "invalid shard selector: empty shard selector is not allowed; omit the parameter for unfiltered lists"},
		{"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
			`invalid shard selector: unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace`},
		{"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
			"invalid shard selector: shard range start 0x8000000000000000 must be less than end 0x0000000000000000"},
	} {
		check := func(what string, err error) {
			t.Helper()
			var se *apierrors.StatusError
			if err == nil || !asStatus(err, &se) || se.ErrStatus.Code != 500 || se.ErrStatus.Reason != metav1.StatusReasonUnknown ||
				se.ErrStatus.Message != tc.msg {
				t.Errorf("%s with %q: %v; want 500 %q", what, tc.sel, err, tc.msg)
			}
		}
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ShardSelector: tc.sel})
		check("list", err)
		w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ShardSelector: tc.sel})
		if err == nil {
			w.Stop()
		}
		check("watch", err)
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

// TestShardSelectorWatch: a watch, and a WatchList, with a shard selector
// deliver exactly the events of the objects in range.
func TestShardSelectorWatch(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{ShardedListAndWatch: true, BookmarkInterval: -1})
	fill(t, s, 120, 2)
	sel := shards()[3] // a union of two ranges
	cs := clientFor(t, s, ContentTypeProtobuf)
	from := strconv.FormatUint(s.ResourceVersion(), 10)
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: from, ShardSelector: sel.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wantEvents := map[string]int{}
	record := func(p *corev1.Pod, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if sel.Matches(string(p.UID)) {
			wantEvents[key(p)]++
		}
	}
	for i := range 60 {
		record(s.Create(NewPod("ns-w", fmt.Sprintf("w-%03d", i), int64(i), PodOptions{})))
	}
	for _, p := range s.List("ns-0") {
		if _, err := s.Modify(p.Namespace, p.Name, func(p *corev1.Pod) { p.Labels["x"] = "y" }); err != nil {
			t.Fatal(err)
		}
		cur, _ := s.Get(p.Namespace, p.Name)
		record(cur, nil)
	}
	for _, p := range s.List("ns-1")[:30] {
		record(s.Delete(p.Namespace, p.Name))
	}
	// A last event in range tells the reader it has seen everything.
	var last *corev1.Pod
	for i := 0; last == nil; i++ {
		p, err := s.Create(NewPod("ns-w", fmt.Sprintf("last-%d", i), int64(1000+i), PodOptions{}))
		record(p, err)
		if sel.Matches(string(p.UID)) {
			last = p
		}
	}
	got := map[string]int{}
	for {
		ev := nextNonBookmark(t, w)
		p := ev.Object.(*corev1.Pod)
		if !sel.Matches(string(p.UID)) {
			t.Fatalf("%s event of %s, out of range", ev.Type, key(p))
		}
		got[key(p)]++
		if key(p) == key(last) {
			break
		}
	}
	for k, n := range wantEvents {
		if got[k] != n {
			t.Errorf("%s: %d events, want %d", k, got[k], n)
		}
	}
	if len(got) != len(wantEvents) {
		t.Errorf("%d objects' events, want %d", len(got), len(wantEvents))
	}

	send := true
	wl, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ShardSelector: sel.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	initial := map[string]string{}
	for {
		ev, _ := nextEvent(t, wl)
		if ev.Type == watch.Bookmark {
			break
		}
		p := ev.Object.(*corev1.Pod)
		initial[key(p)] = p.ResourceVersion
	}
	if ok, why := sameMap(initial, inShard(s, sel)); !ok {
		t.Errorf("WatchList initial events: %s", why)
	}
}

// TestShardedInformers runs one client-go informer per shard of a
// partition, as controller replicas would: every cache holds exactly its
// shard, and together they hold the store, each object once, after churn.
func TestShardedInformers(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			s := startServer(t, Config{ShardedListAndWatch: true})
			fill(t, s, 150, 3)
			cs := clientFor(t, s, ContentTypeProtobuf)
			parts := shards()[:3]
			var infs []cache.Store
			for _, sel := range parts {
				inf, _ := runInformer(t, cs, "", func(o *metav1.ListOptions) { o.ShardSelector = sel.String() })
				infs = append(infs, inf.GetStore())
			}
			for i := range 40 {
				if _, err := s.Create(NewPod("ns-late", fmt.Sprintf("late-%d", i), int64(i), PodOptions{})); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Delete(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%05d", i)); err != nil {
					t.Fatal(err)
				}
			}
			for i, sel := range parts {
				eventually(t, fmt.Sprintf("shard %d cache", i), func() (bool, string) {
					return sameAsServer(s, infs[i], "", func(p *corev1.Pod) bool { return sel.Matches(string(p.UID)) })
				})
			}
			total := 0
			for _, st := range infs {
				total += len(st.ListKeys())
			}
			if total != s.Len() {
				t.Errorf("shard caches hold %d objects, the store %d", total, s.Len())
			}
		})
	}
}
