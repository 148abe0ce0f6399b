package pipeline

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

func TestUnwrap(t *testing.T) {
	ours := NewSharedIndexInformer(newCluster(false).ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	type embedding struct{ cache.SharedIndexInformer }
	for name, inf := range map[string]cache.SharedInformer{
		"ours":                     ours,
		"cache.NewTypedShared...":  cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](ours),
		"struct embedding ours":    embedding{ours},
		"typed wrapper of a embed": cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](embedding{ours}),
	} {
		if got, ok := Unwrap(inf); !ok || got != ours {
			t.Errorf("%s: Unwrap = %p, %v; want %p, true", name, got, ok, ours)
		}
	}
	clientGo := cache.NewSharedIndexInformer(newCluster(false).ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	for name, inf := range map[string]cache.SharedInformer{
		"nil":                     nil,
		"nil *Informer":           (*Informer)(nil),
		"client-go's":             clientGo,
		"typed wrapper of client": cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](clientGo),
	} {
		if got, ok := Unwrap(inf); ok || got != nil {
			t.Errorf("%s: Unwrap = %p, %v; want nil, false", name, got, ok)
		}
	}
}

func TestNewSharedIndexInformerWithOptions(t *testing.T) {
	lw := newCluster(false).ListerWatcher()
	indexers := cache.Indexers{"by-value": func(obj any) ([]string, error) { return []string{value(obj)}, nil }}

	inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		ResyncPeriod:      time.Minute,
		Indexers:          indexers,
		ObjectDescription: "config maps",
	}, WithShards(3))
	if inf.defaultResync != time.Minute || inf.mu.resyncCheckPeriod != time.Minute {
		t.Errorf("resync = %v / check %v, want 1m", inf.defaultResync, inf.mu.resyncCheckPeriod)
	}
	if _, ok := inf.GetIndexer().GetIndexers()["by-value"]; !ok {
		t.Errorf("indexers = %v, want by-value", inf.GetIndexer().GetIndexers())
	}
	if inf.name != "config maps" || len(inf.shards) != 3 {
		t.Errorf("name %q shards %d, want %q and 3 (options after the struct)", inf.name, len(inf.shards), "config maps")
	}

	name, err := cache.NewInformerName("adopt-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(name.Release)
	inf = NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		Identifier: name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
	})
	if inf.name != "adopt-test configmaps" {
		t.Errorf("name from Identifier = %q, want %q", inf.name, "adopt-test configmaps")
	}
	inf = NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{ObjectDescription: "x"}, WithName("mine"))
	if inf.name != "mine" {
		t.Errorf("WithName after the struct: name = %q, want mine", inf.name)
	}
}

func TestNewSharedIndexInformerWithOptionsRejects(t *testing.T) {
	lw := newCluster(false).ListerWatcher()
	for name, tc := range map[string]struct {
		options cache.SharedIndexInformerOptions
		opts    []Option
		want    error
	}{
		"metrics provider": {options: cache.SharedIndexInformerOptions{InformerMetricsProvider: nopMetrics{}}, want: errMetricsProvider},
		"invalid option":   {opts: []Option{WithShards(-1)}, want: errConfig},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, tc.want) {
					t.Errorf("panic %v, want %v", err, tc.want)
				}
			}()
			NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, tc.options, tc.opts...)
		})
	}
}

// nopMetrics is a client-go InformerMetricsProvider that provides nothing.
type nopMetrics struct{ cache.InformerMetricsProvider }
