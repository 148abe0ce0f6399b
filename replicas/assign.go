package replicas

import (
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

// Errors of Assign.
var (
	ErrSlots  = errors.New("replicas: slot count must be a power of two between 1 and 2048")
	ErrMember = errors.New("replicas: member name must not be empty")
)

// Assignment maps every slot of the hash space to one member, or to none
// when there are no members. Build it with Assign; the zero Assignment has
// no slots and must not be queried. Immutable; may be copied.
type Assignment struct {
	shift   uint     // 64 - log2(slots)
	members []string // sorted, unique
	owner   []int32  // slot → index into members, -1 when members is empty
}

// Assign assigns each of slots equal slots of the hash space to one of
// members (duplicates ignored) by rendezvous hashing with exact quotas:
// every member gets ⌊slots/N⌋ or ⌈slots/N⌉ slots. See the package
// documentation. With no members every slot is unowned.
func Assign(members []string, slots int) (Assignment, error) {
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
	// Every (member, slot) pair by decreasing weight; equal weights keep
	// the order of generation, by member (ms is sorted) then slot: a total
	// order that depends on the names only.
	pairs := make([]pair, 0, len(ms)*slots)
	for i, m := range ms {
		seed := shardselector.Hash(m)
		for s := range slots {
			pairs = append(pairs, pair{weight(seed, uint64(s)), int32(i), int32(s)})
		}
	}
	sortByWeight(pairs)
	// A pair's slot goes to its member if the slot is free and the member
	// below quota: ⌊slots/N⌋, and one more while fewer than slots mod N
	// members hold one more. The quotas sum to slots, so every slot is
	// taken (see the package documentation).
	floor, extra := slots/len(ms), slots%len(ms)
	held := make([]int, len(ms))
	free := slots
	for _, p := range pairs {
		if a.owner[p.slot] >= 0 {
			continue
		}
		switch h := held[p.m]; {
		case h < floor:
		case h == floor && extra > 0:
			extra--
		default:
			continue
		}
		a.owner[p.slot] = p.m
		held[p.m]++
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
