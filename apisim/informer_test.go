package apisim

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// recorder is a ResourceEventHandler that remembers what it was told.
type recorder struct {
	mu         sync.Mutex
	adds       map[string]int
	updates    map[string]int
	deletes    map[string]int
	tombstones map[string]*corev1.Pod // keys delivered as DeletedFinalStateUnknown
}

func newRecorder() *recorder {
	return &recorder{adds: map[string]int{}, updates: map[string]int{}, deletes: map[string]int{}, tombstones: map[string]*corev1.Pod{}}
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (r *recorder) OnAdd(obj any, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.adds[key(obj.(*corev1.Pod))]++
}

func (r *recorder) OnUpdate(_, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates[key(obj.(*corev1.Pod))]++
}

func (r *recorder) OnDelete(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Pod:
		r.deletes[key(o)]++
	case cache.DeletedFinalStateUnknown:
		p := o.Obj.(*corev1.Pod)
		r.deletes[key(p)]++
		r.tombstones[o.Key] = p
	default:
		panic(fmt.Sprintf("unexpected delete object %T", obj))
	}
}

func (r *recorder) count(m func(*recorder) map[string]int, k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m(r)[k]
}

// runInformer starts a client-go shared informer on pods of namespace
// ("" = all) and waits for it to sync.
func runInformer(t *testing.T, cs kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions)) (cache.SharedIndexInformer, *recorder) {
	t.Helper()
	var lw *cache.ListWatch
	if tweak == nil {
		lw = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, fields.Everything())
	} else {
		lw = cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, tweak)
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // goroutine: the informer under test; stopped by Cleanup.
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return inf, rec
}

var mediaTypes = []struct{ name, mediaType string }{
	{"json", ContentTypeJSON},
	{"protobuf", ContentTypeProtobuf},
}

// TestInformerSyncsAndFollows runs client-go's SharedIndexInformer against
// the server in both encodings, with the WatchListClient feature gate on
// (sync by a WatchList stream) and off (sync by LIST).
func TestInformerSyncsAndFollows(t *testing.T) {
	for _, mt := range mediaTypes {
		for _, watchList := range []bool{false, true} {
			t.Run(fmt.Sprintf("contentType=%s/watchList=%v", mt.name, watchList), func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
				s := startServer(t, Config{})
				fill(t, s, 200, 4)
				inf, rec := runInformer(t, clientFor(t, s, mt.mediaType), "", nil)

				if ok, why := sameAsServer(s, inf.GetStore(), "", nil); !ok {
					t.Fatalf("after sync: %s", why)
				}
				st := s.Stats()
				if watchList && st.Requests["list"] != 0 {
					t.Errorf("WatchList on: %d LIST requests, want 0 (sync must use the watch stream)", st.Requests["list"])
				}
				if !watchList && st.Requests["list"] == 0 {
					t.Errorf("WatchList off: no LIST request")
				}
				if watchList && st.BookmarksSent == 0 {
					t.Errorf("WatchList on: no initial-events-end bookmark sent")
				}

				// Follow creates, updates (Update and Modify) and deletes.
				for i := range 20 {
					if _, err := s.Create(NewPod("ns-new", fmt.Sprintf("new-%d", i), int64(1000+i), PodOptions{})); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 30 {
					p, ok := s.Get(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("pod-%05d", i))
					if !ok {
						t.Fatal("missing pod")
					}
					p.Labels["touched"] = "yes"
					if _, err := s.Update(p); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Modify(p.Namespace, p.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }); err != nil {
						t.Fatal(err)
					}
				}
				for i := 100; i < 110; i++ {
					if _, err := s.Delete(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("pod-%05d", i)); err != nil {
						t.Fatal(err)
					}
				}
				eventually(t, "cache follows writes", func() (bool, string) {
					return sameAsServer(s, inf.GetStore(), "", nil)
				})
				if n := rec.count(func(r *recorder) map[string]int { return r.adds }, "ns-new/new-7"); n != 1 {
					t.Errorf("new-7 added %d times, want 1", n)
				}
				eventually(t, "handler sees updates and deletes", func() (bool, string) {
					u := rec.count(func(r *recorder) map[string]int { return r.updates }, "ns-1/pod-00001")
					d := rec.count(func(r *recorder) map[string]int { return r.deletes }, "ns-1/pod-00101")
					return u == 2 && d == 1, fmt.Sprintf("updates %d (want 2), deletes %d (want 1)", u, d)
				})
				if p, ok, _ := inf.GetStore().GetByKey("ns-0/pod-00000"); !ok || p.(*corev1.Pod).Status.Phase != corev1.PodSucceeded {
					t.Errorf("modified pod not in cache with new phase")
				}
			})
		}
	}
}

// TestInformerRecoversFromOutage makes changes while the client is cut off,
// compacts the history it would resume from, and checks that the informer
// relists, converges, and reports the missed delete as a
// DeletedFinalStateUnknown.
func TestInformerRecoversFromOutage(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			s := startServer(t, Config{})
			fill(t, s, 100, 2)
			inf, rec := runInformer(t, clientFor(t, s, ContentTypeProtobuf), "", nil)

			s.SetUnavailable(true)
			if _, err := s.Delete("ns-1", "pod-00001"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Modify("ns-0", "pod-00002", func(p *corev1.Pod) { p.Labels["x"] = "y" }); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(NewPod("ns-0", "late", 5, PodOptions{})); err != nil {
				t.Fatal(err)
			}
			s.Compact(s.ResourceVersion())
			s.SetUnavailable(false)

			eventually(t, "converge after outage", func() (bool, string) {
				return sameAsServer(s, inf.GetStore(), "", nil)
			})
			eventually(t, "tombstone delivered", func() (bool, string) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				p := rec.tombstones["ns-1/pod-00001"]
				return p != nil && p.Name == "pod-00001", fmt.Sprintf("tombstones: %v", rec.tombstones)
			})
		})
	}
}

// TestInformerSurvivesCompactAndDroppedWatches keeps writing while watches
// are dropped and history is compacted; the informer must end up equal to
// the server.
func TestInformerSurvivesCompactAndDroppedWatches(t *testing.T) {
	s := startServer(t, Config{History: 64, WatchBuffer: 64})
	fill(t, s, 100, 3)
	inf, _ := runInformer(t, clientFor(t, s, ContentTypeJSON), "", nil)
	for round := range 5 {
		for i := range 80 {
			idx := (round*17 + i) % 90
			if _, err := s.Modify(fmt.Sprintf("ns-%d", idx%3), fmt.Sprintf("pod-%05d", idx), func(p *corev1.Pod) {
				p.Annotations["round"] = fmt.Sprint(round)
			}); err != nil {
				t.Fatal(err)
			}
		}
		idx := 95 + round
		if _, err := s.Delete(fmt.Sprintf("ns-%d", idx%3), fmt.Sprintf("pod-%05d", idx)); err != nil {
			t.Fatal(err)
		}
		s.Compact(s.ResourceVersion() - 10)
		s.DropWatches()
	}
	eventually(t, "converge after drops and compaction", func() (bool, string) {
		return sameAsServer(s, inf.GetStore(), "", nil)
	})
}
