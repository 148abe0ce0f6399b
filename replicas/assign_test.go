package replicas

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
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

// holdings returns what each member of a holds, as Sticky takes it.
func holdings(a Assignment) map[string][]int {
	h := map[string][]int{}
	for _, m := range a.Members() {
		h[m] = a.OwnedSlots(m)
	}
	return h
}

// leastMoves is the fewest slots that must change hands to go from the
// holders (per slot, "" when free) to an exactly balanced assignment of
// members, by brute force over which members get the ⌈slots/N⌉ quotas:
// slots minus the most slots the members can keep, a member keeping
// min(held, quota).
func leastMoves(members []string, holder []string) int {
	slots := len(holder)
	n := len(members)
	h := make([]int, n)
	for _, x := range holder {
		if i := slices.Index(members, x); i >= 0 {
			h[i]++
		}
	}
	floor, extra := slots/n, slots%n
	best := 0
	for set := range 1 << n {
		if bits.OnesCount(uint(set)) != extra {
			continue
		}
		kept := 0
		for i := range n {
			kept += min(h[i], floor+set>>i&1)
		}
		best = max(best, kept)
	}
	return slots - best
}

// resolve restates Sticky's rule for a slot held by several members: the
// holder is the live one of heaviest weight (equal weights: the smaller
// name). Per slot, "" when no live member holds it.
func resolve(members []string, slots int, held map[string][]int) []string {
	holder := make([]string, slots)
	for _, m := range slices.Sorted(maps.Keys(held)) {
		if !slices.Contains(members, m) {
			continue
		}
		for _, s := range held[m] {
			w := weight(shardselector.Hash(m), uint64(s))
			if x := holder[s]; x == "" || w > weight(shardselector.Hash(x), uint64(s)) {
				holder[s] = m
			}
		}
	}
	return holder
}

// checkSticky checks one Sticky: every slot owned by a member, exact
// balance, determinism (the same members and holdings in another order,
// with duplicates, and with a non-member's holdings, give the same),
// fixed point (Sticky of its own result is itself), and least movement
// (the slots whose owner is not their resolved holder number exactly
// leastMoves). It returns the assignment and that number.
func checkSticky(t *testing.T, rng *rand.Rand, live []string, slots int, held map[string][]int) (Assignment, int) {
	t.Helper()
	cur, err := Sticky(live, slots, held)
	if err != nil {
		t.Fatal(err)
	}
	for s := range slots {
		if o, ok := cur.SlotOwner(s); ok != (len(live) > 0) || (ok && !slices.Contains(live, o)) {
			t.Fatalf("%v: slot %d owned by %q", live, s, o)
		}
	}
	checkBalance(t, cur)

	shuffled := append(slices.Clone(live), live...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	held2 := map[string][]int{"not-a-member": {0}}
	for m, ss := range held {
		ss = append(slices.Clone(ss), ss...)
		rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		held2[m] = ss
	}
	if again, _ := Sticky(shuffled, slots, held2); !equal(cur, again) {
		t.Fatalf("Sticky depends on the order of %v and %v", live, held)
	}
	if len(live) > 0 {
		if fixed, _ := Sticky(live, slots, holdings(cur)); !equal(cur, fixed) {
			t.Fatalf("Sticky of its own result over %v moves slots", live)
		}
	}

	holder := resolve(live, slots, held)
	moves := 0
	for s := range slots {
		if o, _ := cur.SlotOwner(s); o != holder[s] {
			moves++
		}
	}
	if len(live) > 0 {
		if least := leastMoves(cur.Members(), holder); moves != least {
			t.Fatalf("%v over %d slots from holders %v: %d moves, least %d", live, slots, holder, moves, least)
		}
	}
	return cur, moves
}

// TestModel runs random joins and leaves, each step Sticky of the new
// members from the previous step's assignment, and checks each step with
// checkSticky and: a join moves exactly ⌊slots/N⌋ slots (N members after
// it), all to the joiner; a leave exactly the leaver's slots, all from it;
// and the members' ranges and selectors partition the hash space
// (checkPartition).
func TestModel(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			slots := 16 << (2 * rng.IntN(3))
			var live []string
			prev, err := Assign(nil, slots)
			if err != nil {
				t.Fatal(err)
			}
			for step := range 60 {
				var joined, left string
				if len(live) == 0 || (len(live) < 11 && rng.IntN(2) == 0) {
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
				cur, n := checkSticky(t, rng, live, slots, holdings(prev))
				checkPartition(t, cur, rng)
				moves, _ := Moves(prev, cur)
				if len(live) > 0 && len(moves) != n {
					t.Fatalf("step %d: Moves gives %d, checkSticky %d", step, len(moves), n)
				}
				for _, mv := range moves {
					if (joined != "" && mv.To != joined) || (left != "" && mv.From != left) {
						t.Fatalf("step %d (%s joined, %s left): slot %d moved %s -> %s", step, joined, left, mv.Slot, mv.From, mv.To)
					}
				}
				if joined != "" && len(live) > 1 && n != slots/len(live) {
					t.Fatalf("step %d: %s joined %d members: %d moves, want %d", step, joined, len(live)-1, n, slots/len(live))
				}
				if left != "" && len(live) > 0 && n != len(prev.OwnedSlots(left)) {
					t.Fatalf("step %d: %s left: %d moves, it held %d", step, left, n, len(prev.OwnedSlots(left)))
				}
				prev = cur
			}
		})
	}
}

