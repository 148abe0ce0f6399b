package fifo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
)

// TestPopSegmentRandom drives random marked writes (WriteAt of adds, updates
// and deletes, ReplaceAt, Mark), unmarked Resyncs and PopSegment/Done rounds,
// with more writes between Pop and Done, and checks after every step:
//
//   - a batch is a segment: no delta popped later carries a marked position at
//     or before the largest Item.Pos of an earlier batch, and every delta of a
//     Replace is popped in one batch;
//   - Item.Pos is the newest marked position among the item's deltas;
//   - once a batch is Done, Oldest() is past its largest Item.Pos, and Oldest,
//     OldestMark and LastMark agree with the marks given and those Done has
//     reported.
//
// Each written object carries its write's position (label "pos").
func TestPopSegmentRandom(t *testing.T) {
	for _, seed := range seeds(300) {
		if err := runSegments(seed, 400); err != nil {
			t.Fatalf("seed %d (rerun with -run=%s -fifo.seed=%d): %v", seed, t.Name(), seed, err)
		}
	}
}

func posObj(key string, pos uint64) *corev1.ConfigMap {
	o := configMap(key, int(pos))
	o.Labels = map[string]string{"pos": strconv.FormatUint(pos, 10)}
	return o
}

// labelPos returns the position an object was written at (0: none, as for a
// tombstone or a Sync of an older object).
func labelPos(d cache.Delta) uint64 {
	if d.Type == cache.Sync {
		return 0
	}
	o, ok := d.Object.(*corev1.ConfigMap)
	if !ok {
		return 0
	}
	p, _ := strconv.ParseUint(o.Labels["pos"], 10, 64)
	return p
}

