package replicas

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/shardinformer/shardinformer/shardselector"
)

// DefaultSlots is the number of slots Assign is usually given.
const DefaultSlots = 256

// MaxSlots bounds the slot count: a member's selector has at most
// MaxSlots/2 ranges, about 80 bytes each, and the API server's parser
// refuses expressions over 100,000 code points (TestWorstSelector).
const MaxSlots = 1 << 11

// Errors of Assign and Sticky.
var (
	ErrSlots  = errors.New("replicas: slot count must be a power of two between 1 and 2048")
	ErrMember = errors.New("replicas: member name must not be empty")
	ErrHeld   = errors.New("replicas: held slot out of range")
)

// Assignment maps every slot of the hash space to one member, or to none
// when there are no members. Build it with Assign or Sticky; the zero
// Assignment has no slots and must not be queried. Immutable; may be
// copied.
type Assignment struct {
	shift   uint     // 64 - log2(slots)
	members []string // sorted, unique
	owner   []int32  // slot → index into members, -1 when members is empty
}

// Assign assigns each of slots equal slots of the hash space to one of
// members (duplicates ignored) by rendezvous hashing with exact quotas:
// every member gets ⌊slots/N⌋ or ⌈slots/N⌉ slots. See the package
// documentation. With no members every slot is unowned. It is Sticky with
// nothing held.
func Assign(members []string, slots int) (Assignment, error) {
	return Sticky(members, slots, nil)
}

