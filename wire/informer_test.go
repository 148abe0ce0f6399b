package wire_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// faultProxy forwards to apisim and spoils chosen responses: the n-th watch
// or list response (counting from 1) is cut after a number of bytes, or has
// garbage written there instead of the rest.
type faultProxy struct {
	target *url.URL
	mu     sync.Mutex
	watchN int
	listN  int
	faults map[string]fault // "watch#2", "list#1"
	spoilt int
}

type fault struct {
	after   int
	garbage bool
}

func newFaultProxy(t *testing.T, s *apisim.Server, faults map[string]fault) (*faultProxy, *rest.Config) {
	u, _ := url.Parse(s.URL())
	p := &faultProxy{target: u, faults: faults}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	cfg := s.RESTConfig()
	cfg.Host = srv.URL
	return p, cfg
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := ""
	if q := r.URL.Query(); q.Get("watch") == "true" || q.Get("watch") == "1" {
		p.mu.Lock()
		p.watchN++
		key = fmt.Sprintf("watch#%d", p.watchN)
		p.mu.Unlock()
	} else {
		p.mu.Lock()
		p.listN++
		key = fmt.Sprintf("list#%d", p.listN)
		p.mu.Unlock()
	}
	p.mu.Lock()
	f, spoil := p.faults[key]
	p.mu.Unlock()
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.target.String()+r.URL.RequestURI(), nil)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	flusher := w.(http.Flusher)
	buf := make([]byte, 4096)
	written := 0
	for {
		n, err := resp.Body.Read(buf)
		if spoil && written+n >= f.after {
			w.Write(buf[:f.after-written])
			p.mu.Lock()
			p.spoilt++
			p.mu.Unlock()
			if f.garbage {
				w.Write([]byte("\x00\x00\x00\x05garbage{]"))
				flusher.Flush()
				return
			}
			flusher.Flush()
			panic(http.ErrAbortHandler) // cut the connection mid-frame
		}
		if n > 0 {
			w.Write(buf[:n])
			flusher.Flush()
			written += n
		}
		if err != nil {
			return
		}
	}
}

type informerUnderTest interface {
	RunWithContext(ctx context.Context)
	HasSynced() bool
	GetStore() cache.Store
}

