package apisim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// op is one write, in resourceVersion order.
type op struct {
	key string
	rv  uint64
	del bool
}

// churn writes (creates, updates, deletes) until stop is closed and returns
// the log of its writes.
func churn(t *testing.T, s *Server, stop <-chan struct{}) <-chan []op {
	out := make(chan []op, 1)
	go func() { // goroutine: writer under test; ends when stop closes.
		var log []op
		defer func() { out <- log }()
		rvOf := func(p *corev1.Pod) uint64 {
			rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
			if err != nil {
				panic(err)
			}
			return rv
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ns := fmt.Sprintf("ns-%d", i%3)
			switch i % 3 {
			case 0:
				p, err := s.Create(NewPod(ns, fmt.Sprintf("churn-%05d", i), int64(i), PodOptions{}))
				if err != nil {
					t.Error(err)
					return
				}
				log = append(log, op{key: key(p), rv: rvOf(p)})
			case 1:
				name := fmt.Sprintf("pod-%05d", (i*7)%300)
				if cur, ok := s.Get(fmt.Sprintf("ns-%d", ((i*7)%300)%3), name); ok {
					cur.Labels["gen"] = strconv.Itoa(i)
					p, err := s.Update(cur)
					if err != nil {
						t.Error(err)
						return
					}
					log = append(log, op{key: key(p), rv: rvOf(p)})
				}
			case 2:
				n := (i * 13) % 300
				p, err := s.Delete(fmt.Sprintf("ns-%d", n%3), fmt.Sprintf("pod-%05d", n))
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				log = append(log, op{key: key(p), rv: rvOf(p), del: true})
			}
		}
	}()
	return out
}

// TestPagerConsistentWhileWriting lists with client-go's pager in small
// pages while another goroutine writes. The result must be exactly the
// store at the list's resourceVersion: every object once, none missing,
// each at the version it had then.
func TestPagerConsistentWhileWriting(t *testing.T) {
	for _, snapshots := range []int{0, -1} { // -1: continuations rebuild the snapshot from history
		for _, mt := range mediaTypes {
			t.Run(fmt.Sprintf("contentType=%s/listSnapshots=%d", mt.name, snapshots), func(t *testing.T) {
				s := startServer(t, Config{ListSnapshots: snapshots})
				fill(t, s, 300, 3)
				initial := map[string]uint64{}
				for _, p := range s.List("") {
					initial[key(p)], _ = strconv.ParseUint(p.ResourceVersion, 10, 64)
				}
				cs := clientFor(t, s, mt.mediaType)

				stop := make(chan struct{})
				logc := churn(t, s, stop)
				var pages int
				var mu sync.Mutex
				p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (k8sruntime.Object, error) {
					mu.Lock()
					pages++
					mu.Unlock()
					return cs.CoreV1().Pods("").List(context.Background(), opts)
				}))
				p.PageSize = 7
				p.FullListIfExpired = false
				list, paginated, err := p.ListWithAlloc(context.Background(), metav1.ListOptions{})
				close(stop)
				log := <-logc
				if err != nil {
					t.Fatal(err)
				}
				if !paginated || pages < 30 {
					t.Fatalf("paginated=%v pages=%d; want many pages", paginated, pages)
				}
				lm, err := meta.ListAccessor(list)
				if err != nil {
					t.Fatal(err)
				}
				listRV, _ := strconv.ParseUint(lm.GetResourceVersion(), 10, 64)

				want := initial
				writesAfter := 0
				for _, o := range log {
					if o.rv > listRV {
						writesAfter++
						continue
					}
					if o.del {
						delete(want, o.key)
					} else {
						want[o.key] = o.rv
					}
				}
				if writesAfter == 0 {
					t.Logf("note: no write landed during the list (%d writes)", len(log))
				}
				items, err := meta.ExtractList(list)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				for _, it := range items {
					p := it.(*corev1.Pod)
					k := key(p)
					if seen[k] {
						t.Errorf("%s listed twice", k)
					}
					seen[k] = true
					rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
					if want[k] != rv {
						t.Errorf("%s listed at rv %d, had rv %d at list rv %d", k, rv, want[k], listRV)
					}
				}
				for k := range want {
					if !seen[k] {
						t.Errorf("%s missing from list at rv %d", k, listRV)
					}
				}
				t.Logf("%d items in %d pages at rv %d; %d writes during/after", len(items), pages, listRV, writesAfter)
			})
		}
	}
}

// TestContinueExpiresOnCompaction: a continuation below the compacted
// version gets 410 Expired, and the pager then falls back to a full list.
func TestContinueExpiresOnCompaction(t *testing.T) {
	s := startServer(t, Config{})
	fill(t, s, 50, 2)
	cs := clientFor(t, s, ContentTypeJSON)
	ctx := context.Background()
	first, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if first.Continue == "" || first.RemainingItemCount == nil || *first.RemainingItemCount != 40 {
		t.Fatalf("first page: continue=%q remaining=%v; want a token and 40", first.Continue, first.RemainingItemCount)
	}
	if _, err := s.Modify("ns-0", "pod-00000", func(p *corev1.Pod) { p.Labels["a"] = "b" }); err != nil {
		t.Fatal(err)
	}
	// Still served from the snapshot.
	second, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 10, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if second.ResourceVersion != first.ResourceVersion {
		t.Errorf("continuation at rv %s, first page at %s", second.ResourceVersion, first.ResourceVersion)
	}
	s.Compact(s.ResourceVersion())
	_, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 10, Continue: second.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continuation after compaction: %v; want 410 Expired", err)
	}

	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (k8sruntime.Object, error) {
		if opts.Continue != "" {
			s.Compact(s.ResourceVersion())
			if _, err := s.Modify("ns-0", "pod-00000", func(p *corev1.Pod) {}); err != nil {
				t.Error(err)
			}
		}
		return cs.CoreV1().Pods("").List(ctx, opts)
	}))
	p.PageSize = 10
	list, _, err := p.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := meta.LenList(list); n != 50 {
		t.Errorf("pager fallback listed %d items, want 50", n)
	}
}
