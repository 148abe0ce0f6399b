package pipeline

import (
	"fmt"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/index"
	"k8s.io/client-go/tools/cache"
)

// Stats is a snapshot of the informer's gauges. Each number is read
// separately while the pipeline runs, so the snapshot is not atomic.
type Stats struct {
	// ListerWatcher says what lists and watches for the informer: the
	// ListerWatcher's String() if it has one (package wire's and the
	// factories' fallbacks do), else its Go type.
	ListerWatcher string
	Shards        []ShardStats
	Listeners     []ListenerStats
	// Compact: WithCompactStore's codec counters; nil without it.
	Compact *compact.Stats
}

// ShardStats describes one shard.
type ShardStats struct {
	Queued  int // keys waiting in the shard's queue
	Objects int // objects in the shard's index partition
	// Entries: keys the shard's queue holds an entry for (queued or in
	// flight; fifo.Queue.Entries).
	Entries int
	// Table: the partition's item table and index sets (index.Partition.Stats).
	Table index.TableStats
}

// ListenerStats describes one registered handler.
type ListenerStats struct {
	Name       string // "<handler type>#<registration number>"
	Workers    int
	InRing     int  // notifications waiting in its rings
	InOverflow int  // notifications kept exactly plus keys coalesced in its overflows
	Coalescing bool // its overflow is being merged per key (see FullRingPolicy)
}

// Stats returns the current gauges. Any goroutine; it takes no lock on the
// data path except each outlet's overflow mutex and each shard queue's,
// briefly. ShardStats.Table walks each partition's item table (about 1 ms
// per 300k objects).
func (inf *Informer) Stats() Stats {
	inf.mu.Lock()
	listeners := append([]*listener(nil), inf.mu.listeners...)
	started := inf.mu.started
	inf.mu.Unlock()
	st := Stats{ListerWatcher: describe(inf.lw)}
	if inf.codec != nil {
		cs := inf.codec.Stats()
		st.Compact = &cs
	}
	for _, s := range inf.shards {
		ss := ShardStats{Objects: s.part.Len(), Table: s.part.Stats()}
		if started {
			ss.Queued, ss.Entries = s.queue.Len(), s.queue.Entries()
		}
		st.Shards = append(st.Shards, ss)
	}
	for _, l := range listeners {
		ls := ListenerStats{Name: l.name, Workers: len(l.workers), Coalescing: l.backlog.isCoalescing()}
		for _, w := range l.workers {
			for _, o := range w.outlets {
				r, ov := o.depth()
				ls.InRing += r
				ls.InOverflow += ov
			}
		}
		st.Listeners = append(st.Listeners, ls)
	}
	return st
}

// ListerWatcher returns the ListerWatcher the informer lists and watches
// with (for example a *wire.ListerWatcher, whose Stats a soak test samples).
func (inf *Informer) ListerWatcher() cache.ListerWatcher { return inf.lw }

// describe is Stats.ListerWatcher of lw.
func describe(lw any) string {
	if s, ok := lw.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", lw)
}
