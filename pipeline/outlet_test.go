package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The overflow of a Coalesce (or Grow) outlet must hand the consumer, per
// key, a valid walk from the state the consumer knew to the latest state:
// checked here on random notification streams pushed into an outlet whose
// consumer is asleep, then drained, for many seeds.
func TestOutletOverflowKeepsValidWalks(t *testing.T) {
	for _, policy := range []FullRingPolicy{Coalesce, Grow} {
		for seed := range uint64(300) {
			t.Run(fmt.Sprintf("policy=%v/seed=%d", policy, seed), func(t *testing.T) {
				checkOverflowWalks(t, policy, seed)
			})
		}
	}
}

func checkOverflowWalks(t *testing.T, policy FullRingPolicy, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := &worker{bell: make(chan struct{}, 1)}
	o, err := newOutlet(w, 2, policy)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"ns/a", "ns/b", "ns/c"}
	truth := map[string]int{} // the producer's state: key -> version (absent: not in map)
	known := map[string]int{} // what the consumer was told
	version := 0
	var log []string
	consume := func() {
		for {
			batch := o.take(make([]notification, 0, 4))
			if len(batch) == 0 {
				return
			}
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
		o.push(context.Background(), n)
		o.flush()
		if rng.IntN(10) == 0 || step == 59 {
			consume()
		}
	}
	consume()
	if fmt.Sprint(known) != fmt.Sprint(truth) {
		t.Fatalf("consumer ended with %v, producer with %v\n%v", known, truth, log)
	}
}
