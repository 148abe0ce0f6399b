// Package index is shardinformer's cache: per-shard index partitions and Sharded, the
// cache.Indexer over all of them that an informer's GetIndexer() returns.
//
// Keys ("ns/name" or "name") are hashed into N shards. Each shard owns one Partition holding its
// objects and every index over them. A partition is written by one goroutine at a time and read by
// any number, and — the point of the package — readers never block its writer for longer than one
// small map operation. client-go guards its whole cache with one RWMutex, so listers copying
// thousands of objects out of ByIndex/List starve the single writer; here the item map and large
// value sets are single-writer open-addressing tables read without locks (table.go), small value
// sets copy-on-write arrays, the value -> set maps xsync MapOfs, and no lock is held while results
// are copied. Per object the cache costs about what client-go's maps cost (index.BenchmarkMemory).
//
// # Usage
//
//	s, err := index.NewSharded(8, shardOf, cache.DeletionHandlingMetaNamespaceKeyFunc,
//		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
//	// writer side (the pipeline): s.Partition(shardOf(key)).Upsert(key, obj), Delete, Replace;
//	// SetSyncMark(s.NextSyncMark(), rv) once the changes before rv are applied (for
//	// LastStoreSyncResourceVersion; the pipeline keeps its own store watermark instead);
//	// reader side: any cache.Indexer method, or corev1listers.NewPodLister(s).
//
// # Layout
//
// A partition publishes an immutable state (atomic.Pointer): the item map (key -> cell), the index
// list and the name -> position map. Every key has one cell; the item map and the set of every value
// the key is indexed under hold that same cell. The cell points (atomic.Pointer) to an immutable
// version: the object plus the values it is indexed under in each index, recorded when the writer
// stored it. Replace builds a fresh state and publishes it with one store; AddIndexers publishes a
// state sharing the item map with the new indexes appended, after indexing every object under them,
// so the indexer set a reader sees always matches indexes it can query.
//
// An update of a key reads, one after the other, memory that a large cache seldom has in the CPU
// caches: the key's slot (pointer and tag), its cell, the key's bytes and its current version.
// Partition.Prefetch reads them for a batch of keys at once, so that a writer about to apply the
// batch takes those misses overlapped rather than one by one (index.BenchmarkUpsertBatch).
//
// # Write protocol and what readers see
//
// The writer changes a key in this order: it adds the cell to the sets of the values the new object
// has and the old did not; it stores the new version in the cell; it removes the cell from the sets
// of values the old object had and the new does not. A new key's cell is put in the item map and its
// sets before its first version is stored; a deleted key's cell has its version cleared before it
// leaves any map. Readers ignore a cell without a version and, when reading a value set, a cell whose
// current version is not indexed under that value. So, per key, storing the version is the single
// instant at which the key's new state appears everywhere at once: in Get, in List, and in ByIndex
// of every value. An index whose values did not change is not touched at all.
//
// In Go memory-model terms: the writer's store of a version into a cell synchronizes before every
// load of the cell that returns that version, so a reader that sees a version also sees every set
// membership the writer added before storing it; the same holds for the state pointer, the small
// set arrays, the table slots and, inside xsync, the map entries. A version records each value as its set's own
// string instance, so checking a set member usually compares string pointers only.
//
// # Scans
//
// A full scan (List, ListKeys, Range, and ByIndex, IndexKeys, Index on a large value set) walks a
// table's slot array. Left alone, that could return one key twice: a member removed behind the
// scan, its tombstone taken by another key of its probe chain, and inserted again lands further
// along the chain, ahead of the scan — a key deleted and re-created, or a set member whose value
// flips A -> B -> A. So every insert into a table takes a stamp from the table's counter, recorded
// in its slot, and a scan reads the counter once when it starts and skips slots stamped after it:
// it only visits members inserted before it began. The memory-order contract that makes this exact
// is in table.go: insert n stores its slot (stamp first, then pointer) before the counter's store
// of n, and a removal's tombstone store comes before the next counter store, so a scan that loads
// the counter as s cannot see a member removed before insert s, and sees the stamp of any member it
// sees. Of a key's memberships of one table stamped up to s, all but the last were removed before
// insert s: a scan visits at most one. A rebuild (grow, shrink, or the 65535 stamps of an array
// used up) publishes a new array whose members carry stamp 0; a scan keeps the array it loaded,
// which is never written again. Small value sets are immutable arrays, read once. Stamps cost 2
// bytes per slot (index.BenchmarkMemory), and a rebuild every 65535 inserts into one table (new
// keys and index-value changes; an update that keeps its values inserts nothing).
//
// Consequently, for every read (Get, GetByKey, List, ListKeys, ByIndex, Index, IndexKeys,
// ListIndexFuncValues) of a Sharded or a Partition:
//
//   - Each object returned is one that was in the cache at some moment during the call, and ByIndex,
//     Index and IndexKeys return an object or key only if it was indexed under the queried value at
//     that moment (an index set never yields an object stored under another value).
//   - Per key, a read never returns an older state than one already returned by an earlier completed
//     call from the same goroutine (or by any call that happens before it).
//   - A key whose state does not change during the call (including one whose other index values
//     change but that keeps the queried one) is returned if and only if that state qualifies:
//     updates never make a key briefly disappear from an index.
//   - No key is returned twice. A key present (in the queried index value) throughout the call is
//     returned exactly once, even if updated meanwhile; a key added, deleted, or moved into or out
//     of the queried value during the call is returned at most once (client-go's locked read would
//     have run before or after the change). A key that was deleted and re-created, or that left the
//     queried value and came back, during the call may be missing.
//   - A read is not one atomic snapshot: it visits partitions one after the other, and within a
//     partition keys one after the other, so two keys may be seen at different moments (an object
//     updated after another may be returned in its new state while the other is in its old one).
//     Replace of a single Partition is atomic for its readers; Sharded.Replace replaces partitions
//     one at a time.
//
// The returned objects are the stored ones: callers must not modify them (as with client-go).
//
// # Stored forms
//
// With WithCodec a Sharded holds each object in another form than its readers get — the compact
// store's encoded Objects (package compact) — and its partitions store whatever form their writer
// gives them: Partition's methods take and return stored forms (the pipeline's drain and queues
// work with those), and call the codec's Decode only for the index functions. Sharded, the face
// readers see, decodes every object it returns and encodes every object written through it. The
// rest of this note holds for stored forms as for objects.
//
// # Index functions
//
// Index functions must be deterministic and must not retain or modify the object. The values an
// object was indexed under are recorded, so removing it never calls the function again; Index(name,
// obj) calls it on obj. A value returned twice counts once. If a function fails, the object is still
// stored but not indexed under that index, and the write returns an error wrapping ErrIndexFunc.
//
// # Sync marks
//
// A sync mark (seq, rv) on a partition says every change up to resource version rv has been
// applied to it. Sharded.LastStoreSyncResourceVersion is the rv of the smallest mark across
// partitions, so it is conservative: it never names a version whose earlier changes are not yet
// applied everywhere.
//
// # Goroutines and locks
//
// The package starts no goroutines. Ownership:
//   - Partition writes (Upsert, Delete, Replace, AddIndexers) are serialised by Partition.mu. In the
//     pipeline only the shard's drain goroutine writes its partition, so mu is uncontended except
//     when an informer user calls Sharded's write methods or AddIndexers.
//   - SetSyncMark is lock-free and may be called from any goroutine; marks never move backwards.
//   - Reads take no lock. The only locks a reader touches are xsync's per-bucket locks in the
//     value -> set maps, held while Range copies one bucket's few entry pointers; this is the "one
//     small map operation" a writer may wait for.
//
// Lock order: Sharded.mu (AddIndexers only) before Partition.mu, one partition at a time. xsync's
// internal locks are leaves. No callback (index function, Range's f) runs with a lock held other
// than Partition.mu for index functions during writes; index functions must not call back into the
// same partition's write methods.
package index
