package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/replicas/handover"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/shardselector"
)

// TestUnreadableLease: three replicas converge on 200 pods; then someone
// else writes garbage into r1's slot annotations, again and again (every
// 20ms, five times per renewal of r1), while r1 runs on. r1 fences itself
// at its next renewal (its handler is told every pod is gone) and stays on
// standby; r0 and r2 leave it out of the target at their first list that
// shows its Lease unreadable, and stop counting its claims LeaseDuration
// later. Within the bound of doc.go (LeaseDuration + 3 RenewIntervals after
// the first garbage, checked with RenewDeadline of slack for a loaded
// machine) every pod is in exactly one of r0's and r2's views, as the
// sticky target of the two assigns it, r1's view is empty, and r0's and r2's
// Leases claim exactly their target. When the garbage stops, r1 comes back
// after its quarantine (RenewDeadline on standby, then LeaseDuration) and
// the three converge again. Throughout, no key is in two views at once,
// no key is in two calls of a replica at once and no key's resourceVersion
// goes back (checked at every handler call). Last, r1 is killed, its Lease
// left claiming its slots and garbled from then on, which keeps it live and
// never on standby: r0 and r2 go by its claims of every slot for
// LeaseDuration and then, within the bound, serve r1's slots.
func TestUnreadableLease(t *testing.T) { unreadableScenario(t, simBackend(t, true)) }

func unreadableScenario(t *testing.T, b backend) {
	testkit.CheckLeaks(t, "shardinformer/replicas/")
	for i := range 200 {
		if err := b.create(apisim.NewPod(fmt.Sprint("ns-", i%4), fmt.Sprint("pod-", i), int64(i), apisim.PodOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	const (
		slots         = 8
		leaseDuration = 4 * time.Second
		renewDeadline = 2500 * time.Millisecond
		renewInterval = 100 * time.Millisecond
	)
	l := newLedger(t)
	type running struct {
		r      *Runner
		cancel context.CancelFunc
		done   chan error
	}
	run := map[string]running{}
	for _, name := range []string{"r0", "r1", "r2"} {
		cs := (&decoded{}).client(t, b.cfg)
		l.views[name] = map[string]string{}
		r, err := New(Config{
			Members: members.Config{Leases: cs.CoordinationV1().Leases("ctrl"), Group: "g", Identity: name,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RenewInterval: renewInterval},
			Slots:   slots,
			Inner:   (&decoded{}).podLW(cs),
			Handler: recorder{l, name},
			NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer {
				return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		run[name] = running{r, cancel, done}
	}
	defer func() {
		for name, r := range run {
			r.cancel()
			if err := <-r.done; err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		}
	}()
	leases, err := kubernetes.NewForConfig(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	lc := leases.CoordinationV1().Leases("ctrl")

	// converge waits up to within until the Leases of serving claim the
	// sticky target of serving and each replica's view is exactly the
	// server's pods of the slots it claims (none for the others), and
	// returns how long that took.
	converge := func(stage string, within time.Duration, serving ...string) time.Duration {
		t.Helper()
		start := time.Now()
		var got, want map[string]map[string]string
		var why string
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
			list, err := lc.List(ctx, metav1.ListOptions{})
			if err != nil {
				why = err.Error()
				return false, nil
			}
			published := map[string]handover.Published{}
			for _, ls := range list.Items {
				if name := *ls.Spec.HolderIdentity; slices.Contains(serving, name) {
					if published[name], err = handover.Decode(ls.Annotations, slots); err != nil {
						why = fmt.Sprintf("%s: %v", name, err)
						return false, nil
					}
				}
			}
			a := handover.Target(serving, slots, published)
			for _, name := range serving {
				if p, ok := published[name]; !ok || !slices.Equal(p.Claimed, ownedBits(a, name)) {
					why = fmt.Sprintf("%s claims %v, its target %v", name, p.Claimed, ownedBits(a, name))
					return false, nil
				}
			}
			why = "views"
			want = map[string]map[string]string{}
			for name := range run {
				want[name] = map[string]string{}
			}
			for _, p := range b.list() {
				owner, _ := a.Owner(shardselector.Hash(string(p.UID)))
				want[owner][p.Namespace+"/"+p.Name] = p.ResourceVersion
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			got = map[string]map[string]string{}
			for name := range run {
				got[name] = maps.Clone(l.views[name])
			}
			return maps.EqualFunc(got, want, maps.Equal), nil
		})
		took := time.Since(start)
		if err != nil {
			for _, name := range slices.Sorted(maps.Keys(run)) {
				t.Errorf("%s: %s holds %d keys, owns %d", stage, name, len(got[name]), len(want[name]))
			}
			t.Fatalf("%s: not converged within %v (%s)", stage, within, why)
		}
		t.Logf("%s: converged in %v", stage, took.Round(10*time.Millisecond))
		return took
	}
	converge("start", 60*time.Second, "r0", "r1", "r2")

	// The foreign writer: garbage into r1's claims, every 20ms, each on
	// the version it read (a conflict with r1's renewal is retried at the
	// next tick). garble returns once the first garbage is written, and a
	// function that stops the writer.
	garble := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		garbled := make(chan struct{})
		done := make(chan struct{})
		go func() { // the foreign writer's goroutine; stop ends it
			defer close(done)
			first := true
			for {
				if cur, err := lc.Get(ctx, "g-r1", metav1.GetOptions{}); err == nil {
					cur.Annotations[handover.AnnotationClaimed] = "not hex"
					if _, err := lc.Update(ctx, cur, metav1.UpdateOptions{}); err == nil && first {
						first = false
						close(garbled)
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		select {
		case <-garbled:
		case <-time.After(10 * time.Second):
			t.Fatal("no garbage written")
		}
		return func() { cancel(); <-done }
	}
	// The bound, with RenewDeadline of slack for rounds that a loaded
	// machine runs later than every RenewInterval.
	bound := leaseDuration + 3*renewInterval
	within := func(stage string, took time.Duration) {
		if took > bound {
			t.Logf("%s: %v over the bound of %v", stage, took-bound, bound)
		}
	}
	stop := garble()
	defer func() { stop() }()
	within("r1 unreadable", converge("r1 unreadable", bound+renewDeadline, "r0", "r2"))
	// Still so while the garbage goes on.
	time.Sleep(leaseDuration)
	converge("r1 still unreadable", time.Second, "r0", "r2")

	stop()
	converge("garbage stopped", renewDeadline+leaseDuration+20*time.Second, "r0", "r1", "r2")

	// The worst case: r1 is killed (its Lease left behind, claiming its
	// slots) and its Lease garbled from then on, which keeps it live (its
	// resourceVersion changes) and never on standby: r0 and r2 go by the
	// claims of every slot for LeaseDuration, then serve r1's slots.
	r1 := run["r1"]
	r1.r.crash.Store(true)
	r1.cancel()
	if err := <-r1.done; err != nil {
		t.Fatalf("r1: Run: %v", err)
	}
	delete(run, "r1")
	l.forget("r1")
	stop = garble()
	took := converge("r1 killed, unreadable", bound+renewDeadline, "r0", "r2")
	within("r1 killed, unreadable", took)
	if took < leaseDuration-renewInterval {
		t.Errorf("r1's slots served %v after its Lease became unreadable, before its claims could have stopped counting (%v)", took, leaseDuration)
	}
}
