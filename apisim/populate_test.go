package apisim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPopulate checks that Populate hands every pod to load once, in index
// order, in chunks of at most populateChunk, and stops at load's error.
func TestPopulate(t *testing.T) {
	gen := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: strconv.Itoa(i)}}
	}
	for _, n := range []int{0, 1, populateChunk, 3*populateChunk + 7} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			next := 0
			err := Populate(context.Background(), n, gen, func(pods []*corev1.Pod) error {
				if len(pods) == 0 || len(pods) > populateChunk {
					return fmt.Errorf("a chunk of %d pods", len(pods))
				}
				for _, p := range pods {
					if p.Name != strconv.Itoa(next) {
						return fmt.Errorf("pod %s loaded where pod %d was due", p.Name, next)
					}
					next++
				}
				return nil
			})
			if err != nil || next != n {
				t.Fatalf("Populate(%d): %d pods loaded, err %v", n, next, err)
			}
		})
	}
	stop := errors.New("stop")
	calls := 0
	err := Populate(context.Background(), 5*populateChunk, gen, func([]*corev1.Pod) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Populate after a failed load: %v, %d loads; want the load's error after one", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Populate(ctx, 5*populateChunk, gen, func([]*corev1.Pod) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Populate with an ended context: %v", err)
	}
}
