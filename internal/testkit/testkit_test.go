package testkit_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/internal/testkit/ours"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

func cm(name, rv, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}, Data: map[string]string{"v": v}}
}

func value(obj any) string { return obj.(*corev1.ConfigMap).Data["v"] }

// Each rule of the Recorder, broken once: it is reported, with the key.
func TestRecorderReportsEveryBrokenRule(t *testing.T) {
	a1, a2, a3 := cm("a", "1", "x"), cm("a", "2", "y"), cm("a", "3", "z")
	for name, tc := range map[string]struct {
		exact bool
		calls func(r *testkit.Recorder)
		want  string
	}{
		"add of a present key":    {calls: func(r *testkit.Recorder) { r.OnAdd(a1, true); r.OnAdd(a2, false) }, want: "add of a key the handler already has"},
		"add going back":          {calls: func(r *testkit.Recorder) { r.OnAdd(a2, true); r.OnDelete(a3); r.OnAdd(a1, false) }, want: "resourceVersion 1 is not after 3"},
		"update of an absent key": {calls: func(r *testkit.Recorder) { r.OnUpdate(a1, a2) }, want: "update of a key the handler does not have"},
		"update from another old": {calls: func(r *testkit.Recorder) { r.OnAdd(a1, true); r.OnUpdate(a2, a3) }, want: "old object is 2, the handler was last told 1"},
		"update going back":       {calls: func(r *testkit.Recorder) { r.OnAdd(a2, true); r.OnUpdate(a2, a1) }, want: "resourceVersion 1 goes back from 2"},
		"delete of an absent key": {calls: func(r *testkit.Recorder) { r.OnDelete(a1) }, want: "delete of a key the handler does not have"},
		"delete at the same rv":   {calls: func(r *testkit.Recorder) { r.OnAdd(a1, true); r.OnDelete(a1) }, want: "resourceVersion 1 is not after 1"},
		"exact: stale final state": {exact: true, calls: func(r *testkit.Recorder) {
			r.OnAdd(a1, true)
			r.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: cm("a", "1", "other")})
		}, want: "final state"},
		"not a number": {calls: func(r *testkit.Recorder) { r.OnAdd(cm("a", "x1", "x"), true) }, want: `resourceVersion "x1" is not a number`},
	} {
		t.Run(name, func(t *testing.T) {
			r := &testkit.Recorder{Exact: tc.exact}
			if tc.exact {
				r.Label = value
			}
			tc.calls(r)
			v, n := r.Violations()
			if n != 1 || !strings.Contains(v[0], tc.want) || !strings.HasPrefix(v[0], "ns/a: ") {
				t.Fatalf("violations = %d %q, want one containing %q", n, v, tc.want)
			}
		})
	}
}

// A consistent history has no violations, and is logged per key.
func TestRecorderLogsAConsistentHistory(t *testing.T) {
	r := &testkit.Recorder{Exact: true, Serial: true, Label: value}
	a1, a2 := cm("a", "1", "x"), cm("a", "2", "y")
	r.OnAdd(a1, true)
	r.OnUpdate(a1, a1)            // resync
	r.OnUpdate(a1, a1.DeepCopy()) // relist replay
	r.OnUpdate(a1, a2)
	r.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a2})
	r.OnAdd(cm("a", "5", "w"), false)
	r.CheckConsistent(t)
	want := []string{"add:x/initial", "sync:x", "replay:x", "update:x->y", "tombstone:y", "add:w"}
	if got := r.Seq("ns/a"); !slices.Equal(got, want) {
		t.Fatalf("Seq = %v, want %v", got, want)
	}
	if got := r.Seq("ns/a", testkit.Sync, testkit.Replay); len(got) != 4 {
		t.Fatalf("Seq without syncs and replays = %v", got)
	}
	if r.Count() != 6 || r.Count(testkit.Add) != 2 || r.InitialAdds() != 1 {
		t.Fatalf("counts: %d, %d adds, %d initial", r.Count(), r.Count(testkit.Add), r.InitialAdds())
	}
	if l, ok := r.Known("ns/a"); !ok || l != "w" {
		t.Fatalf("Known = %q, %v", l, ok)
	}
	if d, n := r.Diff(map[string]string{"ns/a": "5", "ns/b": "1"}, 10); n != 1 || !strings.HasPrefix(d[0], "ns/b: ") {
		t.Fatalf("Diff = %v", d)
	}
}

