package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/handover"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/replicas/rangelw"
	"github.com/shardinformer/shardinformer/shardselector"
)

// ledger records every handler call of every replica: which replica has
// each key in view, failing on a key in two views at once, on two calls
// for one key at once, and on a key's resourceVersion going backwards in
// a view; each replica's view (key → resourceVersion); and how many calls
// of a replica overlapped at most.
type ledger struct {
	t        *testing.T
	mu       sync.Mutex
	holder   map[string]string            // key → replica
	views    map[string]map[string]string // replica → key → rv
	calls    map[string]int
	busy     map[string]bool // "replica key" while a call for it runs
	inflight map[string]int  // replica → calls running
	overlap  map[string]int  // replica → most calls running at once
}

func newLedger(t *testing.T) *ledger {
	return &ledger{t: t, holder: map[string]string{}, views: map[string]map[string]string{}, calls: map[string]int{},
		busy: map[string]bool{}, inflight: map[string]int{}, overlap: map[string]int{}}
}

type recorder struct {
	l    *ledger
	name string
}

// enter records the start of a call for key. REQUIRES: l.mu held.
func (r recorder) enter(key string) {
	l := r.l
	l.calls[r.name]++
	if l.busy[r.name+" "+key] {
		l.t.Errorf("%s: two calls for %s at once", r.name, key)
	}
	l.busy[r.name+" "+key] = true
	l.inflight[r.name]++
	l.overlap[r.name] = max(l.overlap[r.name], l.inflight[r.name])
}

// leave lets other calls run, then records the end of the call for key.
func (r recorder) leave(key string) {
	goruntime.Gosched()
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	delete(r.l.busy, r.name+" "+key)
	r.l.inflight[r.name]--
}

func (r recorder) set(obj any) {
	p := obj.(*corev1.Pod)
	key := p.Namespace + "/" + p.Name
	r.l.mu.Lock()
	r.enter(key)
	if h, ok := r.l.holder[key]; ok && h != r.name {
		r.l.t.Errorf("%s handled by %s while in %s's view", key, r.name, h)
	}
	if old, ok := r.l.views[r.name][key]; ok && rvLess(p.ResourceVersion, old) {
		r.l.t.Errorf("%s: %s went back from resourceVersion %s to %s", r.name, key, old, p.ResourceVersion)
	}
	r.l.holder[key] = r.name
	r.l.views[r.name][key] = p.ResourceVersion
	r.l.mu.Unlock()
	r.leave(key)
}

func rvLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

func (r recorder) OnAdd(obj any, _ bool)  { r.set(obj) }
func (r recorder) OnUpdate(_, newObj any) { r.set(newObj) }
func (r recorder) OnDelete(obj any) {
	var key string
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		key = o.Key
	case *corev1.Pod:
		key = o.Namespace + "/" + o.Name
	}
	r.l.mu.Lock()
	r.enter(key)
	if h := r.l.holder[key]; h != r.name {
		r.l.t.Errorf("%s: delete of %s held by %q", r.name, key, h)
	}
	delete(r.l.holder, key)
	delete(r.l.views[r.name], key)
	r.l.mu.Unlock()
	r.leave(key)
}

// forget drops a killed replica from the ledger: its memory is gone.
func (l *ledger) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, h := range l.holder {
		if h == name {
			delete(l.holder, key)
		}
	}
	clear(l.views[name])
}

// decoded counts what one client received of the pods resource: objects
// (listed, or in watch events other than bookmarks and errors) and
// response bytes.
type decoded struct{ objects, bytes atomic.Int64 }

func (d *decoded) reset() { d.objects.Store(0); d.bytes.Store(0) }

// client returns a clientset on cfg whose pod responses d counts.
func (d *decoded) client(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt, d} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// podLW lists and watches every pod through cs, counting objects in d.
func (d *decoded) podLW(cs *kubernetes.Clientset) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := cs.CoreV1().Pods("").List(ctx, o)
			if err == nil {
				d.objects.Add(int64(len(l.Items)))
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := cs.CoreV1().Pods("").Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if e.Type != watch.Bookmark && e.Type != watch.Error {
					d.objects.Add(1)
				}
				return e, true
			}), nil
		},
	}
}

