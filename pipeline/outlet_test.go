package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shardinformer/shardinformer/internal/doorbell"
	"k8s.io/klog/v2"
)

// The overflow of an outlet must hand the consumer, per key, a valid walk
// from the state the consumer knew to the latest state, and, while its
// listener's backlog is within the budget, every notification as produced:
// checked here on random notification streams pushed into an outlet whose
// consumer is asleep, then drained, for many seeds, with the budgets of
// Coalesce (0), Grow (unlimited) and Buffer (small ones, so that episodes
// start and end within a stream).
func TestOutletOverflowKeepsValidWalks(t *testing.T) {
	for _, budget := range []int64{0, 1, 3, 7, unlimited} {
		merged := 0
		for seed := range uint64(300) {
			t.Run(fmt.Sprintf("budget=%d/seed=%d", budget, seed), func(t *testing.T) {
				merged += checkOverflowWalks(t, budget, seed)
			})
		}
		if budget < 7 && merged == 0 {
			t.Errorf("budget %d: no notification merged over all seeds: the coalesced path was not exercised", budget)
		}
	}
}

// episodes records the Coalescing hook's calls.
type episodes struct {
	NopObserver
	calls []bool
}

func (e *episodes) Coalescing(_ string, active bool) { e.calls = append(e.calls, active) }

// checkOverflowWalks returns how many notifications were merged.
func checkOverflowWalks(t *testing.T, budget int64, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := &worker{bell: doorbell.New()}
	eps := &episodes{}
	b := &backlog{budget: budget, name: "test", observer: eps, logger: klog.Background()}
	o, err := newOutlet(w, 2, false, b)
	if err != nil {
		t.Fatal(err)
	}
	var pushedN, merged int
	keys := []string{"ns/a", "ns/b", "ns/c"}
	truth := map[string]int{} // the producer's state: key -> version (absent: not in map)
	known := map[string]int{} // what the consumer was told
	version := 0
	var log []string
	received := 0
	consume := func() {
		for {
			batch := o.take(make([]notification, 0, 4))
			if len(batch) == 0 {
				return
			}
			received += len(batch)
			for _, n := range batch {
				v, _ := n.obj.(int)
				log = append(log, fmt.Sprintf("got %v %s %v->%v", n.kind, n.key, n.old, n.obj))
				cur, has := known[n.key]
				switch n.kind {
				case KindAdd:
					if has {
						t.Fatalf("add of %s while the consumer holds v%d\n%v", n.key, cur, log)
					}
					known[n.key] = v
				case KindUpdate:
					if !has || n.old != cur {
						t.Fatalf("update of %s from %v, consumer holds v%d (held: %v)\n%v", n.key, n.old, cur, has, log)
					}
					known[n.key] = v
				case KindDelete:
					if !has {
						t.Fatalf("delete of %s the consumer does not hold\n%v", n.key, log)
					}
					delete(known, n.key)
				}
			}
		}
	}
	for step := range 60 {
		k := keys[rng.IntN(len(keys))]
		var n notification
		if cur, ok := truth[k]; ok {
			version++
			if rng.IntN(3) == 0 {
				// The final state has a version of its own, as a real API
				// server's delete does; old is what the cache held.
				n = notification{kind: KindDelete, key: k, old: cur, obj: version}
				delete(truth, k)
			} else {
				n = notification{kind: KindUpdate, key: k, old: cur, obj: version}
				truth[k] = version
			}
		} else {
			version++
			n = notification{kind: KindAdd, key: k, obj: version}
			truth[k] = version
		}
		log = append(log, fmt.Sprintf("push %v %s %v->%v", n.kind, n.key, n.old, n.obj))
		p := o.push(context.Background(), n)
		pushedN++
		if p.merged {
			merged++
		}
		if held := b.held.Load(); held > budget || held < 0 {
			t.Fatalf("backlog holds %d exactly, budget %d", held, budget)
		}
		o.flush()
		if rng.IntN(10) == 0 || step == 59 {
			consume()
		}
	}
	consume()
	if fmt.Sprint(known) != fmt.Sprint(truth) {
		t.Fatalf("consumer ended with %v, producer with %v\n%v", known, truth, log)
	}
	if merged == 0 && received != pushedN {
		t.Fatalf("nothing merged, yet the consumer got %d of %d notifications\n%v", received, pushedN, log)
	}
	if budget == unlimited && merged > 0 {
		t.Fatalf("unlimited budget merged %d notifications", merged)
	}
	if b.held.Load() != 0 || b.isCoalescing() {
		t.Fatalf("drained outlet: backlog holds %d, coalescing %v", b.held.Load(), b.isCoalescing())
	}
	for i, active := range eps.calls {
		if active != (i%2 == 0) {
			t.Fatalf("Coalescing hook calls %v do not alternate from true", eps.calls)
		}
	}
	if len(eps.calls)%2 != 0 {
		t.Fatalf("Coalescing hook calls %v end inside an episode", eps.calls)
	}
	return merged
}

