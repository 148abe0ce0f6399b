// Package ours builds testkit.Impls of shardinformer's informer. It is apart
// from package testkit so that package pipeline's own tests can use testkit.
package ours

import (
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Impl is shardinformer's informer with opts, named "shardinformer" or
// "shardinformer/<name>".
func Impl(name string, opts ...pipeline.Option) testkit.Impl {
	full := "shardinformer"
	if name != "" {
		full += "/" + name
	}
	return testkit.Impl{Name: full, Ours: true, New: func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return pipeline.NewSharedIndexInformer(lw, example, resync, indexers, opts...)
	}}
}

// ListerWatcher is what our informer behind inf (pipeline.Unwrap) lists and
// watches through, as its Stats say; it fails t if inf is not ours.
func ListerWatcher(t testing.TB, inf cache.SharedInformer) string {
	t.Helper()
	o, ok := pipeline.Unwrap(inf)
	if !ok {
		t.Fatalf("informer %T is not ours", inf)
	}
	return o.Stats().ListerWatcher
}
