package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/replicas/rangelw"
	"github.com/shardinformer/shardinformer/shardselector"
)

// ledger records every handler call of every replica: which replica has
// each key in view, failing on a key in two views at once, and each
// replica's view (key → resourceVersion).
type ledger struct {
	t      *testing.T
	mu     sync.Mutex
	holder map[string]string            // key → replica
	views  map[string]map[string]string // replica → key → rv
	calls  map[string]int
}

type recorder struct {
	l    *ledger
	name string
}

func (r recorder) set(obj any) {
	p := obj.(*corev1.Pod)
	key := p.Namespace + "/" + p.Name
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.calls[r.name]++
	if h, ok := r.l.holder[key]; ok && h != r.name {
		r.l.t.Errorf("%s handled by %s while in %s's view", key, r.name, h)
	}
	r.l.holder[key] = r.name
	r.l.views[r.name][key] = p.ResourceVersion
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
	defer r.l.mu.Unlock()
	r.l.calls[r.name]++
	if h := r.l.holder[key]; h != r.name {
		r.l.t.Errorf("%s: delete of %s held by %q", r.name, key, h)
	}
	delete(r.l.holder, key)
	delete(r.l.views[r.name], key)
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
// ShardedListAndWatch gate on and off.
func TestReplicas(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprint("gate=", sharded), func(t *testing.T) { scenario(t, simBackend(t, sharded)) })
	}
}

// scenario runs three replicas in process, each with its own client, on
// 200 pods: after they converge, each replica's view (what its handler
// was told) is exactly the server's pods of its assigned slots and the
// views partition the server; churn keeps that true; one replica stops
// (hands over and deletes its Lease) and a fourth joins, and again the
// views converge to the new assignment, the stopped replica's view being
// empty. Throughout, no key is in two replicas' views at once (checked at
// every handler call). With a server that applies shardSelector no object
// is dropped on the client; without, the fallback engages and drops
// objects.
func scenario(t *testing.T, b backend) {
	for i := range 200 {
		if err := b.create(apisim.NewPod(fmt.Sprint("ns-", i%4), fmt.Sprint("pod-", i), int64(i), apisim.PodOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	l := &ledger{t: t, holder: map[string]string{}, views: map[string]map[string]string{}, calls: map[string]int{}}
	const slots = 8
	type running struct {
		cancel context.CancelFunc
		done   chan error
	}
	run := map[string]running{}
	var fallbacks, dropped atomic.Int64
	hooks := rangelw.Hooks{Fallback: func() { fallbacks.Add(1) }, Dropped: func(n int) { dropped.Add(int64(n)) }}
	start := func(name string) {
		cs, err := kubernetes.NewForConfig(b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		l.views[name] = map[string]string{}
		l.mu.Unlock()
		r, err := New(Config{
			Members: members.Config{Leases: cs.CoordinationV1().Leases("ctrl"), Group: "g", Identity: name,
				LeaseDuration: 10 * time.Second, RenewDeadline: 6 * time.Second, RenewInterval: 100 * time.Millisecond},
			Slots: slots,
			Inner: &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return cs.CoreV1().Pods("").List(ctx, o)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return cs.CoreV1().Pods("").Watch(ctx, o)
				},
			},
			NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer {
				return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
			},
			Handler: recorder{l, name},
			Hooks:   hooks,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		run[name] = running{cancel, done}
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
	converge := func(stage string) {
		t.Helper()
		live := slices.Sorted(maps.Keys(run))
		a, _ := replicas.Assign(live, slots)
		var got, want map[string]map[string]string
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
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
	churn(0)
	converge("churn")
	stop("r1")
	start("r3")
	churn(1)
	converge("r1 left, r3 joined")
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
		"members":     {Members: members.Config{Group: "g"}, Inner: lw, NewInformer: inf, Handler: h},
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
	l := &ledger{t: t, holder: map[string]string{}, views: map[string]map[string]string{"r": {}}, calls: map[string]int{}}
	var mu sync.Mutex
	var tripped atomic.Bool
	fenced := false
	g := &gate{h: recorder{l, "r"}, mu: &mu, fenced: func() bool { return fenced }, tripped: &tripped, active: true, seen: map[string]any{}}
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
