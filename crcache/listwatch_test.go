package crcache

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/internal/testkit"
)

// gvkWatch sets the GroupVersionKind on every event's object, and Stop
// ends its goroutine also when an event is waiting for a consumer that no
// longer reads.
func TestGVKWatch(t *testing.T) {
	in := watch.NewFakeWithChanSize(4, false)
	w := newGVKWatch(in, podGVK)
	in.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	in.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410})
	for _, want := range []watch.EventType{watch.Added, watch.Error} {
		e := <-w.ResultChan()
		if e.Type != want || e.Object.GetObjectKind().GroupVersionKind() != podGVK {
			t.Errorf("event %v of %v, want %v with %v", e.Type, e.Object.GetObjectKind().GroupVersionKind(), want, podGVK)
		}
	}
	// An event nobody reads: Stop must not wait for a reader.
	in.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	stopped := make(chan struct{})
	go func() { // goroutine: Stop, which must return; joined below.
		defer close(stopped)
		w.Stop()
		w.Stop() // again: no panic, no wait
	}()
	select {
	case <-stopped:
	case <-time.After(testkit.Guard):
		t.Fatal("Stop did not return while an event was pending")
	}
	if !in.IsStopped() {
		t.Error("the wrapped watch was not stopped")
	}
	testkit.NoGoroutines(t, "crcache.(*gvkWatch)")
	if _, open := <-w.ResultChan(); open {
		t.Error("the result channel is open after Stop")
	}
}