type countingRT struct {
	rt http.RoundTripper
	d  *decoded
}

func (c countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "/pods") {
		resp.Body = countingBody{resp.Body, c.d}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	d *decoded
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.d.bytes.Add(int64(n))
	return n, err
}

// backend is the API server a scenario runs against: its REST config,
// its pods as they are now, and writes.
type backend struct {
	cfg    *rest.Config
	list   func() []*corev1.Pod
	create func(*corev1.Pod) error
	modify func(namespace, name string) error // sets a label
	// sharded: the server applies shardSelector, so nothing may be
	// filtered on the client; otherwise the fallback must engage.
	sharded bool
}

func simBackend(t *testing.T, sharded bool) backend {
	s, err := apisim.New(apisim.Config{ShardedListAndWatch: sharded, BookmarkInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := s.RESTConfig()
	cfg.ContentType = apisim.ContentTypeProtobuf
	return backend{
		cfg:     cfg,
		sharded: sharded,
		list:    func() []*corev1.Pod { return s.List("") },
		create:  func(p *corev1.Pod) error { _, err := s.Create(p); return err },
		modify: func(ns, name string) error {
			_, err := s.Modify(ns, name, func(p *corev1.Pod) { p.Labels["churn"] = "yes" })
			return err
		},
	}
}

// TestReplicas runs the scenario against apisim with the
// ShardedListAndWatch gate on and off, each replica on client-go's
// informers (handler calls serialised) and on the pipeline's (parallel
// handler calls, ordered per key).
func TestReplicas(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		for _, inf := range []string{"client-go", "pipeline"} {
			t.Run(fmt.Sprintf("gate=%v/informer=%s", sharded, inf), func(t *testing.T) {
				scenario(t, simBackend(t, sharded), inf == "pipeline")
			})
		}
	}
}

// scenario runs three replicas in process, each with its own client, on
// 200 pods: after they converge, each replica's view (what its handler
// was told) is exactly the server's pods of its assigned slots and the
// views partition the server; churn keeps that true; one replica stops
// (hands over and deletes its Lease) and a fourth joins, and again the
// views converge to the new assignment, the stopped replica's view being
// empty; then one replica is killed (no hand-over, its Lease left behind
// claiming its slots) and the others converge once the Lease has expired.
// Throughout, no key is in two replicas' views at once, no key is in two
// calls of one replica at once, and no key's resourceVersion goes back
// (checked at every handler call). With a server that applies
// shardSelector no object is dropped on the client, and during the first
// churn each replica decodes exactly the events of its own slots (about a
// third of the stream); without, the fallback engages, objects are
// dropped, and each replica decodes at least the whole stream (once per
// slot informer). parallel: pipeline informers and Workers = 4. When the
// replicas have stopped, none of their goroutines is left.
func scenario(t *testing.T, b backend, parallel bool) {
	testkit.CheckLeaks(t, "shardinformer/pipeline.", "shardinformer/replicas/")
	for i := range 200 {
		if err := b.create(apisim.NewPod(fmt.Sprint("ns-", i%4), fmt.Sprint("pod-", i), int64(i), apisim.PodOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	l := newLedger(t)
	const slots = 8
	const leaseDuration = 4 * time.Second
	type running struct {
		r      *Runner
		cancel context.CancelFunc
		done   chan error
		dec    *decoded
	}
	run := map[string]running{}
	var fallbacks, dropped atomic.Int64
	hooks := rangelw.Hooks{Fallback: func() { fallbacks.Add(1) }, Dropped: func(n int) { dropped.Add(int64(n)) }}
	newInformer := func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	}
	workers := 0
	if parallel {
		newInformer = func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}, pipeline.WithShards(4))
		}
		workers = 4
	}
	start := func(name string) {
		dec := &decoded{}
		cs := dec.client(t, b.cfg)
		l.mu.Lock()
		l.views[name] = map[string]string{}
		l.mu.Unlock()
		r, err := New(Config{
			Members: members.Config{Leases: cs.CoordinationV1().Leases("ctrl"), Group: "g", Identity: name,
				LeaseDuration: leaseDuration, RenewDeadline: 2500 * time.Millisecond, RenewInterval: 100 * time.Millisecond},
			Slots:       slots,
			Inner:       dec.podLW(cs),
			NewInformer: newInformer,
			Handler:     recorder{l, name},
			Workers:     workers,
			Hooks:       hooks,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		run[name] = running{r, cancel, done, dec}
	}
	stop := func(name string) {
		run[name].cancel()
		if err := <-run[name].done; err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		delete(run, name)
	}
	defer func() {
		for name := range run {
			stop(name)
		}
	}()
	leaseClient, err := kubernetes.NewForConfig(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// converge waits until the running replicas' Leases claim an exactly
	// balanced partition (Sticky of the claims is the claims) and each
	// replica's view is exactly the server's pods of the slots it claims,
	// and returns that assignment.
	converge := func(stage string) replicas.Assignment {
		t.Helper()
		live := slices.Sorted(maps.Keys(run))
		var a replicas.Assignment
		var got, want map[string]map[string]string
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := leaseClient.CoordinationV1().Leases("ctrl").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			published := map[string]handover.Published{}
			for _, l := range list.Items {
				if name := *l.Spec.HolderIdentity; run[name].r != nil {
					if published[name], err = handover.Decode(l.Annotations, slots); err != nil {
						return false, err
					}
				}
			}
			a = handover.Target(live, slots, published)
			for _, name := range live {
				if p, ok := published[name]; !ok || !slices.Equal(p.Claimed, ownedBits(a, name)) {
					return false, nil
				}
			}
			want = map[string]map[string]string{}
			for _, name := range live {
				want[name] = map[string]string{}
			}
			for _, p := range b.list() {
				owner, _ := a.Owner(shardselector.Hash(string(p.UID)))
				want[owner][p.Namespace+"/"+p.Name] = p.ResourceVersion
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			got = map[string]map[string]string{}
			for _, name := range live {
				got[name] = maps.Clone(l.views[name])
			}
			return maps.EqualFunc(got, want, maps.Equal), nil
		})
		if err != nil {
			for _, name := range live {
				t.Errorf("%s: %s holds %d keys, owns %d", stage, name, len(got[name]), len(want[name]))
			}
			t.FailNow()
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for name, v := range l.views {
			if _, ok := run[name]; !ok && len(v) != 0 {
				t.Fatalf("%s: stopped replica %s still holds %d keys", stage, name, len(v))
			}
		}
		return a
	}
	// The reference: one plain informer over every pod, to count what a
	// replica that is not sharded decodes.
	ref := &decoded{}
	refInf := cache.NewSharedIndexInformer(ref.podLW(ref.client(t, b.cfg)), &corev1.Pod{}, 0, cache.Indexers{})
	refCtx, refCancel := context.WithCancel(context.Background())
	refDone := make(chan struct{})
	go func() { defer close(refDone); refInf.RunWithContext(refCtx) }()
	defer func() { refCancel(); <-refDone }()
	if !cache.WaitForCacheSync(refCtx.Done(), refInf.HasSynced) {
		t.Fatal("reference informer did not sync")
	}

	for _, name := range []string{"r0", "r1", "r2"} {
		start(name)
	}
	converge("start")
	churn := func(round int) {
		for i := range 30 {
			if err := b.create(apisim.NewPod("ns-new", fmt.Sprintf("new-%d-%d", round, i), int64(1000*round+i), apisim.PodOptions{})); err != nil {
				t.Fatal(err)
			}
			n := 30*round + i
			if err := b.modify(fmt.Sprint("ns-", n%4), fmt.Sprint("pod-", n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ref.reset()
	for _, r := range run {
		r.dec.reset()
	}
	churn(0)
	a := converge("churn")
	checkDecoded(t, b, ref, map[string]*decoded{"r0": run["r0"].dec, "r1": run["r1"].dec, "r2": run["r2"].dec}, a)

	stop("r1")
	start("r3")
	churn(1)
	converge("r1 left, r3 joined")

	// Kill r2: no tombstones, no hand-over, its Lease stays and claims its
	// slots until the others see it expire.
	killed := time.Now()
	run["r2"].r.crash.Store(true)
	stop("r2")
	l.forget("r2")
	if _, err := run["r0"].dec.client(t, b.cfg).CoordinationV1().Leases("ctrl").Get(context.Background(), "g-r2", metav1.GetOptions{}); err != nil {
		t.Fatalf("killed replica's Lease: %v", err)
	}
	churn(2)
	converge("r2 killed")
	t.Logf("r2's slots taken over %v after the kill (lease duration %v)", time.Since(killed).Round(100*time.Millisecond), leaseDuration)

	if b.sharded != (fallbacks.Load() == 0 && dropped.Load() == 0) {
		t.Errorf("server filters: %v; %d fallbacks, %d objects dropped on the client", b.sharded, fallbacks.Load(), dropped.Load())
	}
	t.Logf("%d slot informers fell back, %d objects dropped on the client", fallbacks.Load(), dropped.Load())
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range []string{"r0", "r2", "r3"} {
		if l.calls[name] == 0 {
			t.Errorf("%s handled nothing", name)
		}
	}
	t.Logf("most handler calls at once per replica: %v", l.overlap)
}

// checkDecoded checks what each of the replicas r0, r1, r2 decoded during
// the first churn against the reference informer and against the churn's
// events in each replica's slots: each replica owns ⌊slots/N⌋ or
// ⌈slots/N⌉ slots; with server-side filtering each replica decodes its own
// events and no more (up to a tenth of the stream for a relist); without,
// at least the whole stream.
func checkDecoded(t *testing.T, b backend, ref *decoded, dec map[string]*decoded, a replicas.Assignment) {
	t.Helper()
	slots := a.Slots()
	mine := map[string]int64{}
	for _, p := range b.list() {
		if p.Namespace == "ns-new" && strings.HasPrefix(p.Name, "new-0-") || p.Labels["churn"] == "yes" {
			owner, _ := a.Owner(shardselector.Hash(string(p.UID)))
			mine[owner]++
		}
	}
	// Exact balance bounds what a replica decodes with server-side
	// filtering to the events of ⌈slots/N⌉ of the slots.
	for name := range dec {
		if n, lo := len(a.OwnedSlots(name)), slots/len(dec); n != lo && (n != lo+1 || slots%len(dec) == 0) {
			t.Errorf("%s owns %d of %d slots", name, n, slots)
		}
	}
	stream := ref.objects.Load()
	if stream != 60 {
		t.Errorf("reference decoded %d objects during the churn, want its 60 events", stream)
	}
	for _, name := range slices.Sorted(maps.Keys(dec)) {
		got := dec[name].objects.Load()
		t.Logf("%s decoded %d objects (%.2f of the stream; its slots had %d events), %d bytes (%.2f of the reference's %d)",
			name, got, float64(got)/float64(stream), mine[name], dec[name].bytes.Load(),
			float64(dec[name].bytes.Load())/float64(ref.bytes.Load()), ref.bytes.Load())
		if b.sharded && (got < mine[name] || got > mine[name]+stream/10) {
			t.Errorf("%s decoded %d objects, its slots had %d events", name, got, mine[name])
		}
		if !b.sharded && got < stream {
			t.Errorf("%s decoded %d objects without server-side filtering, want at least the stream's %d", name, got, stream)
		}
	}
}

// ownedBits returns, per slot of a, whether member owns it.
func ownedBits(a replicas.Assignment, member string) []bool {
	bits := make([]bool, a.Slots())
	for _, s := range a.OwnedSlots(member) {
		bits[s] = true
	}
	return bits
}

// TestConfig: each invalid Config is refused with an error.
func TestConfig(t *testing.T) {
	lw := &cache.ListWatch{}
	h := cache.ResourceEventHandlerFuncs{}
	inf := func(cache.ListerWatcher) cache.SharedIndexInformer { return nil }
	mc := members.Config{Group: "g", Identity: "a"}
	for name, cfg := range map[string]Config{
		"slots":       {Members: mc, Slots: 3, Inner: lw, NewInformer: inf, Handler: h},
		"no inner":    {Members: mc, NewInformer: inf, Handler: h},
		"no informer": {Members: mc, Inner: lw, Handler: h},
		"no handler":  {Members: mc, Inner: lw, NewInformer: inf},
		"annotations": {Members: members.Config{Group: "g", Identity: "a", Annotations: func() map[string]string { return nil }}, Inner: lw, NewInformer: inf, Handler: h},
		"readable":    {Members: members.Config{Group: "g", Identity: "a", Readable: func(map[string]string) error { return nil }}, Inner: lw, NewInformer: inf, Handler: h},
		"members":     {Members: members.Config{Group: "g"}, Inner: lw, NewInformer: inf, Handler: h},
		"workers": {Members: mc, Inner: lw, Handler: h, Workers: 2, NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestGateFenced: a gate passes events while not fenced; the first event
// that arrives fenced is refused and shuts the gate for good (and trips
// the Runner, whose next round stops every slot); close hands the handler
// a tombstone for each object it was told of and not told deleted, with
// the last state it saw.
func TestGateFenced(t *testing.T) {
	l := newLedger(t)
	l.views["r"] = map[string]string{}
	var tripped atomic.Bool
	fenced := false
	g := newGate(recorder{l, "r"}, func() bool { return fenced }, &tripped)
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	g.OnAdd(pod("a", "1"), true)
	g.OnAdd(pod("b", "1"), false)
	g.OnUpdate(pod("a", "1"), pod("a", "2"))
	g.OnDelete(pod("b", "1"))
	g.OnAdd(pod("c", "3"), false)
	if !maps.Equal(l.views["r"], map[string]string{"ns/a": "2", "ns/c": "3"}) || tripped.Load() {
		t.Fatalf("view %v, tripped %v", l.views["r"], tripped.Load())
	}
	fenced = true
	g.OnUpdate(pod("c", "3"), pod("c", "4"))
	fenced = false
	g.OnAdd(pod("d", "5"), false)
	if !tripped.Load() || l.views["r"]["ns/c"] != "3" || len(l.views["r"]) != 2 {
		t.Fatalf("after fencing: view %v, tripped %v", l.views["r"], tripped.Load())
	}
	g.close()
	if len(l.views["r"]) != 0 || len(l.holder) != 0 {
		t.Fatalf("after close: view %v", l.views["r"])
	}
}

// TestGateParallel: without serial, two calls for different keys run in
// the handler at once (each waits until the other has entered), and close
// waits for a call in flight before its tombstones, which cover the keys
// that call passed.
func TestGateParallel(t *testing.T) {
	var tripped atomic.Bool
	var mu sync.Mutex
	var log []string
	entered := make(chan string, 2)
	release := make(chan struct{})
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			name := obj.(*corev1.Pod).Name
			entered <- name
			<-release
			mu.Lock()
			log = append(log, "add "+name)
			mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			mu.Lock()
			log = append(log, "tombstone "+obj.(cache.DeletedFinalStateUnknown).Key)
			mu.Unlock()
		},
	}
	g := newGate(h, func() bool { return false }, &tripped)
	var calls sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		calls.Go(func() { g.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, false) })
	}
	<-entered
	<-entered // both calls are in the handler at once
	closed := make(chan struct{})
	go func() { g.close(); close(closed) }()
	for range 100 {
		goruntime.Gosched() // give a close that did not wait the chance to run first
	}
	close(release)
	<-closed
	calls.Wait()
	if len(log) != 4 || !strings.HasPrefix(log[0], "add ") || !strings.HasPrefix(log[1], "add ") ||
		!slices.Equal(slices.Sorted(slices.Values(log[2:])), []string{"tombstone ns/a", "tombstone ns/b"}) {
		t.Fatalf("calls: %q", log)
	}
	g.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}, false)
	if len(log) != 4 || tripped.Load() {
		t.Fatalf("a closed gate passed a call: %q", log)
	}
}

// TestRunLeavesNoGoroutine: one replica takes every slot and its handler
// sees every pod; once its context is cancelled, Run hands the slots back
// (every pod leaves the view), deletes its Lease and returns nil, and no
// goroutine of the Runner, its slot informers (client-go's or the
// pipeline's, with parallel handler calls) or its ListerWatchers is left.
func TestRunLeavesNoGoroutine(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprint("parallel=", parallel), func(t *testing.T) {
			testkit.CheckLeaks(t, "shardinformer/pipeline.", "shardinformer/replicas/", "k8s.io/client-go/tools/cache.")
			b := simBackend(t, true)
			for i := range 50 {
				if err := b.create(apisim.NewPod("ns", fmt.Sprint("pod-", i), int64(i), apisim.PodOptions{})); err != nil {
					t.Fatal(err)
				}
			}
			l := newLedger(t)
			cfg := soloConfig(t, b, l, 4)
			leases := cfg.Members.Leases
			if parallel {
				cfg.Workers = 4
				cfg.NewInformer = func(lw cache.ListerWatcher) cache.SharedIndexInformer {
					return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}, pipeline.WithShards(2))
				}
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			inView := func() int {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.views["r"])
			}
			if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
				func(context.Context) (bool, error) { return inView() == 50, nil }); err != nil {
				t.Fatalf("%d of 50 pods in view", inView())
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := inView(); n != 0 {
				t.Errorf("%d pods still in view after Run returned", n)
			}
			if _, err := leases.Get(context.Background(), "g-r", metav1.GetOptions{}); err == nil {
				t.Error("the Lease is still there after Run returned")
			}
			// Run has returned: its goroutines must be gone now, not later.
			if left := testkit.Goroutines("shardinformer/pipeline.", "shardinformer/replicas/", "k8s.io/client-go/tools/cache."); len(left) > 0 {
				t.Logf("%d goroutine(s) still finishing right after Run returned (CheckLeaks waits for them)", len(left))
			}
		})
	}
}