// Sticky is Assign starting from the slots the members hold: held maps a
// member to the slots it holds (in any order, duplicates ignored); the slots
// of names that are not members are free, and a slot held by several
// members counts as held by the one with the heaviest rendezvous weight
// for it. Every member keeps as many of its slots as its quota allows —
// the ⌈slots/N⌉ quotas going first to members holding more than
// ⌊slots/N⌋ — and the other slots go to members below their quota as
// Assign gives them, so that the fewest slots change hands that any
// exactly balanced assignment could, and following the result (a member
// taking a free slot it is given, or letting go of a slot it is not) does
// not change it. See the package documentation. A held slot outside
// [0, slots) is an error (ErrHeld).
func Sticky(members []string, slots int, held map[string][]int) (Assignment, error) {
	if slots < 1 || slots > MaxSlots || slots&(slots-1) != 0 {
		return Assignment{}, fmt.Errorf("%w, got %d", ErrSlots, slots)
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	if len(ms) > 0 && ms[0] == "" {
		return Assignment{}, ErrMember
	}
	a := Assignment{shift: uint(64 - bits.TrailingZeros(uint(slots))), members: ms, owner: make([]int32, slots)}
	for s := range a.owner {
		a.owner[s] = -1
	}
	if len(ms) == 0 {
		return a, nil
	}
	seeds := make([]uint64, len(ms))
	for i, m := range ms {
		seeds[i] = shardselector.Hash(m)
	}
	// The holder of each slot: of the members holding it, the heaviest
	// (equal weights: the smaller name, the earlier in ms).
	holder := make([]int32, slots)
	for s := range holder {
		holder[s] = -1
	}
	for name, ss := range held {
		i, live := slices.BinarySearch(ms, name)
		for _, s := range ss {
			if s < 0 || s >= slots {
				return Assignment{}, fmt.Errorf("%w: %s holds slot %d of %d", ErrHeld, name, s, slots)
			}
			if !live {
				continue
			}
			w := weight(seeds[i], uint64(s))
			if h := holder[s]; h < 0 || w > weight(seeds[h], uint64(s)) || (w == weight(seeds[h], uint64(s)) && int32(i) < h) {
				holder[s] = int32(i)
			}
		}
	}
	mine := make([][]int, len(ms)) // slots held, by member
	for s, h := range holder {
		if h >= 0 {
			mine[h] = append(mine[h], s)
		}
	}
	// Quotas: ⌊slots/N⌋, and ⌈slots/N⌉ for up to slots mod N members
	// holding more than ⌊slots/N⌋, those of the heaviest seed first (equal
	// seeds: the smaller name). A member's rank depends on whether it holds
	// more than ⌊slots/N⌋, not on how many more, so that a member letting
	// go of surplus slots keeps its quota. The extra quotas left go to the
	// first members to fill up, as in Assign.
	floor, extra := slots/len(ms), slots%len(ms)
	quota := make([]int, len(ms))
	dynamic := make([]bool, len(ms)) // may take an extra quota while filling
	var over []int
	for i := range ms {
		quota[i] = floor
		if len(mine[i]) > floor {
			over = append(over, i)
		}
	}
	slices.SortStableFunc(over, func(x, y int) int { return cmp.Compare(seeds[y], seeds[x]) })
	for _, i := range over[:min(extra, len(over))] {
		quota[i]++
	}
	extra -= min(extra, len(over))
	// Keep: each member its held slots up to its quota, heaviest first.
	owned := make([]int, len(ms)) // slots owned so far, by member
	for i, ss := range mine {
		dynamic[i] = len(ss) <= floor
		if len(ss) > quota[i] {
			slices.SortStableFunc(ss, func(x, y int) int {
				return cmp.Compare(weight(seeds[i], uint64(y)), weight(seeds[i], uint64(x)))
			})
			ss = ss[:quota[i]]
		}
		for _, s := range ss {
			a.owner[s] = int32(i)
		}
		owned[i] = len(ss)
	}
	// Every (member with room, slot not kept) pair by decreasing weight;
	// equal weights keep the order of generation, by member (ms is
	// sorted) then slot: a total order that depends on the names only. A
	// pair's slot goes to its member if the slot is free and the member
	// below quota, or at it and may still take an extra one. The quotas
	// sum to slots, so every slot is taken (see the package
	// documentation).
	free := 0
	for s := range a.owner {
		if a.owner[s] < 0 {
			free++
		}
	}
	if free == 0 {
		return a, nil
	}
	pairs := make([]pair, 0, len(ms)*free)
	for i := range ms {
		if owned[i] == quota[i] && !(dynamic[i] && extra > 0) {
			continue
		}
		for s := range slots {
			if a.owner[s] < 0 {
				pairs = append(pairs, pair{weight(seeds[i], uint64(s)), int32(i), int32(s)})
			}
		}
	}
	sortByWeight(pairs)
	for _, p := range pairs {
		if a.owner[p.slot] >= 0 {
			continue
		}
		switch h := owned[p.m]; {
		case h < quota[p.m]:
		case h == quota[p.m] && dynamic[p.m] && extra > 0:
			extra--
			quota[p.m]++
			dynamic[p.m] = false
		default:
			continue
		}
		a.owner[p.slot] = p.m
		owned[p.m]++
		if free--; free == 0 {
			break
		}
	}
	return a, nil
}

// pair is a (member, slot) pair of Assign and its weight.
type pair struct {
	w       uint64
	m, slot int32
}

// sortByWeight sorts pairs by decreasing weight, keeping the order of
// pairs of equal weight (a least-significant-digit radix sort, a byte per
// pass: linear in len(pairs)).
func sortByWeight(pairs []pair) {
	buf := make([]pair, len(pairs))
	src, dst := pairs, buf
	for shift := 0; shift < 64; shift += 8 {
		var start [257]int
		for _, p := range src {
			start[256-int(byte(p.w>>shift))]++
		}
		for b := 1; b < 257; b++ {
			start[b] += start[b-1]
		}
		for _, p := range src {
			b := 255 - int(byte(p.w>>shift))
			dst[start[b]] = p
			start[b]++
		}
		src, dst = dst, src
	}
	// Eight passes: the sorted pairs are back in pairs.
}

// weight is the rendezvous weight of (member, slot): the splitmix64
// finalizer of the member's hash combined with the slot, so that weights
// of one member across slots, and of members for one slot, look
// independent.
func weight(seed, slot uint64) uint64 {
	z := seed ^ (slot+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Slots returns the number of slots.
func (a Assignment) Slots() int { return len(a.owner) }

// Members returns the members, sorted and without duplicates.
func (a Assignment) Members() []string { return slices.Clone(a.members) }

// Slot returns the slot holding hash h.
func (a Assignment) Slot(h uint64) int {
	if a.shift == 64 {
		return 0
	}
	return int(h >> a.shift)
}

// SlotRange returns the hashes of slot s.
func (a Assignment) SlotRange(s int) shardselector.Range {
	if a.shift == 64 {
		return shardselector.Range{Start: 0, Last: ^uint64(0)}
	}
	start := uint64(s) << a.shift
	return shardselector.Range{Start: start, Last: start + (1<<a.shift - 1)}
}

// SlotOwner returns the member owning slot s, and false when there are no
// members.
func (a Assignment) SlotOwner(s int) (string, bool) {
	if i := a.owner[s]; i >= 0 {
		return a.members[i], true
	}
	return "", false
}

// Owner returns the member owning hash h, and false when there are no
// members.
func (a Assignment) Owner(h uint64) (string, bool) { return a.SlotOwner(a.Slot(h)) }

// OwnedSlots returns the slots of member, in increasing order.
func (a Assignment) OwnedSlots(member string) []int {
	var out []int
	for s := range a.owner {
		if m, ok := a.SlotOwner(s); ok && m == member {
			out = append(out, s)
		}
	}
	return out
}

// Ranges returns the hashes of member's slots as maximal ranges, in
// increasing order; none when member is not a member.
func (a Assignment) Ranges(member string) []shardselector.Range {
	return SlotRanges(a, a.OwnedSlots(member))
}

// SlotRanges returns the hashes of the given slots of a's slot grid (in
// increasing order) as maximal ranges, in increasing order.
func SlotRanges(a Assignment, slots []int) []shardselector.Range {
	var out []shardselector.Range
	for _, s := range slots {
		r := a.SlotRange(s)
		if n := len(out); n > 0 && out[n-1].Last+1 == r.Start {
			out[n-1].Last = r.Last
			continue
		}
		out = append(out, r)
	}
	return out
}

// Selector returns the shard selector of member's ranges over
// metadata.uid, and false when member owns nothing.
func (a Assignment) Selector(member string) (shardselector.Selector, bool) {
	rs := a.Ranges(member)
	return shardselector.Selector{Field: shardselector.FieldUID, Ranges: rs}, len(rs) > 0
}

// Move is one slot changing hands; From or To is "" when the slot had or
// gets no owner.
type Move struct {
	Slot     int
	From, To string
}

// Moves returns the slots whose owner differs between from and to, in
// increasing slot order. Both must have the same slot count.
func Moves(from, to Assignment) ([]Move, error) {
	if from.Slots() != to.Slots() {
		return nil, fmt.Errorf("replicas: moves between %d and %d slots", from.Slots(), to.Slots())
	}
	var out []Move
	for s := range from.owner {
		f, _ := from.SlotOwner(s)
		t, _ := to.SlotOwner(s)
		if f != t {
			out = append(out, Move{Slot: s, From: f, To: t})
		}
	}
	return out, nil
}
