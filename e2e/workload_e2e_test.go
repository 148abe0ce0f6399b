//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// churn creates, updates and deletes pods in one namespace from many
// goroutines at once. Every pod i goes through: create; 1 + i%3 label
// updates; for i%10 < 3 a delete; for i%10 == 0 a re-create and one more
// update (a new UID under the same key). The label "group" flips between
// "a" and "b" so label-selected informers see objects enter and leave.
//
// Each operation is retried until it succeeds (AlreadyExists on create and
// NotFound on delete count as success: the first attempt may have landed
// before the connection broke), so faults injected during the churn do not
// change the final state, only how the informers get there.
type churn struct {
	client  kubernetes.Interface
	ns      string
	pods    int
	writers int
	// atOps, if set, is called once, in its own goroutine, when a third of
	// the operations are done; the churn waits for it before returning.
	atOps func(ctx context.Context)

	ops     atomic.Int64
	retries atomic.Int64
}

// opsFor is the number of write operations pod i gets.
func opsFor(i int) int {
	n := 1 + 1 + i%3
	if i%10 < 3 {
		n++
	}
	if i%10 == 0 {
		n += 2
	}
	return n
}

func (c *churn) totalOps() int64 {
	var n int64
	for i := range c.pods {
		n += int64(opsFor(i))
	}
	return n
}

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

func newPod(ns string, i, gen int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(i),
			Namespace: ns,
			Labels:    map[string]string{"app": "churn", "group": group(i, gen), "gen": strconv.Itoa(gen)},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "do-not-schedule", // no scheduler or kubelet: pods stay Pending
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "registry.invalid/pause:none",
			}},
		},
	}
}

func group(i, gen int) string {
	if (i+gen)%2 == 0 {
		return "a"
	}
	return "b"
}

func (c *churn) run(ctx context.Context) error {
	trigger := c.totalOps() / 3
	var fault sync.WaitGroup
	var fired atomic.Bool
	step := func() {
		if c.ops.Add(1) >= trigger && c.atOps != nil && fired.CompareAndSwap(false, true) {
			fault.Go(func() { c.atOps(ctx) })
		}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range c.writers {
		wg.Go(func() {
			for i := w; i < c.pods; i += c.writers {
				if err := c.lifecycle(ctx, i, step); err != nil {
					cancel(fmt.Errorf("pod %d: %w", i, err))
					return
				}
			}
		})
	}
	wg.Wait()
	fault.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

func (c *churn) lifecycle(ctx context.Context, i int, step func()) error {
	pods := c.client.CoreV1().Pods(c.ns)
	gen := 0
	create := func() error {
		return c.retry(ctx, func(ctx context.Context) error {
			_, err := pods.Create(ctx, newPod(c.ns, i, gen), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	update := func() error {
		gen++
		patch := fmt.Sprintf(`{"metadata":{"labels":{"gen":"%d","group":"%s"}}}`, gen, group(i, gen))
		return c.retry(ctx, func(ctx context.Context) error {
			_, err := pods.Patch(ctx, podName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
	}
	del := func() error {
		return c.retry(ctx, func(ctx context.Context) error {
			err := pods.Delete(ctx, podName(i), metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}

	if err := create(); err != nil {
		return err
	}
	step()
	for range 1 + i%3 {
		if err := update(); err != nil {
			return err
		}
		step()
	}
	if i%10 < 3 {
		if err := del(); err != nil {
			return err
		}
		step()
	}
	if i%10 == 0 {
		if err := create(); err != nil {
			return err
		}
		step()
		if err := update(); err != nil {
			return err
		}
		step()
	}
	return nil
}

// retry runs op with a per-attempt timeout until it succeeds; it gives up
// only when ctx ends.
func (c *churn) retry(ctx context.Context, op func(context.Context) error) error {
	backoff := 20 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
			return err // a bug in the test, not a fault
		}
		c.retries.Add(1)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		backoff = min(2*backoff, time.Second)
	}
}