// The outlets of one listener count the notifications they keep exactly
// against one budget: however the pushes spread over the outlets, those never
// exceed the budget, the merged part holds at most one entry per key, and
// coalescing starts only once the budget is spent. Once the consumer has taken
// everything the backlog is back to zero and no chunk is left, so the next
// burst within the budget is kept exactly again: the backlog shrinks back
// after a burst.
func TestBacklogStaysWithinBudgetAndShrinks(t *testing.T) {
	const outlets, keysPer, budget = 4, 50, 3000
	b := &backlog{budget: budget, name: "test", observer: &episodes{}, logger: klog.Background()}
	var outs []*outlet
	for range outlets {
		o, err := newOutlet(&worker{bell: doorbell.New()}, 2, false, b)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	check := func(when string) (exact int) {
		t.Helper()
		depth := 0
		for _, o := range outs {
			o.mu.Lock()
			for _, c := range o.mu.over.exact {
				exact += len(c)
			}
			depth += o.mu.over.depth()
			o.mu.Unlock()
		}
		if held := b.held.Load(); held != int64(exact) || exact > budget {
			t.Fatalf("%s: %d notifications kept exactly, backlog holds %d, budget %d", when, exact, held, budget)
		}
		if depth > budget+outlets*keysPer {
			t.Fatalf("%s: %d in overflows, more than budget %d + %d keys", when, depth, budget, outlets*keysPer)
		}
		return exact
	}
	version := 0
	burst := func(perOutlet int) (merged int) {
		for i := range perOutlet * outlets {
			o := outs[i%outlets]
			key := fmt.Sprintf("ns/o%d-k%d", i%outlets, i/outlets%keysPer)
			version++
			if o.push(context.Background(), notification{kind: KindUpdate, key: key, old: version - 1, obj: version}).merged {
				merged++
			}
			o.flush()
			// Each burst starts drained, so nothing has been taken meanwhile.
			if exact := check(fmt.Sprintf("push %d", i)); b.isCoalescing() && exact < budget {
				t.Fatalf("push %d: coalescing with %d of %d kept exactly", i, exact, budget)
			}
		}
		return merged
	}
	drain := func() (got int) {
		for _, o := range outs {
			for {
				batch := o.take(make([]notification, 0, 4))
				if len(batch) == 0 {
					break
				}
				got += len(batch)
				check("take")
			}
		}
		return got
	}

	// A burst of three times the budget: the budget fills, the rest merges.
	merged := burst(3 * budget / outlets)
	if merged == 0 || !b.isCoalescing() {
		t.Fatalf("burst of 3× the budget: %d merged, coalescing %v", merged, b.isCoalescing())
	}
	if exact := check("after the burst"); exact != budget {
		t.Errorf("after the burst %d notifications kept exactly, want the budget, %d", exact, budget)
	}
	drain()
	for i, o := range outs {
		if o.mu.over.exact != nil || o.mu.over.entries != nil || o.hasOverflow.Load() {
			t.Errorf("outlet %d keeps its overflow after being drained", i)
		}
	}
	if held := b.held.Load(); held != 0 || b.isCoalescing() {
		t.Fatalf("after draining: backlog holds %d, coalescing %v", held, b.isCoalescing())
	}

	// A second burst within the budget: nothing merged, every notification
	// delivered.
	const within = 500
	if merged := burst(within); merged != 0 {
		t.Errorf("burst within the budget after a drained one: %d merged", merged)
	}
	if got := drain(); got != within*outlets {
		t.Errorf("burst within the budget: %d delivered, want %d", got, within*outlets)
	}
	if held := b.held.Load(); held != 0 {
		t.Errorf("after the second drain: backlog holds %d", held)
	}
}

// The same properties with each outlet's producer and consumer on their own
// goroutines (as drain goroutines and listener workers are): the reserved
// count never exceeds the budget at any moment a checker looks, every
// notification reaches the consumer or was merged, and once everything is
// taken the backlog is zero.
func TestBacklogBudgetUnderConcurrency(t *testing.T) {
	const outlets, pushes, keys, budget = 4, 20000, 64, 1500
	b := &backlog{budget: budget, name: "test", observer: NopObserver{}, logger: klog.Background()}
	var wg sync.WaitGroup
	done, checked := make(chan struct{}), make(chan struct{})
	var over atomic.Bool
	go func() { // checker
		defer close(checked)
		for {
			select {
			case <-done:
				return
			default:
			}
			if h := b.held.Load(); h > budget || h < 0 {
				over.Store(true)
			}
		}
	}()
	var received, merged atomic.Int64
	outs := make([]*outlet, outlets)
	for i := range outlets {
		o, err := newOutlet(&worker{bell: doorbell.New()}, 8, false, b)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = o
		finished := make(chan struct{})
		wg.Add(2)
		go func() { // producer
			defer wg.Done()
			defer close(finished)
			for v := range pushes {
				if o.push(context.Background(), notification{kind: KindUpdate, key: fmt.Sprint("ns/k", v%keys), old: v - 1, obj: v}).merged {
					merged.Add(1)
				}
				o.flush()
			}
		}()
		go func() { // consumer: takes until the producer is done and nothing is left
			defer wg.Done()
			buf := make([]notification, 0, 16)
			for {
				batch := o.take(buf)
				received.Add(int64(len(batch)))
				if len(batch) > 0 {
					continue
				}
				select {
				case <-finished:
					if !o.ready() {
						return
					}
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-checked
	if over.Load() {
		t.Errorf("the backlog exceeded its budget of %d notifications", budget)
	}
	if got, want := received.Load()+merged.Load(), int64(outlets*pushes); got != want {
		t.Errorf("received %d + merged %d = %d, pushed %d", received.Load(), merged.Load(), got, want)
	}
	if held := b.held.Load(); held != 0 || b.isCoalescing() {
		t.Errorf("after draining: backlog holds %d, coalescing %v", held, b.isCoalescing())
	}
}