// checkBalance checks that every member owns ⌊slots/N⌋ or ⌈slots/N⌉ slots.
func checkBalance(t *testing.T, a Assignment) {
	t.Helper()
	members := a.Members()
	if len(members) == 0 {
		return
	}
	floor := a.Slots() / len(members)
	for _, m := range members {
		if n := len(a.OwnedSlots(m)); n != floor && !(n == floor+1 && a.Slots()%len(members) != 0) {
			t.Fatalf("%d slots over %d members: %s owns %d", a.Slots(), len(members), m, n)
		}
	}
}

var movementSets = flag.Int("movement-sets", 100, "random member sets and holdings per slot count and member count in TestMovement")

// TestMovement checks, over random sets of N members (names like those of
// StatefulSet and Deployment Pods) for N = 1..10 and 16, 64 and 256
// slots, that Sticky moves exactly the least (checkSticky) from: the
// assignment of the N members when one more joins (exactly
// ⌊slots/(N+1)⌋ moves) and when one of them leaves (exactly its slots);
// arbitrary holdings (each slot free or held by a random member, live or
// not, one in eight by two); and stale holdings (the assignment of
// another random set of names sharing some members). For comparison it
// logs the moves of Assign, which ignores holdings, on the same joins
// (-v): its median and maximum as a multiple of the least.
func TestMovement(t *testing.T) {
	sets := *movementSets
	if testing.Short() {
		sets = 30
	}
	for _, slots := range []int{16, 64, 256} {
		line := fmt.Sprintf("slots=%d:", slots)
		for n := 1; n <= 10; n++ {
			rng := rand.New(rand.NewPCG(uint64(slots), uint64(n)))
			var ratios []float64
			for range sets {
				ms := randomNames(rng, n+1)
				before, _ := Assign(ms[:n], slots)
				after, moved := checkSticky(t, rng, ms, slots, holdings(before))
				if moved != slots/(n+1) || len(after.OwnedSlots(ms[n])) != moved {
					t.Fatalf("%d slots, %v joined by %s: %d moves, joiner owns %d, want %d", slots, ms[:n], ms[n], moved, len(after.OwnedSlots(ms[n])), slots/(n+1))
				}
				plain, _ := Assign(ms, slots)
				pm, _ := Moves(before, plain)
				ratios = append(ratios, float64(len(pm))/float64(moved))

				full, _ := Assign(ms, slots)
				gone := ms[rng.IntN(n+1)]
				stay := slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return m == gone })
				if _, moved := checkSticky(t, rng, stay, slots, holdings(full)); moved != len(full.OwnedSlots(gone)) {
					t.Fatalf("%d slots, %s left %v: %d moves, it held %d", slots, gone, ms, moved, len(full.OwnedSlots(gone)))
				}

				pool := append(slices.Clone(ms[:n]), randomNames(rng, 2)...)
				held := map[string][]int{}
				for s := range slots {
					switch rng.IntN(8) {
					case 0: // free
					case 1:
						held[pool[rng.IntN(len(pool))]] = append(held[pool[rng.IntN(len(pool))]], s)
						fallthrough
					default:
						m := pool[rng.IntN(len(pool))]
						held[m] = append(held[m], s)
					}
				}
				checkSticky(t, rng, ms[:n], slots, held)

				other := append(randomNames(rng, 1+rng.IntN(n)), ms[:rng.IntN(n+1)]...)
				stale, _ := Assign(other, slots)
				checkSticky(t, rng, ms[:n], slots, holdings(stale))
			}
			slices.Sort(ratios)
			line += fmt.Sprintf(" N=%d %.2f/%.2f", n, ratios[len(ratios)/2], ratios[len(ratios)-1])
		}
		t.Log(line, "(Assign's moves / Sticky's when an N+1-th member joins: median/max)")
	}
}

