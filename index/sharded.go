package index

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Sharded is the cache.Indexer over all partitions. Writes route by key to one partition; reads
// merge partitions. It is what informer.GetIndexer() returns, so generated listers
// (corev1listers.NewPodLister(sharded)) work unchanged.
//
// All methods are safe for concurrent use. In the pipeline, partitions are written by their shards'
// drain goroutines through Partition; Sharded's own write methods (Add, Update, Delete, Replace,
// Bookmark) exist for cache.Indexer users and take the partition writer mutex like any writer.
// Reads are not one atomic snapshot across partitions; doc.go says exactly what they return.
// A Sharded must not be copied.
type Sharded struct {
	parts   []*Partition
	shardOf func(key string) int
	keyFunc cache.KeyFunc
	// marks is the last sync mark number allocated by NextSyncMark.
	marks atomic.Uint64
	// indexers is the published, immutable indexer set. Every partition has every index in it
	// (AddIndexers publishes only after all partitions have the new indexes).
	indexers atomic.Pointer[cache.Indexers]
	// codec, if set (WithCodec), turns the stored forms of objects back into objects for readers
	// and objects written through Sharded into stored forms.
	codec Codec

	mu struct {
		// Mutex serialises AddIndexers: checking, adding to every partition, publishing indexers.
		sync.Mutex
	}
}

var _ cache.Indexer = (*Sharded)(nil)

// A Codec lets a cache hold its objects in another form than the one its readers get, e.g. the
// encoded bytes of the compact store (package compact). Partitions store what their writer gives
// them — the stored form — and call Decode for their index functions; Sharded's reads return
// Decode of what they find and its writes store Encode of what they are given. Both must be safe
// for concurrent use, and Decode(Encode(obj)) must equal obj for every reader's purpose (index
// functions included). Decode must return anything that is not a stored form as it is.
type Codec interface {
	Encode(obj any) (stored any, err error)
	Decode(stored any) (obj any, err error)
}

// Option configures a Sharded.
type Option func(*Sharded)

// WithCodec stores objects in c's form (see Codec). A read that cannot decode an object returns
// the error (GetByKey, Get, ByIndex, Index) or, where it has none (List), leaves the object out
// and logs the error.
func WithCodec(c Codec) Option { return func(s *Sharded) { s.codec = c } }

// NewSharded returns an empty Sharded of n partitions. shardOf must map every key to [0, n)
// (a key it maps elsewhere makes the call that routes it panic); keyFunc is the informer's key
// function (cache.DeletionHandlingMetaNamespaceKeyFunc in the pipeline). indexers is copied.
func NewSharded(n int, shardOf func(key string) int, keyFunc cache.KeyFunc, indexers cache.Indexers, opts ...Option) (*Sharded, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("index: shard count %d, want >= 1", n)
	case shardOf == nil:
		return nil, errors.New("index: nil shardOf")
	case keyFunc == nil:
		return nil, errors.New("index: nil keyFunc")
	}
	if err := checkNewIndexers(nil, indexers); err != nil {
		return nil, err
	}
	s := &Sharded{parts: make([]*Partition, n), shardOf: shardOf, keyFunc: keyFunc}
	for _, o := range opts {
		o(s)
	}
	for i := range s.parts {
		s.parts[i] = NewPartition(indexers)
		s.parts[i].codec = s.codec
	}
	idx := maps.Clone(indexers)
	if idx == nil {
		idx = cache.Indexers{}
	}
	s.indexers.Store(&idx)
	return s, nil
}

// Partition returns partition i, 0 <= i < Shards().
func (s *Sharded) Partition(i int) *Partition { return s.parts[i] }

// Shards returns the number of partitions.
func (s *Sharded) Shards() int { return len(s.parts) }

// NextSyncMark allocates the next mark number (atomic counter shared by Bookmark/Replace and the
// pipeline). The first mark is 1.
func (s *Sharded) NextSyncMark() uint64 { return s.marks.Add(1) }

// shard returns shardOf(key), panicking if it is out of range (a broken invariant of the caller).
func (s *Sharded) shard(key string) int {
	i := s.shardOf(key)
	if i < 0 || i >= len(s.parts) {
		panic(fmt.Sprintf("index: shardOf(%q) = %d, want [0, %d)", key, i, len(s.parts)))
	}
	return i
}

func (s *Sharded) partitionOf(key string) *Partition { return s.parts[s.shard(key)] }

