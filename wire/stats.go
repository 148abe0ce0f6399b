package wire

import "github.com/shardinformer/shardinformer/wire/internal/diet"

// Stats describes a ListerWatcher's long-lived caches (its memory diet's):
// interners and the table of the pods decoded last. Every number stays
// bounded however long the ListerWatcher runs; a soak test samples them.
type Stats struct {
	// Interners: the interners kept for the decoder goroutines, idle or in
	// use (at most one per goroutine); InternedStrings and SharedValues:
	// the strings and shared values they hold (at most 8192 and 65536 each:
	// the cache of shared values grows with the templates).
	Interners, InternedStrings, SharedValues int
	// Versions: entries of the table of pods decoded last (WithSharing, on
	// by WithDiet; one per key seen), VersionsDead: of those, the entries
	// whose pod was collected, which the table's next sweep removes.
	Versions, VersionsDead int
}

// Stats counts lw's caches. Safe for concurrent use with lists and
// watches; it walks every cache slot and table entry (milliseconds at 100k
// pods), so it is for occasional samples, not a hot path.
func (lw *ListerWatcher) Stats() Stats {
	var s diet.Stats
	if lw.codec != nil && lw.codec.diet != nil {
		s = lw.codec.diet.Stats()
	}
	return Stats{Interners: s.Interners, InternedStrings: s.InternedStrings, SharedValues: s.SharedValues, Versions: s.Versions, VersionsDead: s.VersionsDead}
}