func runSegments(seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, 0x5e6))
	known := newMapKnown()
	q, err := fifo.New(fifo.Config{Known: known})
	if err != nil {
		return err
	}
	var (
		seq      uint64
		given    []uint64 // every mark given, in order
		reported uint64   // the newest mark Done reported
		segMax   uint64   // the largest Item.Pos of every batch popped so far
		batch    []fifo.Item
		replaces = map[uint64]int{} // Replace position -> batch number it was popped in (-1: not yet)
		batches  int
		log      []string
	)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s\nlog:\n  %s", fmt.Sprintf(format, args...), strings.Join(log, "\n  "))
	}
	key := func() string { return fmt.Sprintf("ns/k%d", rng.IntN(10)) }
	mark := func(kind string) fifo.Mark {
		seq++
		given = append(given, seq)
		log = append(log, fmt.Sprintf("%s @%d", kind, seq))
		return fifo.Mark{Seq: seq, RV: fmt.Sprint("rv", seq), Before: fmt.Sprint("rv", seq-1)}
	}
	check := func() error {
		want := uint64(math.MaxUint64)
		for _, s := range given {
			if s > reported {
				want = s
				break
			}
		}
		if got := q.Oldest(); got != want {
			return fail("Oldest() = %d, want %d (reported up to %d)", got, want, reported)
		}
		m, ok := q.OldestMark()
		if ok != (want != math.MaxUint64) || ok && (m.Seq != want || m.Before != fmt.Sprint("rv", want-1)) {
			return fail("OldestMark() = %+v, %v; want Seq %d", m, ok, want)
		}
		if m, ok := q.LastMark(); ok != (seq > 0) || ok && (m.Seq != seq || m.RV != fmt.Sprint("rv", seq)) {
			return fail("LastMark() = %+v, %v; want Seq %d", m, ok, seq)
		}
		return nil
	}
	for range steps {
		switch r := rng.IntN(20); {
		case r < 6:
			k := key()
			m := mark("update " + k)
			if err := q.WriteAt(cache.Updated, k, posObj(k, m.Seq), m); err != nil {
				return err
			}
		case r < 8:
			k := key()
			m := mark("delete " + k)
			if err := q.WriteAt(cache.Deleted, k, posObj(k, m.Seq), m); err != nil {
				return err
			}
		case r < 9:
			m := mark("replace")
			var list []fifo.Keyed
			for i := range 10 {
				if rng.IntN(2) == 0 {
					k := fmt.Sprintf("ns/k%d", i)
					list = append(list, fifo.Keyed{Key: k, Object: posObj(k, m.Seq)})
				}
			}
			if err := q.ReplaceAt(list, m); err != nil {
				return err
			}
			if len(list) > 0 {
				replaces[m.Seq] = -1
			}
		case r < 10:
			q.Mark(mark("bookmark"))
		case r < 11:
			log = append(log, "resync")
			if err := q.Resync(); err != nil {
				return err
			}
		case batch == nil:
			limit := 1 + rng.IntN(3)
			batch = q.PopSegment(nil, limit)
			batches++
			var p uint64
			for _, it := range batch {
				newest := uint64(0)
				for _, d := range it.Deltas {
					lp := labelPos(d)
					if lp != 0 && lp <= segMax {
						return fail("popped %s with a delta written at %d, at or before an earlier batch's position %d", it.Key, lp, segMax)
					}
					if _, ok := replaces[lp]; ok && d.Type == cache.Replaced {
						if b := replaces[lp]; b >= 0 && b != batches {
							return fail("Replace @%d popped in batches %d and %d", lp, b, batches)
						}
						replaces[lp] = batches
					}
					newest = max(newest, lp)
				}
				if newest > it.Pos {
					return fail("%s: Item.Pos %d, but a delta was written at %d", it.Key, it.Pos, newest)
				}
				p = max(p, it.Pos)
			}
			log = append(log, fmt.Sprintf("pop(%d) -> %s (pos %d)", limit, describeItems(batch), p))
			segMax = max(segMax, p)
		default:
			for _, it := range batch {
				known.apply(it)
			}
			m, ok := q.Done(batch)
			batch = nil
			log = append(log, fmt.Sprintf("done -> %+v %v", m.Seq, ok))
			if ok {
				if m.Seq <= reported {
					return fail("Done reported mark %d after %d", m.Seq, reported)
				}
				reported = m.Seq
			}
			if o := q.Oldest(); o <= segMax {
				return fail("Oldest() = %d after Done, at or before the batches' position %d", o, segMax)
			}
		}
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// A Replace's part is popped whole even with a limit of one key, and a key
// written again while queued draws in every key queued behind it.
func TestPopSegmentExamples(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	m := func(seq uint64) fifo.Mark { return fifo.Mark{Seq: seq, RV: fmt.Sprint(seq)} }
	var list []fifo.Keyed
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		list = append(list, fifo.Keyed{Key: k, Object: posObj(k, 1)})
	}
	mustNil(t, "ReplaceAt", q.ReplaceAt(list, m(1)))
	mustNil(t, "Resync", q.Resync()) // nothing known: no Sync
	b := q.PopSegment(nil, 1)
	if got := keysOf(b); got != "ns/a ns/b ns/c" {
		t.Fatalf("PopSegment(1) after a Replace = %s, want the whole list", got)
	}
	q.Done(b)
	if o := q.Oldest(); o != math.MaxUint64 {
		t.Fatalf("Oldest() = %d after the Replace was Done, want none", o)
	}

	mustNil(t, "WriteAt", q.WriteAt(cache.Updated, "ns/a", posObj("ns/a", 2), m(2)))
	mustNil(t, "WriteAt", q.WriteAt(cache.Updated, "ns/b", posObj("ns/b", 3), m(3)))
	mustNil(t, "WriteAt", q.WriteAt(cache.Updated, "ns/a", posObj("ns/a", 4), m(4)))
	mustNil(t, "WriteAt", q.WriteAt(cache.Updated, "ns/c", posObj("ns/c", 5), m(5)))
	if o := q.Oldest(); o != 2 {
		t.Fatalf("Oldest() = %d, want 2", o)
	}
	b = q.PopSegment(nil, 1)
	// ns/a holds 2 and 4; ns/b's 3 comes before 4; ns/c's 5 after.
	if got := keysOf(b); got != "ns/a ns/b" || len(b[0].Deltas) != 2 {
		t.Fatalf("PopSegment(1) = %s, want ns/a and ns/b", got)
	}
	if b[0].Pos != 4 || b[1].Pos != 3 {
		t.Fatalf("Item.Pos = %d, %d; want 4, 3", b[0].Pos, b[1].Pos)
	}
	q.Done(b)
	if o := q.Oldest(); o != 5 {
		t.Fatalf("Oldest() = %d after Done, want 5", o)
	}
	if b := q.Pop(nil, 1); len(b) != 1 || b[0].Pos != 5 {
		t.Fatalf("Pop = %s, want ns/c at 5", describeItems(b))
	}
}

func keysOf(items []fifo.Item) string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return strings.Join(keys, " ")
}
