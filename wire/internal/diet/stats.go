package diet

// Stats describes an Applier's long-lived caches, for a soak test or a
// metrics endpoint to see that they stay bounded: the interners (a fixed
// number of string slots and a bounded cache of shared values each, at
// most one interner per decoder goroutine) and
// the versions table of sharing (one entry per key seen, swept as its
// pods are collected).
type Stats struct {
	Interners       int // interners kept for the decoders, idle or in use (at most one per decoder goroutine)
	InternedStrings int // strings held by those interners (at most 8192 each)
	SharedValues    int // shared values cached by those interners (at most maxSharedSlots each)
	Versions        int // entries of the versions table (0 without sharing)
	VersionsDead    int // of those, entries whose pod was collected, left for their stripe's next sweep
}

// Stats counts a's caches. Safe for concurrent use with decoding: it reads
// the interners' counts of the slots they use without taking any of them
// from the decoders, and holds each versions stripe's mutex while counting
// it; O(interners + versions), for an occasional sample.
func (a *Applier) Stats() Stats {
	var st Stats
	a.interners.each(func(t *interner) {
		st.Interners++
		st.InternedStrings += int(t.counts.strings.Load())
		st.SharedValues += int(t.counts.shared.Load())
	})
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
