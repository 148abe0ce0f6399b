//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/e2e/cluster"
)

// scenario is one configuration of the informers under test.
type scenario struct {
	media     string // mediaProtobuf, mediaJSON or mediaCBOR (needs a server with CBORServingAndStorage)
	watchList bool   // client-go feature gate WatchListClient
	transform bool   // SetTransform stripping managedFields
	selector  string // label selector of the informers ("" = all pods)
}

// harness runs every registered impl side by side in one fresh namespace of
// a real cluster and checks them against the server.
type harness struct {
	t     *testing.T
	cl    *cluster.Cluster
	admin kubernetes.Interface
	ns    string
	sc    scenario
	runs  []*run
	// listed is the server's pods by key from the last serverState.
	listed map[string]*corev1.Pod
	// clientBase, if not nil, is the configuration the informers' clients
	// start from instead of the cluster's (TestFaults: the fault proxy's).
	clientBase func() *rest.Config
}

// informerBase is the configuration the informers' clients start from.
func (h *harness) informerBase() *rest.Config {
	if h.clientBase != nil {
		return h.clientBase()
	}
	return h.cl.RESTConfig()
}

// run is one impl's informer in a harness.
type run struct {
	impl   impl
	lw     counters
	media  *contentTypeCounter
	inf    cache.SharedIndexInformer
	recs   []*recorder
	regs   []cache.ResourceEventHandlerRegistration
	synced time.Duration
	stop   chan struct{}
	done   chan struct{}
}

func newHarness(t *testing.T, cl *cluster.Cluster, sc scenario) *harness {
	t.Helper()
	// The reflector reads the gate when it is created (in Run), so the
	// override must cover the whole test.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, sc.watchList)
	// client-go speaks CBOR only with this gate (stock informers and the
	// clientset's decoding of CBOR error bodies alike).
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, sc.media == mediaCBOR)
	admin, err := kubernetes.NewForConfig(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cl: cl, admin: admin, sc: sc, ns: "e2e-" + rand.String(8)}
	_, err = admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(h.stopInformers)
	return h
}

func (h *harness) tweak(opts *metav1.ListOptions) {
	if h.sc.selector != "" {
		opts.LabelSelector = h.sc.selector
	}
}

