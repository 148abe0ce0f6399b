package replicas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shardinformer/shardinformer/shardselector"
)

// checkPartition checks that every hash has exactly one owner, the same
// whether asked through Owner, Ranges or Selector: the members' ranges
// are disjoint, in order, and together cover the space; random hashes and
// every slot boundary lie in the ranges of their Owner and no other's.
func checkPartition(t *testing.T, a Assignment, rng *rand.Rand) {
	t.Helper()
	members := a.Members()
	if len(members) == 0 {
		for s := range a.Slots() {
			if _, ok := a.SlotOwner(s); ok {
				t.Fatalf("slot %d owned with no members", s)
			}
		}
		return
	}
	type owned struct {
		r shardselector.Range
		m string
	}
	var all []owned
	for _, m := range members {
		for _, r := range a.Ranges(m) {
			all = append(all, owned{r, m})
		}
	}
	slices.SortFunc(all, func(x, y owned) int {
		if x.r.Start < y.r.Start {
			return -1
		}
		return 1
	})
	next := uint64(0)
	for i, o := range all {
		if o.r.Start != next || o.r.Last < o.r.Start {
			t.Fatalf("range %d %+v of %s: want start %#x", i, o.r, o.m, next)
		}
		next = o.r.Last + 1
	}
	if all[len(all)-1].r.Last != math.MaxUint64 {
		t.Fatalf("ranges end at %#x", all[len(all)-1].r.Last)
	}
	sels := map[string]shardselector.Selector{}
	for _, m := range members {
		sel, ok := a.Selector(m)
		if !ok {
			continue
		}
		// The selector must survive its trip through the API server's
		// parser.
		back, err := shardselector.Parse(sel.String())
		if err != nil {
			t.Fatalf("selector of %s does not parse: %v", m, err)
		}
		sels[m] = back
	}
	probe := func(h uint64) {
		owner, ok := a.Owner(h)
		if !ok {
			t.Fatalf("hash %#x unowned", h)
		}
		for m, sel := range sels {
			if sel.MatchesHash(h) != (m == owner) {
				t.Fatalf("hash %#x: owner %s, selector of %s matches: %v", h, owner, m, sel.MatchesHash(h))
			}
		}
	}
	for s := range a.Slots() {
		r := a.SlotRange(s)
		probe(r.Start)
		probe(r.Last)
	}
	for range 200 {
		probe(rng.Uint64())
	}
}

// TestModel runs random joins and leaves and checks after each step: the
// partition; determinism (Assign of the same set in another order, with
// duplicates, is equal); that the assignment depends only on the current
// set (equal to one built from scratch, which the model keeps); and the
// movement bound — on a join only slots the joiner now owns move, on a
// leave only the leaver's slots move, each to a member that stays.
func TestModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			slots := 1 << rng.IntN(10)
			var live []string
			prev, err := Assign(nil, slots)
			if err != nil {
				t.Fatal(err)
			}
			for step := range 60 {
				var joined, left string
				if len(live) == 0 || (len(live) < 12 && rng.IntN(2) == 0) {
					joined = fmt.Sprintf("replica-%d", rng.IntN(1000))
					if slices.Contains(live, joined) {
						continue
					}
					live = append(live, joined)
				} else {
					i := rng.IntN(len(live))
					left = live[i]
					live = slices.Delete(live, i, i+1)
				}
				cur, err := Assign(live, slots)
				if err != nil {
					t.Fatal(err)
				}
				checkPartition(t, cur, rng)

				shuffled := append(slices.Clone(live), live...)
				rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				again, _ := Assign(shuffled, slots)
				if !equal(cur, again) {
					t.Fatalf("step %d: Assign depends on the order of %v", step, live)
				}

				moves, err := Moves(prev, cur)
				if err != nil {
					t.Fatal(err)
				}
				for _, mv := range moves {
					switch {
					case joined != "" && mv.To != joined:
						t.Fatalf("step %d: join of %s moved slot %d from %s to %s", step, joined, mv.Slot, mv.From, mv.To)
					case left != "" && mv.From != left:
						t.Fatalf("step %d: leave of %s moved slot %d from %s to %s", step, left, mv.Slot, mv.From, mv.To)
					case left != "" && len(live) > 0 && !slices.Contains(live, mv.To):
						t.Fatalf("step %d: slot %d moved to %q, not a live member", step, mv.Slot, mv.To)
					}
				}
				// Everything that had to move did.
				if joined != "" && len(moves) != len(cur.OwnedSlots(joined)) {
					t.Fatalf("step %d: %d moves for %d slots of the joiner", step, len(moves), len(cur.OwnedSlots(joined)))
				}
				if left != "" && len(moves) != len(prev.OwnedSlots(left)) {
					t.Fatalf("step %d: %d moves for %d slots of the leaver", step, len(moves), len(prev.OwnedSlots(left)))
				}
				prev = cur
			}
		})
	}
}

