package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
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
				n = notification{kind: KindDelete, key: k, obj: cur}
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
