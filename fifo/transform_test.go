package fifo_test

import (
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
)

// countingTransform wraps markTransform and counts its calls.
func countingTransform(calls *atomic.Int64) cache.TransformFunc {
	return func(obj any) (any, error) {
		calls.Add(1)
		return markTransform(obj)
	}
}

func TestTransformOncePerObject(t *testing.T) {
	var calls atomic.Int64
	known := newMapKnown()
	q := newQueue(t, fifo.Config{Known: known, Transform: countingTransform(&calls)})

	mustNil(t, "Replace", q.Replace(keyedMaps("ns/a", "ns/b"))) // a@1 b@2
	mustNil(t, "Add", q.Add("ns/c", configMap("ns/c", 3)))
	mustNil(t, "Update", q.Update("ns/a", configMap("ns/a", 4)))
	want := "ns/a[Replaced:ns/a@1+t Updated:ns/a@4+t] initial=true; " +
		"ns/b[Replaced:ns/b@2+t] initial=true; ns/c[Added:ns/c@3+t] initial=false"
	items := popAll(q)
	if got := describeItems(items); got != want {
		t.Errorf("queued:\n got %s\nwant %s", got, want)
	}
	for _, it := range items {
		known.apply(it)
	}
	q.Done(items)
	if n := calls.Load(); n != 4 {
		t.Errorf("transform calls after 4 objects = %d, want 4", n)
	}

	// Sync deltas and tombstones carry objects already transformed.
	mustNil(t, "Resync", q.Resync())
	want = "ns/a[Sync:ns/a@4+t] initial=false; ns/b[Sync:ns/b@2+t] initial=false; ns/c[Sync:ns/c@3+t] initial=false"
	items = popAll(q)
	if got := describeItems(items); got != want {
		t.Errorf("after Resync:\n got %s\nwant %s", got, want)
	}
	q.Done(items)
	c, _ := known.Get("ns/c")
	mustNil(t, "Delete", q.Delete("ns/c", cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: c}))
	mustNil(t, "Replace", q.Replace(nil))
	want = "ns/c[Deleted:tombstone{ns/c ns/c@3+t}] initial=false; " +
		"ns/a[Deleted:tombstone{ns/a ns/a@4+t}] initial=false; " +
		"ns/b[Deleted:tombstone{ns/b ns/b@2+t}] initial=false"
	if got := describeItems(popAll(q)); got != want {
		t.Errorf("after tombstone Delete and Replace(nil):\n got %s\nwant %s", got, want)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("transform calls after Resync and tombstones = %d, want still 4", n)
	}
}

// A Delete carrying the object's final state is an object entering the queue:
// DeltaFIFO transforms it (only tombstones and Sync deltas are exempt), and a
// consumer must not see an untransformed object in a delete notification.
func TestTransformAppliesToDeletedObject(t *testing.T) {
	var calls atomic.Int64
	known := newMapKnown()
	q := newQueue(t, fifo.Config{Known: known, Transform: countingTransform(&calls)})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	settle(q, known)
	mustNil(t, "Delete", q.Delete("ns/a", configMap("ns/a", 2)))
	if got, want := describeItems(popAll(q)), "ns/a[Deleted:ns/a@2+t] initial=false"; got != want {
		t.Errorf("after Delete:\n got %s\nwant %s", got, want)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("transform calls = %d, want 2", n)
	}

	// A failing transform fails the Delete too, and queues nothing.
	errBad := errors.New("bad object")
	q = newQueue(t, fifo.Config{Known: known, Transform: failOn("ns/a", errBad)})
	if err := q.Delete("ns/a", configMap("ns/a", 3)); !errors.Is(err, errBad) {
		t.Errorf("Delete with failing transform = %v, want an error wrapping %v", err, errBad)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("Len after failed Delete = %d, want 0", n)
	}
}

// failOn returns a transform that fails for the object named by key.
func failOn(key string, err error) cache.TransformFunc {
	return func(obj any) (any, error) {
		cm := obj.(*corev1.ConfigMap)
		if cm.Namespace+"/"+cm.Name == key {
			return nil, err
		}
		return markTransform(obj)
	}
}

func TestTransformErrorQueuesNothing(t *testing.T) {
	errBad := errors.New("bad object")
	for _, tc := range []struct {
		name  string
		write func(q *fifo.Queue) error
	}{
		{"Add", func(q *fifo.Queue) error { return q.Add("ns/bad", configMap("ns/bad", 5)) }},
		{"Update", func(q *fifo.Queue) error { return q.Update("ns/bad", configMap("ns/bad", 5)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := newMapKnown()
			known.set("ns/old", configMap("ns/old", 1)) // a Replace would tombstone it
			q := newQueue(t, fifo.Config{Known: known, Transform: failOn("ns/bad", errBad)})
			err := tc.write(q)
			if !errors.Is(err, errBad) {
				t.Fatalf("%s = %v, want an error wrapping %v", tc.name, err, errBad)
			}
			if items := popAll(q); len(items) != 0 {
				t.Errorf("%s failed but queued %s", tc.name, describeItems(items))
			}
		})
	}
}

// Replace leaves out an object its transform rejects: the key keeps whatever
// the cache holds (it is listed, so it gets no tombstone), the rest of the
// list is queued, and the error wraps the transform's.
func TestTransformErrorInReplaceSkipsObject(t *testing.T) {
	errBad := errors.New("bad object")
	known := newMapKnown()
	known.set("ns/bad", configMap("ns/bad", 1))
	known.set("ns/old", configMap("ns/old", 2))
	q := newQueue(t, fifo.Config{Known: known, Transform: failOn("ns/bad", errBad)})
	err := q.Replace([]fifo.Keyed{
		{Key: "ns/bad", Object: configMap("ns/bad", 3)},
		{Key: "ns/ok", Object: configMap("ns/ok", 4)},
	})
	if !errors.Is(err, errBad) {
		t.Fatalf("Replace = %v, want an error wrapping %v", err, errBad)
	}
	want := "ns/ok[Replaced:ns/ok@4+t] initial=true; ns/old[Deleted:tombstone{ns/old ns/old@2}] initial=true"
	if got := describeItems(popAll(q)); got != want {
		t.Errorf("queued:\n got %s\nwant %s", got, want)
	}
}