func equal(a, b Assignment) bool {
	if a.Slots() != b.Slots() {
		return false
	}
	for s := range a.Slots() {
		x, _ := a.SlotOwner(s)
		y, _ := b.SlotOwner(s)
		if x != y {
			return false
		}
	}
	return true
}

// TestReference checks Assign against a plain restatement of the scheme:
// each slot's owner is the member of highest weight, ties to the smaller
// name, and slot s holds [s·2^64/slots, (s+1)·2^64/slots).
func TestReference(t *testing.T) {
	members := []string{"c", "a", "b", "d", "e"}
	for _, slots := range []int{1, 2, 8, 256, MaxSlots} {
		a, err := Assign(members, slots)
		if err != nil {
			t.Fatal(err)
		}
		width := uint64(0) // 2^64 wraps to 0 for one slot: Start 0, Last 0-1 = MaxUint64
		if slots > 1 {
			width = math.MaxUint64/uint64(slots) + 1
		}
		for s := range slots {
			best := ""
			for _, m := range members {
				w, bw := weight(shardselector.Hash(m), uint64(s)), weight(shardselector.Hash(best), uint64(s))
				if best == "" || w > bw || (w == bw && m < best) {
					best = m
				}
			}
			if got, _ := a.SlotOwner(s); got != best {
				t.Fatalf("slots=%d slot %d: owner %s, want %s", slots, s, got, best)
			}
			r := a.SlotRange(s)
			if r.Start != width*uint64(s) || r.Last != width*uint64(s)+width-1 {
				t.Fatalf("slots=%d slot %d: range %+v", slots, s, r)
			}
			if a.Slot(r.Start) != s || a.Slot(r.Last) != s {
				t.Fatalf("slots=%d slot %d: Slot of its bounds %d %d", slots, s, a.Slot(r.Start), a.Slot(r.Last))
			}
		}
	}
}

// TestBalance: the expected share is slots/N; the test checks every
// member gets a share and none more than twice the mean over many sets
// of names — a bound loose enough never to fail by chance for a hash that
// behaves randomly, tight enough to catch a weight that ignores the slot
// or the member.
func TestBalance(t *testing.T) {
	for n := 2; n <= 8; n++ {
		for trial := range 50 {
			var members []string
			for i := range n {
				members = append(members, fmt.Sprintf("ctrl-%d-%d", trial, i))
			}
			a, _ := Assign(members, DefaultSlots)
			mean := DefaultSlots / n
			for _, m := range members {
				if got := len(a.OwnedSlots(m)); got == 0 || got > 2*mean {
					t.Fatalf("%d members, trial %d: %s owns %d slots, mean %d", n, trial, m, got, mean)
				}
			}
		}
	}
}

// TestWorstSelector: a member owning every other slot of MaxSlots has the
// longest selector Assign can give (MaxSlots/2 ranges); the API server's
// parser accepts it.
func TestWorstSelector(t *testing.T) {
	a, _ := Assign([]string{"x"}, MaxSlots)
	var odd []int
	for s := 1; s < MaxSlots; s += 2 {
		odd = append(odd, s)
	}
	rs := SlotRanges(a, odd)
	if len(rs) != MaxSlots/2 {
		t.Fatalf("%d ranges", len(rs))
	}
	sel := shardselector.Selector{Field: shardselector.FieldUID, Ranges: rs}
	back, err := shardselector.Parse(sel.String())
	if err != nil || len(back.Ranges) != len(rs) {
		t.Fatalf("selector of %d ranges (%d bytes): %v", len(rs), len(sel.String()), err)
	}
}

// TestBadInput: each invalid argument gets its error and no assignment.
func TestBadInput(t *testing.T) {
	for _, slots := range []int{0, -1, 3, 100, MaxSlots * 2} {
		if _, err := Assign([]string{"a"}, slots); !errors.Is(err, ErrSlots) {
			t.Errorf("slots=%d: %v, want ErrSlots", slots, err)
		}
	}
	if _, err := Assign([]string{"a", ""}, 8); !errors.Is(err, ErrMember) {
		t.Errorf("empty member: %v, want ErrMember", err)
	}
	a, _ := Assign(nil, 8)
	b, _ := Assign(nil, 16)
	if _, err := Moves(a, b); err == nil {
		t.Error("Moves between different slot counts: no error")
	}
	if _, ok := a.Selector("a"); ok {
		t.Error("selector of a non-member")
	}
}