// TestFollow checks that following a Sticky assignment does not change
// it: from random holdings, members take free slots they are given and
// let go of slots they are not, one at a time in random order, and Sticky
// of every intermediate holding is the same assignment — so replicas
// that read the holdings at different moments of a hand-over agree on
// the target, and no slot is sent back and forth.
func TestFollow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 1000 {
		slots := 1 << rng.IntN(9)
		n := 1 + rng.IntN(10)
		ms := randomNames(rng, n)
		pool := append(slices.Clone(ms), randomNames(rng, 2)...)
		holder := make([]string, slots)
		for s := range holder {
			if rng.IntN(4) > 0 {
				holder[s] = pool[rng.IntN(len(pool))]
			}
		}
		held := func() map[string][]int {
			h := map[string][]int{}
			for s, m := range holder {
				if m != "" {
					h[m] = append(h[m], s)
				}
			}
			return h
		}
		target, err := Sticky(ms, slots, held())
		if err != nil {
			t.Fatal(err)
		}
		for {
			var steps []int
			for s, m := range holder {
				if o, _ := target.SlotOwner(s); o != m {
					steps = append(steps, s)
				}
			}
			if len(steps) == 0 {
				break
			}
			s := steps[rng.IntN(len(steps))]
			if holder[s] == "" {
				holder[s], _ = target.SlotOwner(s) // the owner takes its free slot
			} else {
				holder[s] = "" // the holder lets go
			}
			if again, _ := Sticky(ms, slots, held()); !equal(target, again) {
				t.Fatalf("%v, %d slots: the target changed after slot %d went to %q (holders %v)", ms, slots, s, holder[s], holder)
			}
		}
	}
}

