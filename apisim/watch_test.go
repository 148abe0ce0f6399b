package apisim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// nextEvent returns the next event of w, failing the test if none comes
// within a generous deadline.
func nextEvent(t *testing.T, w watch.Interface) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(60 * time.Second):
		t.Fatal("no watch event")
		return watch.Event{}, false
	}
}

// drainUntilClosed reads w until its channel closes and returns the events.
func drainUntilClosed(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var out []watch.Event
	for {
		ev, ok := nextEvent(t, w)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// TestLabelSelectorListWatch checks selector filtering in an informer and the
// API server's transitions: a pod whose labels stop matching is delivered as
// DELETED, one that starts matching as ADDED.
func TestLabelSelectorListWatch(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run("contentType="+mt.name, func(t *testing.T) {
			s := startServer(t, Config{})
			fill(t, s, 120, 2)
			selected := func(p *corev1.Pod) bool { return p.Labels["tier"] == "frontend" }
			cs := clientFor(t, s, mt.mediaType)
			inf, rec := runInformer(t, cs, "", func(o *metav1.ListOptions) { o.LabelSelector = "tier=frontend" })
			if ok, why := sameAsServer(s, inf.GetStore(), "", selected); !ok {
				t.Fatal(why)
			}
			if n := len(inf.GetStore().List()); n == 0 || n == 120 {
				t.Fatalf("selector picked %d of 120 pods; want a proper subset", n)
			}
			var in, out *corev1.Pod
			for _, p := range s.List("") {
				if selected(p) && out == nil {
					out = p
				}
				if !selected(p) && in == nil {
					in = p
				}
			}
			if _, err := s.Modify(out.Namespace, out.Name, func(p *corev1.Pod) { p.Labels["tier"] = "moved" }); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Modify(in.Namespace, in.Name, func(p *corev1.Pod) { p.Labels["tier"] = "frontend" }); err != nil {
				t.Fatal(err)
			}
			eventually(t, "selector transitions", func() (bool, string) {
				if ok, why := sameAsServer(s, inf.GetStore(), "", selected); !ok {
					return false, why
				}
				d := rec.count(func(r *recorder) map[string]int { return r.deletes }, key(out))
				a := rec.count(func(r *recorder) map[string]int { return r.adds }, key(in))
				return d == 1 && a == 1, fmt.Sprintf("left: %d deletes, entered: %d adds", d, a)
			})

			// A field selector on a namespaced LIST.
			list, err := cs.CoreV1().Pods("ns-1").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + in.Spec.NodeName})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) == 0 {
				t.Fatalf("field selector matched nothing")
			}
			for _, p := range list.Items {
				if p.Spec.NodeName != in.Spec.NodeName || p.Namespace != "ns-1" {
					t.Errorf("field selector returned %s on %s", key(&p), p.Spec.NodeName)
				}
			}
			_, err = cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.unknown=x"})
			if !apierrors.IsBadRequest(err) {
				t.Errorf("unsupported field selector: %v; want 400", err)
			}
		})
	}
}

// TestWatchTimeoutSeconds: the server ends a watch after timeoutSeconds, and
// caps it at MaxWatchTimeout.
func TestWatchTimeoutSeconds(t *testing.T) {
	s := startServer(t, Config{MaxWatchTimeout: 2 * time.Second})
	fill(t, s, 3, 1)
	cs := clientFor(t, s, ContentTypeJSON)
	for _, timeout := range []int64{1, 3600} {
		w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{
			ResourceVersion: strconv.FormatUint(s.ResourceVersion(), 10), TimeoutSeconds: &timeout})
		if err != nil {
			t.Fatal(err)
		}
		if evs := drainUntilClosed(t, w); len(evs) != 0 {
			t.Errorf("timeout=%d: unexpected events %v", timeout, evs)
		}
	}
	if n := s.Stats().WatchesOpen; n != 0 {
		t.Errorf("%d watches still open", n)
	}
}

// TestWatchBookmarks: a watch that allows bookmarks gets periodic BOOKMARKs
// carrying only the current resourceVersion.
func TestWatchBookmarks(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run("contentType="+mt.name, func(t *testing.T) {
			s := startServer(t, Config{BookmarkInterval: 20 * time.Millisecond})
			fill(t, s, 5, 1)
			cs := clientFor(t, s, mt.mediaType)
			rv := strconv.FormatUint(s.ResourceVersion(), 10)
			w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev, _ := nextEvent(t, w)
			if ev.Type != watch.Bookmark {
				t.Fatalf("got %s, want BOOKMARK", ev.Type)
			}
			p := ev.Object.(*corev1.Pod)
			if p.ResourceVersion != rv || p.Name != "" {
				t.Errorf("bookmark %q rv %q; want rv %s and no name", p.Name, p.ResourceVersion, rv)
			}
			if _, err := s.Create(NewPod("ns-0", "after", 1, PodOptions{})); err != nil {
				t.Fatal(err)
			}
			for {
				ev, _ := nextEvent(t, w)
				if ev.Type == watch.Added {
					continue
				}
				if got := ev.Object.(*corev1.Pod).ResourceVersion; got == strconv.FormatUint(s.ResourceVersion(), 10) {
					break
				}
			}
		})
	}
}

