package apisim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"
)

// loadParallel fills s with n pods built on all cores.
func loadParallel(b *testing.B, s *Server, n int) {
	b.Helper()
	pods := make([]*corev1.Pod, n)
	var wg sync.WaitGroup
	const workers = 2
	for w := range workers {
		wg.Add(1)
		go func() { // goroutine: pod builder for this benchmark's setup.
			defer wg.Done()
			for i := w; i < n; i += workers {
				pods[i] = NewPod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%06d", i), int64(i), PodOptions{})
			}
		}()
	}
	wg.Wait()
	if err := s.Load(pods); err != nil {
		b.Fatal(err)
	}
}

func rawGet(b *testing.B, url, accept string) int64 {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%d %v", resp.StatusCode, err)
	}
	return n
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// BenchmarkList100k measures a full LIST of 100k pods. The setup logs the
// first ("cold") list of each encoding, which also encodes every pod on all
// cores, and the server's heap. Sub-benchmarks: served to a client that
// discards the bytes (the server's cost), and decoded by client-go over
// protobuf (end to end). client-go decoding the ~1 GB JSON list takes
// minutes on two cores and is left out.
func BenchmarkList100k(b *testing.B) {
	const n = 100000
	s := startServer(b, Config{ShardedListAndWatch: true})
	loadParallel(b, s, n)
	b.Logf("heap after loading %d pods: %.0f MiB", n, heapMB())
	for _, mt := range mediaTypes {
		start := time.Now()
		bytes := rawGet(b, s.URL()+"/api/v1/pods", mt.mediaType)
		b.Logf("cold %s list: %v, %d bytes (%.0f bytes/pod); heap now %.0f MiB",
			mt.name, time.Since(start).Round(time.Millisecond), bytes, float64(bytes)/n, heapMB())
	}
	for _, mt := range mediaTypes {
		b.Run("contentType="+mt.name+"/client=discard", func(b *testing.B) {
			for range b.N {
				rawGet(b, s.URL()+"/api/v1/pods", mt.mediaType)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/list")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
	// The metadata view (PartialObjectMetadataList, as metadata informers
	// ask for it) and one of four shards of the uid hash space.
	for _, sub := range []struct{ name, path, accept string }{
		{"contentType=protobuf/view=metadata/client=discard", "/api/v1/pods",
			"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"contentType=json/view=metadata/client=discard", "/api/v1/pods",
			"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"contentType=protobuf/shards=4/client=discard",
			"/api/v1/pods?shardSelector=" + url.QueryEscape("shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')"),
			ContentTypeProtobuf},
	} {
		b.Run(sub.name, func(b *testing.B) {
			for range b.N {
				rawGet(b, s.URL()+sub.path, sub.accept)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/list")
		})
	}
	b.Run("contentType=protobuf/client=client-go", func(b *testing.B) {
		cs := clientFor(b, s, ContentTypeProtobuf)
		for range b.N {
			l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(l.Items) != n {
				b.Fatal(err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/list")
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pods/s")
	})
}

// BenchmarkWatchReplay measures the server's watch path alone: a raw client
// that discards bytes reads 50k MODIFIED events from history (the first
// iteration also encodes them; bookmarks keep bytes flowing so the reader
// never blocks after the last event).
func BenchmarkWatchReplay(b *testing.B) {
	const pods, events = 1000, 50000
	s := startServer(b, Config{BookmarkInterval: 50 * time.Millisecond})
	loadParallel(b, s, pods)
	from := s.ResourceVersion()
	for i := range events {
		if _, err := s.Modify(fmt.Sprintf("ns-%d", i%pods%50), fmt.Sprintf("pod-%06d", i%pods), func(p *corev1.Pod) {
			p.Annotations["i"] = strconv.Itoa(i)
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, mt := range mediaTypes {
		b.Run("contentType="+mt.name, func(b *testing.B) {
			for range b.N {
				url := fmt.Sprintf("%s/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=600&allowWatchBookmarks=true", s.URL(), from)
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Accept", mt.mediaType)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				before := s.Stats().EventsSent
				br := bufio.NewReaderSize(resp.Body, 1<<20)
				buf := make([]byte, 1<<20)
				for s.Stats().EventsSent-before < events {
					if _, err := br.Read(buf); err != nil {
						b.Fatal(err)
					}
				}
				resp.Body.Close()
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkInformerEvents measures MODIFIED events per second delivered to
// one client-go informer while a writer churns as fast as it can.
func BenchmarkInformerEvents(b *testing.B) {
	const pods = 10000
	for _, mt := range mediaTypes {
		b.Run("contentType="+mt.name, func(b *testing.B) {
			s := startServer(b, Config{})
			loadParallel(b, s, pods)
			cs := clientFor(b, s, mt.mediaType)
			inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fieldsEverything()),
				&corev1.Pod{}, 0, cache.Indexers{})
			var updates atomic.Int64
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updates.Add(1) }})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }() // goroutine: informer under benchmark.
			defer func() { cancel(); <-done }()
			cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

			events := 20000 * b.N
			b.ResetTimer()
			start := time.Now()
			for i := range events {
				if _, err := s.Modify(fmt.Sprintf("ns-%d", i%pods%50), fmt.Sprintf("pod-%06d", i%pods), func(p *corev1.Pod) {
					p.Annotations["i"] = strconv.Itoa(i)
				}); err != nil {
					b.Fatal(err)
				}
			}
			wrote := time.Since(start)
			for updates.Load() < int64(events) {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(events)/wrote.Seconds(), "writes/s")
			st := s.Stats()
			b.ReportMetric(float64(st.WatchesSlowClosed), "slow-closes")
		})
	}
}

func fieldsEverything() fields.Selector { return fields.Everything() }

// BenchmarkInformerSync100k measures how long client-go's informer takes
// to sync 100k pods over protobuf, by WatchList stream and by LIST.
func BenchmarkInformerSync100k(b *testing.B) {
	const n = 100000
	s := startServer(b, Config{})
	loadParallel(b, s, n)
	rawGet(b, s.URL()+"/api/v1/pods", ContentTypeProtobuf) // encode once
	for _, watchList := range []bool{true, false} {
		b.Run(fmt.Sprintf("contentType=protobuf/watchList=%v", watchList), func(b *testing.B) {
			clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, watchList)
			cs := clientFor(b, s, ContentTypeProtobuf)
			for range b.N {
				inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fieldsEverything()),
					&corev1.Pod{}, 0, cache.Indexers{})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); inf.RunWithContext(ctx) }() // goroutine: informer under benchmark.
				cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
				if got := len(inf.GetStore().ListKeys()); got != n {
					b.Fatalf("synced %d pods", got)
				}
				cancel()
				<-done
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sync")
		})
	}
}

// BenchmarkModify measures the in-process write path alone: one Modify of a
// pod (copy, change, new version, publish) with no watcher connected.
func BenchmarkModify(b *testing.B) {
	const pods = 10000
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	loadParallel(b, s, pods)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Modify(fmt.Sprintf("ns-%d", i%pods%50), fmt.Sprintf("pod-%06d", i%pods), func(p *corev1.Pod) {
			p.Annotations["i"] = "x"
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
