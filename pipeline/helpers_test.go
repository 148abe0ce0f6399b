package pipeline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

func newCluster(watchList bool) *fakeapi.Cluster {
	return fakeapi.New(fakeapi.Config{
		NewList:   func() runtime.Object { return &corev1.ConfigMapList{} },
		WatchList: watchList,
		DeepCopy:  true,
	})
}

func configMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"v": value}},
		Data:       map[string]string{"v": value},
	}
}

// recorder records every notification a handler receives, per key, as
// "add:<v>", "update:<old>-><new>", "delete:<v>" (v is the data value, or
// "?" for an unknown final state).
type recorder struct {
	mu     sync.Mutex
	byKey  map[string][]string
	total  int
	active int // concurrent calls in flight
	maxPar int
	delay  time.Duration
}

func newRecorder() *recorder { return &recorder{byKey: map[string][]string{}} }

func value(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return "?"
		}
		obj = t.Obj
	}
	return obj.(*corev1.ConfigMap).Data["v"]
}

func keyOf(obj any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	return k
}

func (r *recorder) record(obj any, ev string) {
	r.mu.Lock()
	r.active++
	r.maxPar = max(r.maxPar, r.active)
	r.mu.Unlock()
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	k := keyOf(obj)
	r.byKey[k] = append(r.byKey[k], ev)
	r.total++
}

func (r *recorder) OnAdd(obj any, _ bool) { r.record(obj, "add:"+value(obj)) }
func (r *recorder) OnUpdate(old, obj any) { r.record(obj, "update:"+value(old)+"->"+value(obj)) }
func (r *recorder) OnDelete(obj any)      { r.record(obj, "delete:"+value(obj)) }

func (r *recorder) events(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.byKey[key]...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// eventually polls cond until it holds or the deadline guard (not a timing
// assertion: generous, only to turn a hang into a failure) expires.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func run(t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cm-%03d", i)
	}
	return out
}