// TestWatchList drives the WatchList protocol directly: initial ADDED events
// in key order, the initial-events-end bookmark at the snapshot RV, then
// live events.
func TestWatchList(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run("contentType="+mt.name, func(t *testing.T) {
			s := startServer(t, Config{BookmarkInterval: -1})
			fill(t, s, 30, 3)
			cs := clientFor(t, s, mt.mediaType)
			send := true
			w, err := cs.CoreV1().Pods("ns-1").Watch(context.Background(), metav1.ListOptions{
				SendInitialEvents: &send, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				AllowWatchBookmarks: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			snapRV := strconv.FormatUint(s.ResourceVersion(), 10)
			for i := 1; i < 30; i += 3 {
				ev, _ := nextEvent(t, w)
				p := ev.Object.(*corev1.Pod)
				if ev.Type != watch.Added || p.Name != fmt.Sprintf("pod-%05d", i) {
					t.Fatalf("initial event %s %s; want ADDED pod-%05d", ev.Type, p.Name, i)
				}
			}
			ev, _ := nextEvent(t, w)
			p := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Bookmark || p.Annotations[metav1.InitialEventsAnnotationKey] != "true" || p.ResourceVersion != snapRV {
				t.Fatalf("got %s rv %s annotations %v; want initial-events-end bookmark at %s", ev.Type, p.ResourceVersion, p.Annotations, snapRV)
			}
			if _, err := s.Delete("ns-1", "pod-00004"); err != nil {
				t.Fatal(err)
			}
			ev, _ = nextEvent(t, w)
			if p := ev.Object.(*corev1.Pod); ev.Type != watch.Deleted || p.Name != "pod-00004" ||
				p.ResourceVersion != strconv.FormatUint(s.ResourceVersion(), 10) {
				t.Fatalf("got %s %s rv %s; want DELETED pod-00004 at the deletion's rv", ev.Type, p.Name, p.ResourceVersion)
			}
		})
	}
}

// TestWatchErrors: a watch from a compacted version gets an ERROR event with
// 410 Expired; a version the server has not reached gets the too-large error.
func TestWatchErrors(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run("contentType="+mt.name, func(t *testing.T) {
			s := startServer(t, Config{ResourceVersionWait: 10 * time.Millisecond})
			fill(t, s, 10, 1)
			cs := clientFor(t, s, mt.mediaType)
			old := strconv.FormatUint(s.ResourceVersion()-5, 10)
			s.Compact(s.ResourceVersion() - 2)
			w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: old})
			if err != nil {
				t.Fatal(err)
			}
			evs := drainUntilClosed(t, w)
			if len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("events %v; want one ERROR", evs)
			}
			if err := apierrors.FromObject(evs[0].Object); !apierrors.IsResourceExpired(err) {
				t.Errorf("error event %v; want 410 Expired", err)
			}
			// Resuming from the compaction point itself works.
			from := strconv.FormatUint(s.ResourceVersion()-2, 10)
			w, err = cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: from})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if ev, _ := nextEvent(t, w); ev.Type != watch.Added {
					t.Errorf("resumed watch: %s, want ADDED", ev.Type)
				}
			}
			w.Stop()

			future := strconv.FormatUint(s.ResourceVersion()+100, 10)
			w, err = cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: future})
			if err != nil {
				t.Fatal(err)
			}
			evs = drainUntilClosed(t, w)
			if len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("events %v; want one ERROR", evs)
			}
			if err := apierrors.FromObject(evs[0].Object); !apierrors.IsTimeout(err) ||
				!apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
				t.Errorf("error event %v; want too large resource version", err)
			}
		})
	}
}

// TestSlowWatcherIsClosed: a client that stops reading is cut off once it
// falls WatchBuffer events behind, and writers are never blocked by it.
func TestSlowWatcherIsClosed(t *testing.T) {
	s := startServer(t, Config{WatchBuffer: 50, History: 1000})
	fill(t, s, 10, 1)
	resp, err := http.Get(s.URL() + "/api/v1/pods?watch=1&resourceVersion=" + strconv.FormatUint(s.ResourceVersion(), 10))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ContentTypeJSON {
		t.Fatalf("watch response %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Never read the body. Writers must keep going regardless.
	for i := 0; s.Stats().WatchesSlowClosed == 0; i++ {
		if i == 100000 {
			t.Fatal("slow watcher never closed")
		}
		if _, err := s.Modify("ns-0", "pod-00000", func(p *corev1.Pod) { p.Annotations["i"] = strconv.Itoa(i) }); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "slow watch released", func() (bool, string) {
		n := s.Stats().WatchesOpen
		return n == 0, fmt.Sprintf("%d open", n)
	})
}

// TestDropWatches: dropped watches end; the client's channel closes.
func TestDropWatches(t *testing.T) {
	s := startServer(t, Config{})
	fill(t, s, 3, 1)
	cs := clientFor(t, s, ContentTypeProtobuf)
	var ws []watch.Interface
	for range 3 {
		w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		for range 3 {
			if ev, _ := nextEvent(t, w); ev.Type != watch.Added {
				t.Fatalf("initial event %s, want ADDED", ev.Type)
			}
		}
	}
	s.DropWatches()
	for _, w := range ws {
		if evs := drainUntilClosed(t, w); len(evs) != 0 {
			t.Errorf("got %d events after the drop, want none", len(evs))
		}
	}
	eventually(t, "watches released", func() (bool, string) {
		return s.Stats().WatchesOpen == 0, fmt.Sprint(s.Stats().WatchesOpen)
	})
}

var _ kubernetes.Interface = (*kubernetes.Clientset)(nil)
