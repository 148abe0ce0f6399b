package target

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config.ReusePods (--reuse-pods) keeps one populated set of namespaces on a
// real cluster for every trial and invocation of the same --pods,
// --namespaces and --seed, so that repeated initial-sync measurements
// create 100k pods once (≈2–4 minutes on two cores), not once per trial. Its
// run id, and so its namespaces and run label, are a function of those three
// flags (ReuseRunID); Populate creates only what is missing (a first or
// interrupted populate) and Close deletes nothing. Churn would change the
// pods between trials, so the command limits the flag to its informer
// scenario without churn.

// ReuseRunID is the run id of the kept pods of --pods, --namespaces and
// --seed. It is a valid label value and namespace-name part: digits,
// letters and dashes, at most 44 characters.
func ReuseRunID(pods, namespaces int, seed int64) string {
	return fmt.Sprintf("keep-%d-%d-%d", pods, namespaces, seed)
}

// podProgress says how far pod i of a kept set got in an earlier populate.
type podProgress uint8

const (
	podMissing  podProgress = iota
	podCreated              // created, status not written yet
	podComplete             // created with its status
)

// existingPods reads which of the run's pods exist and whether their status
// was written (a pod created by populate has phase Pending until then).
// REQUIRES: t.keep.
func (t *Cluster) existingPods(ctx context.Context) (map[string]podProgress, error) {
	m := map[string]podProgress{}
	err := t.eachPod(ctx, func(pod *corev1.Pod) {
		m[pod.Namespace+"/"+pod.Name] = podCreated
		if pod.Status.Phase == corev1.PodRunning {
			m[pod.Namespace+"/"+pod.Name] = podComplete
		}
	})
	return m, err
}

// writePods brings pods 0..n-1 to their full shape on t's writers: create
// (unless have says it exists) and then write the simulated pod's status
// through the status subresource, as a kubelet would, so that the server
// holds NewPod's status and the managedFields entries of both writers.
// have is nil for a fresh run. progress counts pods that are complete.
func (t *Cluster) writePods(ctx context.Context, n int, have map[string]podProgress, progress func(int)) error {
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	for i := range n {
		if have[t.Namespace(i)+"/"+PodName(i)] == podComplete {
			done.Add(1)
		}
	}
	if d := done.Load(); d > 0 {
		progress(int(d))
	}
	var wg sync.WaitGroup
	for range t.writers {
		wg.Go(func() { // one of populate's writers; writePods waits for it
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				ns, name := t.Namespace(i), PodName(i)
				state := have[ns+"/"+name]
				if state == podComplete {
					continue
				}
				full := newPod(ns, name, PodSeed(t.seed, i), t.managedFields)
				status := full.Status
				pods := t.cs.CoreV1().Pods(ns)
				var p *corev1.Pod
				var err error
				if state == podMissing {
					p, err = pods.Create(ctx, t.prepare(full), metav1.CreateOptions{})
				} else {
					p, err = pods.Get(ctx, name, metav1.GetOptions{})
				}
				if err != nil {
					fail(fmt.Errorf("create pod %s/%s: %w", ns, name, err))
					return
				}
				p.Status = status
				if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					fail(fmt.Errorf("write status of pod %s/%s: %w", ns, name, err))
					return
				}
				progress(int(done.Add(1)))
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// createNamespaces creates the run's namespaces and their default service
// accounts; with t.keep, those that exist already are reused.
func (t *Cluster) createNamespaces(ctx context.Context) error {
	for i := range t.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Namespace(i), Labels: map[string]string{LabelRun: t.runID}}}
		_, err := t.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err != nil && !(t.keep && apierrors.IsAlreadyExists(err)) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
		t.mu.Lock()
		t.created = append(t.created, ns.Name)
		t.mu.Unlock()
		// Pods need their service account; without a controller manager
		// nobody creates "default".
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		if _, err := t.cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account in %s: %w", ns.Name, err)
		}
	}
	return nil
}
