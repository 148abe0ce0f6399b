package fifo_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/fifo"
)

func TestMarkWaitsForEveryEarlierKey(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	mustNil(t, "Add", q.Add("ns/b", configMap("ns/b", 2)))
	q.Mark(fifo.Mark{Seq: 1, RV: "2"})

	a := q.Pop(nil, 1)
	mustNil(t, "Add", q.Add("ns/c", configMap("ns/c", 3))) // after the mark
	if m, ok := q.Done(a); ok {
		t.Fatalf("Done(ns/a) = %+v, want no mark: ns/b is still queued", m)
	}
	b := q.Pop(nil, 1)
	if m, ok := q.Done(nil); ok {
		t.Fatalf("Done(nil) = %+v with ns/b popped but not Done, want no mark", m)
	}
	if m, ok := q.Done(b); !ok || m != (fifo.Mark{Seq: 1, RV: "2"}) {
		t.Fatalf("Done(ns/b) = %+v, %v; want mark 1", m, ok)
	}
	if m, ok := q.Done(q.Pop(nil, 1)); ok {
		t.Fatalf("Done(ns/c) = %+v, want no mark: mark 1 was already reported", m)
	}
}

func TestMarkWaitsForKeyInFlight(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	flying := q.Pop(nil, 10)
	q.Mark(fifo.Mark{Seq: 7, RV: "1"})
	// A new change to the in-flight key is queued behind the mark.
	mustNil(t, "Update", q.Update("ns/a", configMap("ns/a", 2)))
	if m, ok := q.Done(flying); !ok || m.Seq != 7 {
		t.Fatalf("Done(in-flight ns/a) = %+v, %v; want mark 7", m, ok)
	}
}

func TestMarkOnIdleQueueCompletesOnDoneNil(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	q.Mark(fifo.Mark{Seq: 1, RV: "10"})
	q.Mark(fifo.Mark{Seq: 2, RV: "11"})
	if m, ok := q.Done(nil); !ok || m != (fifo.Mark{Seq: 2, RV: "11"}) {
		t.Fatalf("Done(nil) = %+v, %v; want the newest mark, 2", m, ok)
	}
	if m, ok := q.Done(nil); ok {
		t.Fatalf("second Done(nil) = %+v, want nothing", m)
	}
	// After a full drain the queue is idle again.
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	q.Done(q.Pop(nil, 10))
	q.Mark(fifo.Mark{Seq: 3, RV: "12"})
	if m, ok := q.Done(nil); !ok || m.Seq != 3 {
		t.Fatalf("Done(nil) after a drain = %+v, %v; want mark 3", m, ok)
	}
}

// TestMarksRandom checks marks against a model: every time a key enters the
// queue it becomes a new entry; a mark depends on the entries queued or in
// flight when it was made; Done must report the newest unreported mark whose
// entries are all Done, and nothing if there is none. Writes keep arriving
// between Pop and Done.
func TestMarksRandom(t *testing.T) {
	for _, seed := range seeds(200) {
		if err := runMarks(seed, 300); err != nil {
			t.Fatalf("seed %d (rerun with -run=%s -fifo.seed=%d): %v", seed, t.Name(), seed, err)
		}
	}
}

func runMarks(seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, 0x3a4c))
	known := newMapKnown()
	q, err := fifo.New(fifo.Config{Known: known})
	if err != nil {
		return err
	}
	type modelMark struct {
		fifo.Mark
		needs map[int]bool // entry ids
	}
	var (
		nextEntry int
		queued    = map[string]int{} // key -> entry id
		inFlight  = map[string]int{}
		marks     []modelMark
		seq       uint64
		batch     []fifo.Item
		lastSeq   uint64
		log       []string
	)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s\nlog:\n  %s", fmt.Sprintf(format, args...), strings.Join(log, "\n  "))
	}
	for range steps {
		switch r := rng.IntN(10); {
		case r < 4: // writes never dropped: Update of any key
			key := fmt.Sprintf("ns/k%d", rng.IntN(8))
			if err := q.Update(key, configMap(key, 1)); err != nil {
				return err
			}
			if _, ok := queued[key]; !ok {
				queued[key] = nextEntry
				nextEntry++
			}
			log = append(log, "update "+key)
		case r < 6:
			seq++
			m := modelMark{Mark: fifo.Mark{Seq: seq, RV: fmt.Sprint(seq)}, needs: map[int]bool{}}
			for _, id := range queued {
				m.needs[id] = true
			}
			for _, id := range inFlight {
				m.needs[id] = true
			}
			marks = append(marks, m)
			q.Mark(m.Mark)
			log = append(log, fmt.Sprintf("mark %d", seq))
		case batch == nil:
			batch = q.Pop(nil, 1+rng.IntN(3))
			for _, it := range batch {
				id, ok := queued[it.Key]
				if !ok {
					return fail("popped %s, which the model does not have queued", it.Key)
				}
				delete(queued, it.Key)
				inFlight[it.Key] = id
			}
			log = append(log, "pop "+describeItems(batch))
		default:
			for _, it := range batch {
				known.apply(it)
			}
			for _, it := range batch {
				id := inFlight[it.Key]
				delete(inFlight, it.Key)
				for _, m := range marks {
					delete(m.needs, id)
				}
			}
			want := -1
			for i, m := range marks {
				if len(m.needs) == 0 {
					want = i
				}
			}
			got, ok := q.Done(batch)
			log = append(log, fmt.Sprintf("done -> %+v %v", got, ok))
			batch = nil
			switch {
			case want < 0 && ok:
				return fail("Done reported mark %d; no mark is complete", got.Seq)
			case want >= 0 && !ok:
				return fail("Done reported no mark; mark %d is complete", marks[want].Seq)
			case want >= 0 && got != marks[want].Mark:
				return fail("Done reported mark %+v, want %+v", got, marks[want].Mark)
			}
			if ok {
				if got.Seq <= lastSeq {
					return fail("mark %d reported after mark %d", got.Seq, lastSeq)
				}
				lastSeq = got.Seq
				marks = marks[want+1:]
			}
		}
	}
	return nil
}
