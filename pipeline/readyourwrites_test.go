package pipeline_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
)

// TestReadYourWritesControllerRuntime is issue 27's reproduction:
// controller-runtime's read-your-writes client (client.CacheOptions
// EnableReadYourWritesConsistency) serves a Get from the cache once a handler
// of the informer has seen a resourceVersion at least the written object's.
// It creates leases A and then B through that client over HTTP (apisim), on
// two shards, with an index function that is slow on A, and reads A back:
// with client-go's informer, and with ours in its default order, A is found
// in every round; without cross-key order (WithRelaxedOrder) B's shard tells
// the handler about B while A is still being indexed, and the Get finds no A.
// A first lease, whose indexing waits until A and B are created, keeps the
// reflector goroutine busy so that A and B reach the drain goroutines (an
// idle shard's event would be applied by the reflector itself, which would
// hold B back); the reproduction then does not depend on how fast the
// creates are.
func TestReadYourWritesControllerRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server and a controller-runtime cache per round")
	}
	const rounds, maxRounds = 4, 64
	ours := func(opts ...pipeline.Option) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
		return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, obj, resync, idx, append([]pipeline.Option{pipeline.WithShards(4)}, opts...)...)
		}
	}
	for _, tc := range []struct {
		name    string
		new     func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
		relaxed bool
	}{
		{name: "client-go", new: toolscache.NewSharedIndexInformer},
		{name: "shardinformer", new: ours()},
		{name: "shardinformer/relaxed", new: ours(pipeline.WithRelaxedOrder()), relaxed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The relaxed reproduction is a race the index functions make
			// likely, not certain: it gets up to maxRounds to show.
			notFound, n := 0, rounds
			if tc.relaxed {
				n = maxRounds
			}
			for i := 0; i < n && !(tc.relaxed && notFound > 0); i++ {
				if readYourWritesRound(t, tc.new) {
					notFound++
				}
			}
			switch {
			case tc.relaxed && notFound == 0:
				t.Errorf("without cross-key order every Get of %d rounds found the lease: the reproduction did not reproduce", maxRounds)
			case tc.relaxed:
				t.Logf("without cross-key order: a round did not find the lease just created")
			case notFound > 0:
				t.Errorf("%d of %d rounds: Get right after Create returned NotFound", notFound, rounds)
			}
		})
	}
}

// readYourWritesRound runs one round and reports whether the Get of A found
// nothing.
func readYourWritesRound(t *testing.T, newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) bool {
	t.Helper()
	const ns = "ryw"
	names := namesOnShards(ns, 3) // a fresh server each round: the same names
	first, a, b := names[0], names[1], names[2]

	srv, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.RESTConfig()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := crcache.New(cfg, crcache.Options{Scheme: scheme, NewInformer: newInformer})
	if err != nil {
		t.Fatal(err)
	}
	// Indexing the first lease waits until all three are created, so that A
	// and B are already in the watch stream when the reflector is free again,
	// however long each create takes on a loaded machine.
	created := make(chan struct{})
	if err := c.IndexField(ctx, &coordinationv1.Lease{}, "slow", func(o client.Object) []string {
		switch o.GetName() {
		case first:
			select {
			case <-created:
			case <-time.After(10 * time.Second):
			}
		case a:
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{first, a, b} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := cl.Create(ctx, l); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	close(created)
	getCtx, done := context.WithTimeout(ctx, time.Minute)
	defer done()
	err = cl.Get(getCtx, client.ObjectKey{Namespace: ns, Name: a}, &coordinationv1.Lease{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get %s: %v", a, err)
	}
	return apierrors.IsNotFound(err)
}