// randomNames returns n distinct names, each like a StatefulSet's Pod
// (ctrl-12) or a Deployment's (ctrl-5d8f7c9b4-x2k7q).
func randomNames(rng *rand.Rand, n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var m string
		if rng.IntN(2) == 0 {
			m = fmt.Sprintf("ctrl-%d", rng.IntN(100000))
		} else {
			m = fmt.Sprintf("ctrl-%09x-%05x", rng.Uint64()>>28, rng.IntN(1<<20))
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
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

// TestReference checks Assign and Sticky against a plain restatement of
// the scheme, one slot at a time, over no holdings and random ones (each
// slot free or held by one or two random names, members or not); and that
// slot s holds [s·2^64/slots, (s+1)·2^64/slots).
func TestReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, slots := range []int{1, 2, 8, 16, 256, MaxSlots} {
		for _, members := range [][]string{{"c", "a", "b", "d", "e"}, randomNames(rng, 3), randomNames(rng, 10)} {
			a, err := Assign(members, slots)
			if err != nil {
				t.Fatal(err)
			}
			if slots <= 256 {
				pool := append(slices.Clone(members), "x", "y")
				for round := range 4 {
					held := map[string][]int{}
					for s := range slots {
						for range rng.IntN(3) * min(round, 1) {
							m := pool[rng.IntN(len(pool))]
							held[m] = append(held[m], s)
						}
					}
					got := a
					if round > 0 {
						got, _ = Sticky(members, slots, held)
					}
					want := reference(members, resolve(members, slots, held))
					for s := range slots {
						if o, _ := got.SlotOwner(s); o != want[s] {
							t.Fatalf("%v slots=%d held %v slot %d: owner %s, want %s", members, slots, held, s, o, want[s])
						}
					}
				}
			}
			width := uint64(0) // 2^64 wraps to 0 for one slot: Start 0, Last 0-1 = MaxUint64
			if slots > 1 {
				width = math.MaxUint64/uint64(slots) + 1
			}
			for s := range slots {
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
}

// reference restates Sticky in O(slots²·N), given each slot's holder (""
// when free). Quotas: ⌊slots/N⌋ each; ⌈slots/N⌉ for the members holding
// more than ⌊slots/N⌋, by decreasing hash of the name (then the smaller
// name), while fewer than slots mod N have it. Each member keeps its
// heaviest held slots up to its quota (equal weights: the smaller slot).
// Then, one slot at a time, of the pairs (free slot, member below its
// quota, or at ⌊slots/N⌋ holding no more than that at the start while
// extra quotas remain), the heaviest takes its slot (equal weights: the
// smaller name, then the smaller slot); a member so taking a slot past
// ⌊slots/N⌋ uses one extra quota.
func reference(members []string, holder []string) []string {
	slots := len(holder)
	members = slices.Compact(slices.Sorted(slices.Values(members)))
	floor, extra := slots/len(members), slots%len(members)
	count := map[string]int{}
	for _, m := range holder {
		count[m]++
	}
	quota := map[string]int{}
	var over []string
	for _, m := range members {
		quota[m] = floor
		if count[m] > floor {
			over = append(over, m)
		}
	}
	sort.SliceStable(over, func(i, j int) bool { return shardselector.Hash(over[i]) > shardselector.Hash(over[j]) })
	for _, m := range over {
		if extra > 0 {
			quota[m]++
			extra--
		}
	}
	owner := make([]string, slots)
	held := map[string]int{}
	for _, m := range members {
		var ss []int
		for s, x := range holder {
			if x == m {
				ss = append(ss, s)
			}
		}
		sort.SliceStable(ss, func(i, j int) bool {
			return weight(shardselector.Hash(m), uint64(ss[i])) > weight(shardselector.Hash(m), uint64(ss[j]))
		})
		for _, s := range ss[:min(len(ss), quota[m])] {
			owner[s] = m
			held[m]++
		}
	}
	for {
		bestM, bestS, bestW := "", -1, uint64(0)
		for _, m := range members {
			if h := held[m]; h > quota[m] || (h == quota[m] && (extra == 0 || count[m] > floor || quota[m] > floor)) {
				continue
			}
			for s := range slots {
				if owner[s] != "" {
					continue
				}
				w := weight(shardselector.Hash(m), uint64(s))
				if bestS < 0 || w > bestW || (w == bestW && (m < bestM || (m == bestM && s < bestS))) {
					bestM, bestS, bestW = m, s, w
				}
			}
		}
		if bestS < 0 {
			return owner
		}
		owner[bestS] = bestM
		if held[bestM] == quota[bestM] {
			extra--
			quota[bestM]++
		}
		held[bestM]++
	}
}

// TestBalance: every member owns ⌊slots/N⌋ or ⌈slots/N⌉ slots, over
// random sets of 1 to 40 members, more than the slots included.
func TestBalance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, slots := range []int{1, 2, 16, 64, 256} {
		for n := 1; n <= 40; n++ {
			for range 5 {
				a, err := Assign(randomNames(rng, n), slots)
				if err != nil {
					t.Fatal(err)
				}
				checkBalance(t, a)
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
	for _, s := range []int{-1, 8} {
		if _, err := Sticky([]string{"a"}, 8, map[string][]int{"a": {0, s}}); !errors.Is(err, ErrHeld) {
			t.Errorf("held slot %d of 8: %v, want ErrHeld", s, err)
		}
	}
	if _, err := Sticky([]string{"a"}, 8, map[string][]int{"gone": {9}}); !errors.Is(err, ErrHeld) {
		t.Errorf("a non-member holding slot 9 of 8: %v, want ErrHeld", err)
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

// BenchmarkAssign: the cost of one Assign, which a runner pays once per
// membership round.
func BenchmarkAssign(b *testing.B) {
	for _, c := range []struct{ slots, members int }{{16, 3}, {256, 10}, {MaxSlots, 100}} {
		b.Run(fmt.Sprintf("slots=%d/members=%d", c.slots, c.members), func(b *testing.B) {
			ms := randomNames(rand.New(rand.NewPCG(1, 1)), c.members)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Assign(ms, c.slots); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