// TestInformersEndToEnd runs client-go's informer and pipeline's over wire
// against apisim behind a proxy that cuts and corrupts responses, for
// protobuf and JSON, WatchList on and off, with churn and a compaction that
// forces a relist; the cache ends equal to the server's state.
func TestInformersEndToEnd(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	for _, watchList := range []bool{true, false} {
		for _, ct := range contentTypes() {
			for _, impl := range []string{"client-go", "pipeline"} {
				name := fmt.Sprintf("watchlist=%v/%s/informer=%s", watchList, ctName(ct), impl)
				t.Run(name, func(t *testing.T) {
					clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
					s := startSim(t, 300, apisim.Config{BookmarkInterval: 100 * time.Millisecond})
					faults := map[string]fault{
						"watch#1": {after: 40000},               // mid-frame cut during the initial state or first events
						"watch#2": {after: 3000, garbage: true}, // garbage after a few bytes
						"list#1":  {after: 50000},               // a list cut mid-item (LIST+WATCH only)
					}
					proxy, cfg := newFaultProxy(t, s, faults)
					if ct == wire.Protobuf {
						cfg.ContentType = apisim.ContentTypeProtobuf
					}
					opts := []wire.Option{wire.WithContentType(ct), wire.WithWorkers(2)}
					diet := impl == "pipeline" // the full diet on one of the two informers
					if diet {
						opts = append(opts, wire.WithDiet(), wire.WithSharedValues())
					}
					lw := newPodLW(t, cfg, "", opts...)
					var inf informerUnderTest
					if impl == "client-go" {
						inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
					} else {
						inf = pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
					}
					ctx, cancel := context.WithCancel(context.Background())
					var wg sync.WaitGroup
					wg.Add(1)
					go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
					defer func() { cancel(); wg.Wait() }()
					if !cache.WaitForCacheSync(ctxTimeout(t, time.Minute).Done(), inf.HasSynced) {
						t.Fatal("not synced")
					}
					// Churn until both watch faults have struck (the first watch
					// may open after a first batch), then compact so that the
					// next watch gets 410 and the reflector relists.
					spoilt := func() int { proxy.mu.Lock(); defer proxy.mu.Unlock(); return proxy.spoilt }
					deadline := time.Now().Add(time.Minute)
					for i := 0; spoilt() < 2; i += 30 {
						if time.Now().After(deadline) {
							t.Fatalf("only %d responses spoilt", spoilt())
						}
						churn(t, s, i, 30)
						time.Sleep(20 * time.Millisecond)
					}
					s.Compact(s.ResourceVersion())
					s.DropWatches()
					churn(t, s, 100000, 30)
					want := func(p *corev1.Pod) {}
					if diet {
						want = func(p *corev1.Pod) { p.ManagedFields = nil }
					}
					waitEqual(t, s, inf.GetStore(), want)
				})
			}
		}
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// churn creates, updates and deletes pods (round i touches pod i%300;
// writes to a pod already deleted by an earlier round fail and are
// ignored).
func churn(t *testing.T, s *apisim.Server, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		ns, name := fmt.Sprintf("ns-%d", i%300%4), fmt.Sprintf("pod-%05d", i%300)
		switch i % 3 {
		case 0:
			s.Create(apisim.NewPod("ns-new", fmt.Sprintf("new-%d", i), int64(1000+i), apisim.PodOptions{ManagedFields: true}))
		case 1:
			s.Modify(ns, name, func(p *corev1.Pod) { p.Labels["churn"] = fmt.Sprint(i) })
		case 2:
			s.Delete(ns, name)
		}
	}
}

// waitEqual waits until the store holds exactly the server's pods, each
// changed by want first (on a copy).
func waitEqual(t *testing.T, s *apisim.Server, store cache.Store, want func(*corev1.Pod)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		diff := storeDiff(s, store, want)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache differs from the server: %s", diff)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func storeDiff(s *apisim.Server, store cache.Store, want func(*corev1.Pod)) string {
	pods := s.List("")
	if got := len(store.List()); got != len(pods) {
		return fmt.Sprintf("%d objects, server %d", got, len(pods))
	}
	for _, p := range pods {
		obj, ok, _ := store.GetByKey(p.Namespace + "/" + p.Name)
		if !ok {
			return "missing " + p.Name
		}
		p = p.DeepCopy()
		want(p)
		if !apiequality.Semantic.DeepEqual(p, obj) {
			return "differs: " + p.Name
		}
	}
	return ""
}

// TestTransformWithSharing: with WithSharing an informer's transform
// changes a pod's metadata in place, and its spec or status on a copy
// (doc.go, "Transforms"). This one trims the metadata of every version in
// place and, while a label is odd, the spec and status on a copy, so that
// no trimmed spec may reach the next version; every cached pod must equal
// the transform of the server's, through label updates that leave spec and
// status alone (reused from the previous version, trimmed in place or not),
// while a reader walks the cache (-race). Trimming the spec in place
// instead (pod.Spec.Tolerations = nil), the decoder reuses the trimmed spec
// for the next version, and the test fails.
func TestTransformWithSharing(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	transform := func(p *corev1.Pod) *corev1.Pod {
		p.ManagedFields = nil
		delete(p.Annotations, "prometheus.io/path")
		if n, _ := strconv.Atoi(p.Labels["round"]); n%2 == 0 {
			return p
		}
		q := *p
		q.Spec.Tolerations = nil
		q.Status.Conditions = nil
		return &q
	}
	for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON} {
		for _, impl := range []string{"client-go", "pipeline"} {
			t.Run(ctName(ct)+"/informer="+impl, func(t *testing.T) {
				s := startSim(t, 200, apisim.Config{BookmarkInterval: 100 * time.Millisecond})
				lw := newPodLW(t, restConfig(s, ct), "", wire.WithContentType(ct), wire.WithWorkers(2), wire.WithDiet())
				var inf cache.SharedIndexInformer
				if impl == "client-go" {
					inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
				} else {
					inf = pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
				}
				err := inf.SetTransform(func(obj any) (any, error) {
					if p, ok := obj.(*corev1.Pod); ok {
						return transform(p), nil
					}
					return obj, nil // a tombstone
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
				go func() { // reads every cached pod whole
					defer wg.Done()
					for ctx.Err() == nil {
						for _, obj := range inf.GetStore().List() {
							_ = obj.(*corev1.Pod).DeepCopy()
						}
						time.Sleep(time.Millisecond)
					}
				}()
				defer func() { cancel(); wg.Wait() }()
				if !cache.WaitForCacheSync(ctxTimeout(t, time.Minute).Done(), inf.HasSynced) {
					t.Fatal("not synced")
				}
				for round := 1; round <= 4; round++ {
					for i := range 200 {
						s.Modify(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("pod-%05d", i), func(p *corev1.Pod) { p.Labels["round"] = strconv.Itoa(round) })
					}
					waitEqual(t, s, inf.GetStore(), func(p *corev1.Pod) { *p = *transform(p) })
				}
			})
		}
	}
}