// soloConfig is the Config of a lone replica "r" over slots slots on b,
// on client-go's informers, its handler recording into l.
func soloConfig(t *testing.T, b backend, l *ledger, slots int) Config {
	l.views["r"] = map[string]string{}
	dec := &decoded{}
	cs := dec.client(t, b.cfg)
	return Config{
		Members: members.Config{Leases: cs.CoordinationV1().Leases("ctrl"), Group: "g", Identity: "r",
			LeaseDuration: 4 * time.Second, RenewDeadline: 2500 * time.Millisecond, RenewInterval: 50 * time.Millisecond},
		Slots:   slots,
		Inner:   dec.podLW(cs),
		Handler: recorder{l, "r"},
		NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		},
	}
}

// failingLeases refuses List while fail is set.
type failingLeases struct {
	coordinationv1client.LeaseInterface
	fail *atomic.Bool
}

func (f failingLeases) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if f.fail.Load() {
		return nil, errors.New("list refused")
	}
	return f.LeaseInterface.List(ctx, o)
}

// TestListFailure: a round whose renewal succeeds but whose list of
// Leases fails activates nothing — it cannot see the claims of peers —
// and the slot activates at the first round that lists again.
func TestListFailure(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/replicas/", "k8s.io/client-go/tools/cache.")
	b := simBackend(t, true)
	if err := b.create(apisim.NewPod("ns", "pod-0", 0, apisim.PodOptions{})); err != nil {
		t.Fatal(err)
	}
	l := newLedger(t)
	var fail atomic.Bool
	cfg := soloConfig(t, b, l, 1)
	cfg.Members.Leases = failingLeases{cfg.Members.Leases, &fail}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		if err := r.Run(ctx); err != nil { // one round, then stop everything and release
			t.Errorf("Run: %v", err)
		}
	})
	// Rounds on this goroutine, as Run's: start the cache, wait for it,
	// then Synced, then Claimed.
	r.round(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return r.slots[0].inf.HasSynced(), nil }); err != nil {
		t.Fatal("slot cache did not sync")
	}
	r.round(ctx)
	r.round(ctx)
	if p := r.hand.Phase(0); p != handover.Claimed {
		t.Fatalf("phase %v, want claimed", p)
	}
	fail.Store(true)
	r.round(ctx)
	if p := r.hand.Phase(0); p != handover.Claimed {
		t.Fatalf("after a round whose list failed: phase %v, want claimed", p)
	}
	fail.Store(false)
	r.round(ctx)
	if p := r.hand.Phase(0); p != handover.Active {
		t.Fatalf("after a round that listed: phase %v, want active", p)
	}
}