func (s *Sharded) key(obj any) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	key, err := s.keyFunc(obj)
	if err != nil {
		return "", cache.KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// Add stores obj under its key. An index function failure is returned (wrapping ErrIndexFunc)
// after obj has been stored; see Partition.Upsert.
func (s *Sharded) Add(obj any) error { return s.Update(obj) }

// Update stores obj under its key, like Add.
func (s *Sharded) Update(obj any) error {
	key, err := s.key(obj)
	if err != nil {
		return err
	}
	if obj, err = s.encode(obj); err != nil {
		return err
	}
	_, _, err = s.partitionOf(key).Upsert(key, obj)
	return err
}

// encode returns obj's stored form.
func (s *Sharded) encode(obj any) (any, error) {
	if s.codec == nil {
		return obj, nil
	}
	stored, err := s.codec.Encode(obj)
	if err != nil {
		return nil, fmt.Errorf("index: encode: %w", err)
	}
	return stored, nil
}

// decode returns the object of a stored form.
func (s *Sharded) decode(stored any) (any, error) {
	if s.codec == nil {
		return stored, nil
	}
	obj, err := s.codec.Decode(stored)
	if err != nil {
		return nil, fmt.Errorf("index: decode: %w", err)
	}
	return obj, nil
}

// decodeAll decodes objs in place.
func (s *Sharded) decodeAll(objs []any) ([]any, error) {
	if s.codec == nil {
		return objs, nil
	}
	for i, o := range objs {
		var err error
		if objs[i], err = s.decode(o); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// Delete removes the object stored under obj's key (a cache.DeletedFinalStateUnknown's Key).
func (s *Sharded) Delete(obj any) error {
	key, err := s.key(obj)
	if err != nil {
		return err
	}
	s.partitionOf(key).Delete(key)
	return nil
}

// Get returns the object stored under obj's key.
func (s *Sharded) Get(obj any) (item any, exists bool, err error) {
	key, err := s.key(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (s *Sharded) GetByKey(key string) (item any, exists bool, err error) {
	item, exists = s.partitionOf(key).Get(key)
	if !exists {
		return nil, false, nil
	}
	if item, err = s.decode(item); err != nil {
		return nil, false, fmt.Errorf("%w (key %q)", err, key)
	}
	return item, true, nil
}

// List returns every object. See doc.go for the consistency of the result.
func (s *Sharded) List() []any {
	out := collect(s, func(_ string, obj any) any { return obj })
	if s.codec == nil {
		return out
	}
	kept := out[:0]
	for _, o := range out {
		obj, err := s.decode(o)
		if err != nil {
			klog.ErrorS(err, "List leaves out an object it cannot decode")
			continue
		}
		kept = append(kept, obj)
	}
	clear(out[len(kept):])
	return kept
}

// ListKeys returns every key. See doc.go for the consistency of the result.
func (s *Sharded) ListKeys() []string {
	return collect(s, func(key string, _ any) string { return key })
}

// collect returns pick(key, object) for every object of every partition: Partition.Range without
// its closures, the hot path of List and ListKeys.
func collect[T any](s *Sharded, pick func(key string, obj any) T) []T {
	n := 0
	for _, p := range s.parts {
		n += p.Len()
	}
	out := make([]T, 0, n)
	for _, p := range s.parts {
		sc := p.st.Load().items.scan()
		for i := range sc.len() {
			if c := sc.at(i); c != nil {
				if ver := c.cur.Load(); ver != nil {
					out = append(out, pick(c.key, ver.obj))
				}
			}
		}
	}
	return out
}

// Replace swaps the whole content for list and then records a new sync mark for rv on every
// partition. A key error aborts before anything is written. Partitions are replaced one after the
// other: until Replace returns, a reader may see some partitions old and others new. Index function
// failures are joined ErrIndexFunc errors; every object is stored regardless.
func (s *Sharded) Replace(list []any, resourceVersion string) error {
	items := make([]map[string]any, len(s.parts))
	for _, obj := range list {
		key, err := s.key(obj)
		if err != nil {
			return err
		}
		i := s.shard(key)
		if items[i] == nil {
			items[i] = make(map[string]any, len(list)/len(s.parts)+1)
		}
		if items[i][key], err = s.encode(obj); err != nil {
			return fmt.Errorf("%w (key %q)", err, key)
		}
	}
	var errs []error
	for i, p := range s.parts {
		if err := p.Replace(items[i]); err != nil {
			errs = append(errs, err)
		}
	}
	s.Bookmark(resourceVersion)
	return errors.Join(errs...)
}

// Resync does nothing.
func (s *Sharded) Resync() error { return nil }

// Bookmark records a new sync mark for rv on every partition, asserting that every change up to rv
// has been applied. (The pipeline does not use sync marks: its informer's GetIndexer answers
// LastStoreSyncResourceVersion from its own store watermark.)
func (s *Sharded) Bookmark(rv string) {
	seq := s.NextSyncMark()
	for _, p := range s.parts {
		p.SetSyncMark(seq, rv)
	}
}

// LastStoreSyncResourceVersion returns the rv of the smallest sync mark across all partitions: the
// newest mark every partition has applied, "" while some partition has none. The value is
// conservative: it never names a version whose earlier changes are not yet applied to every
// partition, but some partitions may already be past it. Add/Update/Delete do not move it.
func (s *Sharded) LastStoreSyncResourceVersion() string {
	minSeq, rv := uint64(math.MaxUint64), ""
	for _, p := range s.parts {
		seq, r := p.SyncMark()
		if seq == 0 {
			return ""
		}
		if seq < minSeq {
			minSeq, rv = seq, r
		}
	}
	return rv
}

// GetIndexers returns a copy of the indexers.
func (s *Sharded) GetIndexers() cache.Indexers {
	return maps.Clone(*s.indexers.Load())
}

// AddIndexers adds indexes to every partition and indexes the existing objects under them. A name
// already in use is an error wrapping ErrConflict and nothing is added. Index function failures are
// joined ErrIndexFunc errors; the indexers stay added and every partition stays consistent. Queries
// naming a new index fail with ErrNoIndex until every partition has it.
func (s *Sharded) AddIndexers(newIndexers cache.Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.indexers.Load()
	existing := make(map[string]int, len(cur))
	for name := range cur {
		existing[name] = 0
	}
	if err := checkNewIndexers(existing, newIndexers); err != nil {
		return err
	}
	for _, p := range s.parts {
		// Only possible if a partition was given indexers directly, which Sharded does not allow.
		if err := checkNewIndexers(p.st.Load().byName, newIndexers); err != nil {
			return err
		}
	}
	var errs []error
	for _, p := range s.parts {
		if err := p.AddIndexers(newIndexers); err != nil {
			errs = append(errs, err)
		}
	}
	next := maps.Clone(cur)
	maps.Copy(next, newIndexers)
	s.indexers.Store(&next)
	return errors.Join(errs...)
}

func (s *Sharded) checkIndex(name string) error {
	if _, ok := (*s.indexers.Load())[name]; !ok {
		return noIndex(name)
	}
	return nil
}

// setRef is one partition's value set found by a query, with the index position it belongs to.
type setRef struct {
	vs  *valueSet
	pos int
}

// sets returns the value sets of (name, value) in every partition that has one.
func (s *Sharded) sets(dst []setRef, name, value string) ([]setRef, int, error) {
	if err := s.checkIndex(name); err != nil {
		return nil, 0, err
	}
	total := 0
	for _, p := range s.parts {
		st, pos, err := p.lookup(name)
		if err != nil {
			return nil, 0, err
		}
		if vs, ok := st.idx[pos].sets.Load(value); ok {
			dst = append(dst, setRef{vs: vs, pos: pos})
			total += vs.sizeHint()
		}
	}
	return dst, total, nil
}

// ByIndex returns the objects indexed under indexedValue in index indexName. Every object returned
// was indexed under indexedValue when it was stored. An unknown index is an error wrapping ErrNoIndex.
func (s *Sharded) ByIndex(indexName, indexedValue string) ([]any, error) {
	var buf [16]setRef
	refs, total, err := s.sets(buf[:0], indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, total)
	for _, r := range refs {
		out = r.vs.appendObjects(out, r.pos)
	}
	return s.decodeAll(out)
}

// IndexKeys returns the keys of the objects indexed under indexedValue in index indexName, sorted
// (as client-go's are).
func (s *Sharded) IndexKeys(indexName, indexedValue string) ([]string, error) {
	var buf [16]setRef
	refs, total, err := s.sets(buf[:0], indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, total)
	for _, r := range refs {
		out = r.vs.appendKeys(out, r.pos)
	}
	sort.Strings(out)
	return out, nil
}

// Index returns the objects indexed under any of the values obj has in index indexName, each once.
// An error of the index function is returned as is.
func (s *Sharded) Index(indexName string, obj any) ([]any, error) {
	fn := (*s.indexers.Load())[indexName]
	if fn == nil {
		return nil, noIndex(indexName)
	}
	values, err := fn(obj)
	if err != nil {
		return nil, err
	}
	if len(values) == 1 {
		return s.ByIndex(indexName, values[0])
	}
	values = dedup(values)
	out := []any{}
	// Dedup by key, not by cell: a key deleted and added again between two sets has two cells.
	seen := make(map[string]struct{})
	for _, p := range s.parts {
		st, pos, err := p.lookup(indexName)
		if err != nil {
			return nil, err
		}
		for _, v := range values {
			vs, ok := st.idx[pos].sets.Load(v)
			if !ok {
				continue
			}
			vs.eachIndexed(pos, func(c *cell, ver *version) bool {
				if _, dup := seen[c.key]; !dup {
					seen[c.key] = struct{}{}
					out = append(out, ver.obj)
				}
				return true
			})
		}
	}
	return s.decodeAll(out)
}

// ListIndexFuncValues returns the values of index indexName under which at least one object is
// indexed, each once; empty for an unknown index (as client-go).
func (s *Sharded) ListIndexFuncValues(indexName string) []string {
	if s.checkIndex(indexName) != nil {
		return []string{}
	}
	var out []string
	var seen map[string]struct{}
	if len(s.parts) > 1 {
		seen = make(map[string]struct{})
	}
	for _, p := range s.parts {
		st, pos, err := p.lookup(indexName)
		if err != nil {
			continue
		}
		st.idx[pos].sets.Range(func(v string, vs *valueSet) bool {
			if seen != nil {
				if _, dup := seen[v]; dup {
					return true
				}
			}
			if vs.anyValid(pos) {
				if seen != nil {
					seen[v] = struct{}{}
				}
				out = append(out, v)
			}
			return true
		})
	}
	if out == nil {
		out = []string{}
	}
	return out
}
