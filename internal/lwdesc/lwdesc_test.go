package lwdesc

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

type noWatchList struct{ cache.ListerWatcher }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// TestNew: the description is the String; the context methods reach the
// wrapped ListerWatcher; its WatchList choice is kept, and without one the
// reflector's default (WatchList allowed) stands.
func TestNew(t *testing.T) {
	calls := 0
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			calls++
			return &metav1.List{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			calls++
			return watch.NewEmptyWatch(), nil
		},
	}
	d := New(lw, "client-go list/watch (a test)")
	if got := fmt.Sprint(d); got != "client-go list/watch (a test)" {
		t.Errorf("String() = %q", got)
	}
	if _, err := d.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.(cache.ListerWatcherWithContext).WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("%d calls reached the wrapped ListerWatcher, want 2", calls)
	}
	type choice interface{ IsWatchListSemanticsUnSupported() bool }
	if d.(choice).IsWatchListSemanticsUnSupported() {
		t.Error("a ListerWatcher without a WatchList choice opts out")
	}
	if !New(noWatchList{lw}, "").(choice).IsWatchListSemanticsUnSupported() {
		t.Error("the wrapped ListerWatcher's opt-out is lost")
	}
}
