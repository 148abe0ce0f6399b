package fifo_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
)

// mapKnown is a fifo.Known backed by a map, standing in for a shard's index
// partition. Reads may run while the consumer writes. Range visits keys in
// sorted order and calls f without holding the map's lock, so f may call Get.
type mapKnown struct {
	mu sync.RWMutex
	m  map[string]any
}

func newMapKnown() *mapKnown { return &mapKnown{m: make(map[string]any)} }

func (k *mapKnown) Get(key string) (any, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	obj, ok := k.m[key]
	return obj, ok
}

func (k *mapKnown) Range(f func(key string, obj any) bool) {
	k.mu.RLock()
	keys := make([]string, 0, len(k.m))
	for key := range k.m {
		keys = append(keys, key)
	}
	k.mu.RUnlock()
	slices.Sort(keys)
	for _, key := range keys {
		if obj, ok := k.Get(key); ok && !f(key, obj) {
			return
		}
	}
}

func (k *mapKnown) set(key string, obj any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = obj
}

func (k *mapKnown) del(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}

// apply applies one popped item the way an informer's consumer updates its
// store: every delta but Deleted stores its object, Deleted removes the key.
func (k *mapKnown) apply(it fifo.Item) {
	for _, d := range it.Deltas {
		if d.Type == cache.Deleted {
			k.del(it.Key)
		} else {
			k.set(it.Key, d.Object)
		}
	}
}

func (k *mapKnown) snapshot() map[string]any {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make(map[string]any, len(k.m))
	for key, obj := range k.m {
		out[key] = obj
	}
	return out
}

// sortedStore is a cache.Store whose ListKeys is sorted. DeltaFIFO's Replace
// and Resync visit known keys in ListKeys order, which for a plain Store is map
// order; sorting it (and mapKnown.Range) makes both queues append
// newly-detected keys in the same order, so pop order can be compared exactly.
type sortedStore struct{ cache.Store }

func (s sortedStore) ListKeys() []string {
	keys := s.Store.ListKeys()
	slices.Sort(keys)
	return keys
}

// configMap returns a ConfigMap for key ("namespace/name") at resource version
// rv; the data field repeats rv so that a change is visible in every dump.
func configMap(key string, rv int) *corev1.ConfigMap {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		panic("configMap: key without namespace: " + key)
	}
	v := fmt.Sprint(rv)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: v},
		Data:       map[string]string{"v": v},
	}
}

// markTransform returns a copy of a ConfigMap with "t" appended to its "t"
// annotation, so an object transformed twice shows "tt". It is deliberately
// not idempotent: the tests never pass an already transformed object back in.
func markTransform(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("markTransform: unexpected %T", obj)
	}
	out := cm.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations["t"] += "t"
	return out, nil
}

// describeObj renders an object compactly: key@rv plus its transform marks.
func describeObj(obj any) string {
	switch o := obj.(type) {
	case nil:
		return "<nil>"
	case *corev1.ConfigMap:
		s := o.Namespace + "/" + o.Name + "@" + o.ResourceVersion
		if t := o.Annotations["t"]; t != "" {
			s += "+" + t
		}
		return s
	case cache.DeletedFinalStateUnknown:
		return fmt.Sprintf("tombstone{%s %s}", o.Key, describeObj(o.Obj))
	default:
		return fmt.Sprintf("%T(%v)", obj, obj)
	}
}

func describeDeltas(ds cache.Deltas) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s:%s", d.Type, describeObj(d.Object))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeItems(items []fifo.Item) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s%s initial=%v", it.Key, describeDeltas(it.Deltas), it.Initial)
	}
	return strings.Join(parts, "; ")
}

func newQueue(t testing.TB, cfg fifo.Config) *fifo.Queue {
	t.Helper()
	q, err := fifo.New(cfg)
	if err != nil {
		t.Fatalf("fifo.New: %v", err)
	}
	return q
}

// popAll pops everything queued in one batch (without calling Done).
func popAll(q *fifo.Queue) []fifo.Item { return q.Pop(nil, 1<<30) }

// mustNil fails the test on a write error.
func mustNil(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