// Overlapping calls for one key are a violation; for a serial handler any
// overlap is.
func TestRecorderDetectsOverlap(t *testing.T) {
	for _, serial := range []bool{false, true} {
		t.Run(fmt.Sprintf("serial=%v", serial), func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			r := &testkit.Recorder{Serial: serial, Before: func(e testkit.Event) {
				if e.Key == "ns/a" {
					once.Do(func() { close(entered) })
					<-release
				}
			}}
			done := make(chan struct{})
			go func() { // goroutine: a handler call held by Before; joined below.
				defer close(done)
				r.OnAdd(cm("a", "1", ""), false)
			}()
			<-entered
			r.OnAdd(cm("b", "1", ""), false) // another key: fine unless serial
			close(release)
			<-done
			if _, n := r.Violations(); (n == 1) != serial {
				t.Fatalf("serial=%v: %d violations", serial, n)
			}
			if r.MaxActive() != 2 {
				t.Fatalf("MaxActive = %d, want 2", r.MaxActive())
			}
		})
	}
}

// The same flow on client-go's informer and ours, LIST and WatchList,
// through LW: the Recorder sees a consistent history that ends at the
// server's state, and LW counts the requests of each mode.
func TestImplsRecorderAndLW(t *testing.T) {
	for _, im := range []testkit.Impl{testkit.ClientGo, ours.Impl("4 shards", pipeline.WithShards(4))} {
		for _, wl := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/watchList=%v", im.Name, wl), func(t *testing.T) {
				c := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.ConfigMapList{} }, WatchList: wl, DeepCopy: true})
				for i := range 20 {
					if _, err := c.Create(cm(fmt.Sprintf("c%02d", i), "", "1")); err != nil {
						t.Fatal(err)
					}
				}
				lw := testkit.NewLW(c.ListerWatcher())
				inf := im.New(lw, &corev1.ConfigMap{}, 0, nil)
				if _, ok := pipeline.Unwrap(inf); ok != im.Ours {
					t.Fatalf("%T: ours = %v", inf, ok)
				}
				rec := &testkit.Recorder{Serial: true, Exact: true, Label: value}
				reg, err := im.AddHandler(inf, rec, 1)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := im.AddHandler(inf, &testkit.Recorder{}, 3); (err == nil) != im.Ours {
					t.Fatalf("parallel handler on %s: %v", im.Name, err)
				}
				testkit.RunSynced(t, inf, reg)
				if wl != (lw.WatchLists() == 1) || wl == (lw.Lists() == 1) {
					t.Fatalf("watchList=%v: %d lists, %d watch lists", wl, lw.Lists(), lw.WatchLists())
				}

				// A cut: the watch ends and requests wait; meanwhile the
				// history is compacted, so the reflector has to relist.
				lw.Disconnect()
				if _, err := c.Update(cm("c03", "", "2")); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Delete("ns/c04"); err != nil {
					t.Fatal(err)
				}
				c.Compact()
				lw.Reconnect()
				rec.WaitKnown(t, "ns/c03", "2")
				rec.WaitKnown(t, "ns/c04", "")
				want := map[string]string{}
				for k, o := range c.Objects() {
					want[k] = o.(*corev1.ConfigMap).ResourceVersion
				}
				if d, n := rec.Diff(want, 5); n != 0 {
					t.Fatalf("%d differences: %v", n, d)
				}
				rec.CheckConsistent(t)
			})
		}
	}
}

func TestGoroutinesFindsAMarkedGoroutine(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // goroutine: parked in markedPark until stop; joined below.
		defer close(done)
		markedPark(stop)
	}()
	testkit.Eventually(t, "the goroutine to park", func() bool { return len(testkit.Goroutines("testkit_test.markedPark(")) == 1 })
	close(stop)
	<-done
	testkit.NoGoroutines(t, "testkit_test.markedPark(")
}

//go:noinline
func markedPark(stop <-chan struct{}) { <-stop }

func TestLWFailsAndRewrites(t *testing.T) {
	c := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.ConfigMapList{} }})
	if _, err := c.Create(cm("a", "", "1")); err != nil {
		t.Fatal(err)
	}
	lw := testkit.NewLW(c.ListerWatcher())
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Fatal("the fake opts out of WatchList; the wrapper must too")
	}
	boom := errors.New("boom")
	lw.FailWatches(boom, 1)
	if _, err := lw.Watch(metav1.ListOptions{}); !errors.Is(err, boom) {
		t.Fatalf("first watch: %v, want boom", err)
	}
	w, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	lw.RewriteLists(func(runtime.Object) runtime.Object { return &corev1.ConfigMapList{} })
	l, err := lw.List(metav1.ListOptions{})
	if err != nil || len(l.(*corev1.ConfigMapList).Items) != 0 {
		t.Fatalf("rewritten list: %v, %v", l, err)
	}
	c.Compact()
	if _, err := lw.Watch(metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from a compacted version: %v, want 410", err)
	}
	if lw.Lists() != 1 || lw.Watches() != 3 || lw.Gone() != 1 {
		t.Fatalf("%d lists, %d watches, %d gone", lw.Lists(), lw.Watches(), lw.Gone())
	}
}