// seed creates n pods before the informers start, so that the initial
// LIST/WatchList carries data.
func (h *harness) seed(n int) {
	h.t.Helper()
	c := &churn{client: h.admin, ns: h.ns}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				p := newPod(h.ns, i, 0)
				p.Name = fmt.Sprintf("seed-%06d", i)
				err := c.retry(h.t.Context(), func(ctx context.Context) error {
					_, err := h.admin.CoreV1().Pods(h.ns).Create(ctx, p, metav1.CreateOptions{})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatalf("seeding: %v", err)
	}
}

func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// startInformers starts one informer per impl and waits until each and all
// of its handlers have synced.
func (h *harness) startInformers() {
	h.t.Helper()
	var sel labels.Selector
	if h.sc.selector != "" {
		var err error
		if sel, err = labels.Parse(h.sc.selector); err != nil {
			h.t.Fatal(err)
		}
	}
	for _, im := range impls {
		r := &run{impl: im}
		if im.factory != nil {
			tap := &httpTap{}
			cfg, media := informerConfig(h.informerBase(), h.sc.media, tap.wrap)
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				h.t.Fatal(err)
			}
			r.lw, r.media = tap, media
			r.inf, err = im.factory(factoryArgs{client: client, cfg: cfg, ns: h.ns, media: h.sc.media, selector: h.sc.selector, tweak: h.tweak})
			if err != nil {
				h.t.Fatalf("%s: %v", im.name, err)
			}
		} else {
			client, media, err := informerClient(h.informerBase(), h.sc.media)
			if err != nil {
				h.t.Fatal(err)
			}
			inner, err := podLW(client, h.ns, h.sc.media, im.wire)
			if err != nil {
				h.t.Fatalf("%s: %v", im.name, err)
			}
			lw := newInstrumentedLW(inner, h.tweak)
			r.lw, r.media = lw, media
			r.inf = im.newInformer(lw, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		if h.sc.transform {
			if err := r.inf.SetTransform(stripManagedFields); err != nil {
				h.t.Fatalf("%s: SetTransform: %v", im.name, err)
			}
		}
		for _, hs := range im.handlers {
			rec := newRecorder(im.name + "/" + hs.name)
			rec.parallel, rec.delay = hs.parallel > 0, hs.delay
			rec.checkNoManagedFields, rec.selector = h.sc.transform, sel
			var (
				reg cache.ResourceEventHandlerRegistration
				err error
			)
			if hs.parallel > 0 {
				reg, err = im.addParallel(r.inf, rec, hs.parallel)
			} else {
				reg, err = r.inf.AddEventHandler(rec)
			}
			if err != nil {
				h.t.Fatalf("%s: adding handler: %v", rec.name, err)
			}
			r.recs, r.regs = append(r.recs, rec), append(r.regs, reg)
		}
		h.runs = append(h.runs, r)
	}
	start := time.Now()
	for _, r := range h.runs {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go func() { // informer goroutine: exits when r.stop closes
			defer close(r.done)
			r.inf.Run(r.stop)
		}()
	}
	pending := slices.Clone(h.runs)
	deadline := time.Now().Add(5 * time.Minute) // liveness bound, not a performance assertion
	for len(pending) > 0 {
		pending = slices.DeleteFunc(pending, func(r *run) bool {
			if !r.inf.HasSynced() {
				return false
			}
			for _, reg := range r.regs {
				if !reg.HasSynced() {
					return false
				}
			}
			r.synced = time.Since(start)
			return true
		})
		if time.Now().After(deadline) {
			for _, r := range pending {
				h.t.Errorf("%s: not synced after 5m", r.impl.name)
			}
			h.t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range h.runs {
		h.t.Logf("%-36s initial sync %v (%d objects)", r.impl.name, r.synced.Round(time.Millisecond), len(r.inf.GetStore().ListKeys()))
	}
}

func (h *harness) stopInformers() {
	for _, r := range h.runs {
		if r.stop == nil {
			continue
		}
		select {
		case <-r.stop:
			continue
		default:
		}
		close(r.stop)
	}
	for _, r := range h.runs {
		if r.done == nil {
			continue
		}
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			h.t.Errorf("%s: Run did not return within a minute of stop", r.impl.name)
		}
	}
}

// churn runs the workload; fault, if set, is injected a third of the way in.
func (h *harness) churn(pods int, fault func(ctx context.Context)) {
	h.t.Helper()
	c := &churn{client: h.admin, ns: h.ns, pods: pods, writers: envInt(h.t, envWriters, 16), atOps: fault}
	start := time.Now()
	// A liveness bound: writers retry through faults, but not forever.
	ctx, cancel := context.WithTimeout(h.t.Context(), 20*time.Minute)
	defer cancel()
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	errc := make(chan error, 1)
	go func() { errc <- c.run(ctx) }() // churn goroutine: returns when the writers are done
	for waiting := true; waiting; {
		select {
		case err := <-errc:
			if err != nil {
				h.t.Fatalf("churn: %v (%d of %d writes done)", err, c.ops.Load(), c.totalOps())
			}
			waiting = false
		case <-progress.C:
			h.t.Logf("churn: %d of %d writes done, %d retries", c.ops.Load(), c.totalOps(), c.retries.Load())
		}
	}
	h.t.Logf("churn: %d pods, %d writes by %d writers in %v (%d retries)", pods, c.ops.Load(), c.writers, time.Since(start).Round(time.Millisecond), c.retries.Load())
}

// serverState lists the namespace (with the scenario's selector) and returns
// key -> resourceVersion; the pods are kept in h.listed.
func (h *harness) serverState() map[string]uint64 {
	h.t.Helper()
	opts := metav1.ListOptions{}
	h.tweak(&opts)
	var list *corev1.PodList
	c := &churn{}
	err := c.retry(h.t.Context(), func(ctx context.Context) error {
		var err error
		list, err = h.admin.CoreV1().Pods(h.ns).List(ctx, opts)
		return err
	})
	if err != nil {
		h.t.Fatalf("listing final state: %v", err)
	}
	out := make(map[string]uint64, len(list.Items))
	h.listed = make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[h.ns+"/"+list.Items[i].Name] = podRV(&list.Items[i])
		h.listed[h.ns+"/"+list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// objectDiff compares a cached pod with the server's at the same
// resourceVersion: equal (apiequality.Semantic) but for TypeMeta, which
// typed clients clear, and managedFields where the informer drops them
// (the wire's diet or the scenario's transform); with the diet they must
// be gone. It returns "" when they agree.
func (h *harness) objectDiff(r *run, cached, server *corev1.Pod) string {
	if r.impl.diet && len(cached.ManagedFields) > 0 {
		return "managedFields in the store although the wire's diet drops them"
	}
	a, b := *cached, *server // shallow copies: the cache's objects are not touched
	a.TypeMeta, b.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if r.impl.diet || h.sc.transform {
		a.ManagedFields, b.ManagedFields = nil, nil
	}
	if apiequality.Semantic.DeepEqual(&a, &b) {
		return ""
	}
	d := cmp.Diff(&b, &a)
	if len(d) > 2000 {
		d = d[:2000] + "…"
	}
	return "differs from the server's object (-server +cache):\n" + d
}

// storeDiff compares an informer's store with the server's state: keys and
// resourceVersions, and with objects set, each object with the server's
// (h.listed) where the resourceVersions agree.
func (h *harness) storeDiff(r *run, final map[string]uint64, limit int, objects bool) ([]string, int) {
	var out []string
	n := 0
	add := func(format string, args ...any) {
		n++
		if len(out) < limit {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	seen := 0
	for _, obj := range r.inf.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			add("store holds %T", obj)
			continue
		}
		key := p.Namespace + "/" + p.Name
		want, ok := final[key]
		switch {
		case !ok:
			add("%s: in the store at rv %s, not on the server", key, p.ResourceVersion)
			continue
		case podRV(p) != want:
			add("%s: store rv %s, server rv %d", key, p.ResourceVersion, want)
		case objects && h.listed[key] != nil:
			if d := h.objectDiff(r, p, h.listed[key]); d != "" {
				add("%s at rv %s: %s", key, p.ResourceVersion, d)
			}
		}
		if h.sc.transform && len(p.ManagedFields) > 0 {
			add("%s: managedFields in the store although the transform strips them", key)
		}
		seen++
	}
	if seen != len(final) {
		add("store has %d of the server's %d objects", seen, len(final))
	}
	if byNS, err := r.inf.GetIndexer().ByIndex(cache.NamespaceIndex, h.ns); err != nil {
		add("ByIndex(namespace): %v", err)
	} else if len(byNS) != len(final) {
		add("ByIndex(namespace, %s) has %d objects, server %d", h.ns, len(byNS), len(final))
	}
	return out, n
}

// converge waits until every informer's store and every handler's view equal
// the server's final state, then checks and logs everything. The wait is a
// liveness bound ($SHARDINFORMER_E2E_CONVERGE_SECONDS, default 300), not a
// performance assertion.
func (h *harness) converge(final map[string]uint64) {
	h.t.Helper()
	start := time.Now()
	converged := map[*run]time.Duration{}
	timeout := time.Duration(envInt(h.t, envConverge, 300)) * time.Second
	deadline := start.Add(timeout)
	lastReport := start
	for len(converged) < len(h.runs) && time.Now().Before(deadline) {
		if time.Since(lastReport) > 30*time.Second {
			lastReport = time.Now()
			var waiting []string
			for _, r := range h.runs {
				if _, ok := converged[r]; !ok {
					waiting = append(waiting, r.impl.name)
				}
			}
			h.t.Logf("converge: still waiting for %v", waiting)
		}
		for _, r := range h.runs {
			if _, ok := converged[r]; ok {
				continue
			}
			if _, n := h.storeDiff(r, final, 0, false); n > 0 {
				continue
			}
			done := true
			for _, rec := range r.recs {
				if _, n := rec.diff(final, 0); n > 0 {
					done = false
					break
				}
			}
			if done {
				converged[r] = time.Since(start)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range h.runs {
		name := r.impl.name
		if d, ok := converged[r]; ok {
			// Keys and resourceVersions agree; so must the objects.
			if diffs, n := h.storeDiff(r, final, 5, true); n > 0 {
				h.t.Errorf("%s: %d cached objects differ from the server's at the same resourceVersion:\n  %s", name, n, strings.Join(diffs, "\n  "))
			}
			h.t.Logf("%-36s converged %v after the writes ended; %d objects; lists=%d watches=%d watchlists=%d gone(410)=%d; responses protobuf=%d json=%d cbor=%d",
				name, d.Round(time.Millisecond), len(final), r.lw.Lists(), r.lw.Watches(), r.lw.WatchLists(), r.lw.Gone(), r.media.protobuf.Load(), r.media.json.Load(), r.media.cbor.Load())
		} else if diffs, n := h.storeDiff(r, final, 10, true); n > 0 {
			h.t.Errorf("%s: store not converged after %v, %d differences:\n  %s", name, timeout, n, strings.Join(diffs, "\n  "))
		}
		for _, rec := range r.recs {
			if _, ok := converged[r]; !ok {
				if diffs, n := rec.diff(final, 10); n > 0 {
					h.t.Errorf("%s: handler not converged, %d differences:\n  %s", rec.name, n, strings.Join(diffs, "\n  "))
				}
			}
			if v, n := rec.violations(); n > 0 {
				h.t.Errorf("%s: %d ordering/contract violations:\n  %s", rec.name, n, strings.Join(v, "\n  "))
			}
			h.t.Logf("    handler %-30s events=%d (adds=%d initial=%d updates=%d same-rv-updates=%d deletes=%d tombstones=%d)",
				rec.name, rec.events(), rec.adds.Load(), rec.initialAdds.Load(), rec.updates.Load(), rec.noopUpdates.Load(), rec.deletes.Load(), rec.tombstones.Load())
		}
		// Prove the scenario's transport settings really took effect.
		switch h.sc.media {
		case mediaProtobuf:
			if r.media.protobuf.Load() == 0 {
				h.t.Errorf("%s: protobuf scenario but no protobuf response was received", name)
			}
		case mediaJSON:
			if r.media.protobuf.Load() != 0 || r.media.cbor.Load() != 0 || r.media.json.Load() == 0 {
				h.t.Errorf("%s: JSON scenario but got protobuf=%d json=%d cbor=%d responses", name, r.media.protobuf.Load(), r.media.json.Load(), r.media.cbor.Load())
			}
		case mediaCBOR:
			if r.media.protobuf.Load() != 0 || r.media.cbor.Load() == 0 {
				h.t.Errorf("%s: CBOR scenario but got protobuf=%d json=%d cbor=%d responses", name, r.media.protobuf.Load(), r.media.json.Load(), r.media.cbor.Load())
			}
		}
		if wl := r.lw.WatchLists(); h.sc.watchList != (wl > 0) {
			h.t.Errorf("%s: WatchListClient=%v but %d watch-list requests were made", name, h.sc.watchList, wl)
		}
	}
}

func sortedKeys(m map[string]uint64) []string { return slices.Sorted(maps.Keys(m)) }

// TestObjectDiff checks the object comparison the suite relies on: it
// needs no cluster. A changed field is a difference; TypeMeta never is;
// managedFields are ignored only where the informer drops them, and with
// the diet their presence is itself a difference.
func TestObjectDiff(t *testing.T) {
	server := newPod("ns", 1, 0)
	server.ResourceVersion = "7"
	server.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "e2e", Operation: metav1.ManagedFieldsOperationUpdate}}
	stock := &run{impl: impl{name: "stock"}}
	diet := &run{impl: impl{name: "diet", diet: true}}
	h := &harness{}
	same := server.DeepCopy()
	same.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	stripped := server.DeepCopy()
	stripped.ManagedFields = nil
	changed := server.DeepCopy()
	changed.Spec.Containers[0].Image = "other"
	for _, tc := range []struct {
		name   string
		r      *run
		cached *corev1.Pod
		want   string // substring of the difference; "" = none
	}{
		{"identical but TypeMeta", stock, same, ""},
		{"changed image", stock, changed, "differs"},
		{"managedFields missing without the diet", stock, stripped, "differs"},
		{"managedFields dropped by the diet", diet, stripped, ""},
		{"managedFields kept despite the diet", diet, same, "managedFields in the store"},
		{"changed image under the diet", diet, func() *corev1.Pod { p := changed.DeepCopy(); p.ManagedFields = nil; return p }(), "differs"},
	} {
		got := h.objectDiff(tc.r, tc.cached, server)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: objectDiff = %q, want %q", tc.name, got, tc.want)
		}
	}
	if server.ManagedFields == nil || same.Kind != "Pod" {
		t.Error("objectDiff modified its arguments")
	}
}
