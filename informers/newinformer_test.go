package informers_test

import (
	"context"
	"slices"
	"testing"

	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
)

// NewInformer and NewInformerFunc build our informer with the list/watch
// they are given, named after the example object's kind when it has one;
// NewInformerFunc passes its options and refuses invalid ones up front.
func TestNewInformer(t *testing.T) {
	s := newServer(t, pod("a", "p1", nil), pod("a", "p2", nil), pod("b", "p3", nil))
	lw := cache.NewListWatchFromClient(s.client.CoreV1().RESTClient(), "pods", "a", fields.Everything())
	withKind := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}

	if _, err := informers.NewInformerFunc(pipeline.WithShards(-1)); err == nil {
		t.Fatal("NewInformerFunc(WithShards(-1)) accepted")
	}
	newWithShards, err := informers.NewInformerFunc(pipeline.WithShards(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		inf    cache.SharedIndexInformer
		want   string
		shards int
	}{
		{"NewInformer", informers.NewInformer(lw, &corev1.Pod{}, 0, nil), "shardinformer *v1.Pod", 0},
		{"NewInformer with kind", informers.NewInformer(lw, withKind, 0, nil), "shardinformer /v1, Kind=Pod", 0},
		{"NewInformerFunc", newWithShards(lw, withKind, 0, nil), "shardinformer /v1, Kind=Pod", 3},
	} {
		ours := mustUnwrap(t, c.inf)
		if got := ours.HasSyncedChecker().Name(); got != c.want {
			t.Errorf("%s: named %q, want %q", c.name, got, c.want)
		}
		if c.shards != 0 && len(ours.Stats().Shards) != c.shards {
			t.Errorf("%s: %d shards, want %d", c.name, len(ours.Stats().Shards), c.shards)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { // goroutine: the informer under test; joined below.
			defer close(done)
			c.inf.RunWithContext(ctx)
		}()
		if !cache.WaitForCacheSync(ctx.Done(), c.inf.HasSynced) {
			t.Fatalf("%s: no sync", c.name)
		}
		if got := slices.Sorted(slices.Values(c.inf.GetStore().ListKeys())); !slices.Equal(got, []string{"a/p1", "a/p2"}) {
			t.Errorf("%s: cached %v, want a/p1 a/p2", c.name, got)
		}
		cancel()
		<-done
	}
}
