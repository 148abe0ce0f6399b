package index

// TableStats describes the long-lived structures of a partition: its item
// table (live cells, slots, tombstones) and its index value sets, so that
// a soak test or a metrics endpoint can see them stay bounded under churn.
type TableStats struct {
	Live       int // cells in the item table: the objects (Len)
	Slots      int // slots of the item table's array
	Tombstones int // slots holding a removed cell's tombstone, until the next rebuild drops them
	IndexSets  int // value sets over all indexes (one per indexed value with members or not yet removed)
}

// Stats returns p's TableStats. Any goroutine: it loads the current item
// array and each slot atomically, like a scan, and reads each index's set
// count; O(slots). The numbers are not one atomic snapshot.
func (p *Partition) Stats() TableStats {
	s := p.st.Load()
	a := s.items.arr.Load()
	st := TableStats{Live: int(s.items.live.Load()), Slots: len(a.cells)}
	for i := range a.cells {
		if a.cells[i].Load() == tombstone {
			st.Tombstones++
		}
	}
	for _, ix := range s.idx {
		st.IndexSets += ix.sets.Size()
	}
	return st
}
