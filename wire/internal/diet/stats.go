package diet

// Stats describes an Applier's long-lived caches, for a soak test or a
// metrics endpoint to see that they stay bounded: the interners (a fixed
// number of slots each, at most one interner per decoder goroutine) and
// the versions table of sharing (one entry per key seen, swept as its
// pods are collected).
type Stats struct {
	Interners       int // interners idle in the pool when counted (one busy decoding is not counted)
	InternedStrings int // strings held by those interners (at most 8192 each)
	SharedValues    int // shared values cached by those interners (at most maxSharedSlots each)
	Versions        int // entries of the versions table (0 without sharing)
	VersionsDead    int // of those, entries whose pod was collected, left for their stripe's next sweep
}

// Stats counts a's caches. Safe for concurrent use with decoding: it takes
// each idle interner out of the pool while counting it (a decoder that
// finds the pool empty meanwhile makes a fresh interner, as at the start)
// and holds each versions stripe's mutex while counting it. It walks every
// slot and entry: O(interners × 12k + versions), for an occasional sample.
func (a *Applier) Stats() Stats {
	var st Stats
	var taken []*interner
	for range cap(a.interners) {
		select {
		case t := <-a.interners:
			taken = append(taken, t)
		default:
		}
	}
	for _, t := range taken {
		st.Interners++
		for i := range t.slots {
			if t.slots[i] != "" {
				st.InternedStrings++
			}
		}
		for i := range t.shared {
			if t.shared[i].val != nil {
				st.SharedValues++
			}
		}
		a.interners.put(t)
	}
	if v := a.versions; v != nil {
		for i := range v.stripes {
			s := &v.stripes[i]
			s.mu.Lock()
			st.Versions += len(s.m)
			for _, e := range s.m {
				if e.pod.Value() == nil {
					st.VersionsDead++
				}
			}
			s.mu.Unlock()
		}
	}
	return st
}
