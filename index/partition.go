package index

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

var (
	// ErrIndexFunc is wrapped by every error reporting a failed index function.
	ErrIndexFunc = errors.New("index: index function failed")
	// ErrNoIndex is wrapped, with the index name, by queries naming an unknown index.
	ErrNoIndex = errors.New("index: no such index")
	// ErrConflict is wrapped, with the names, by AddIndexers when a name is already in use.
	ErrConflict = errors.New("index: indexer conflict")
)

// Partition is one shard's slice of the cache: objects by key plus every index over them.
//
// Writes are serialised by the partition's writer mutex; in the pipeline only the shard's drain
// goroutine writes. Reads take no lock and never wait for the writer; the writer waits for a reader
// at most for one small map operation (an xsync bucket copy). See doc.go for what a reader can see.
// Under a codec (Sharded's WithCodec) a partition holds and returns stored forms (doc.go, "Stored
// forms"). A Partition must not be copied.
type Partition struct {
	// st is the published state. Readers load it once per call; the writer replaces it (Replace,
	// AddIndexers) or mutates the maps and cells reachable from it, always under mu.
	st atomic.Pointer[state]
	// mark is the last sync mark; monotonic in seq (see SetSyncMark). Lock-free.
	mark atomic.Pointer[syncMark]
	// codec, if set, decodes stored forms for the index functions (Sharded's WithCodec). Set
	// before the partition is used.
	codec Codec

	mu struct {
		// Mutex serialises all writes to st and to everything reachable from it.
		sync.Mutex
		// scratch holds the index values computed by an Upsert before they are known to differ
		// from the previous ones, and rec the values it records; both emptied (cleared) after
		// every use.
		scratch, rec [][]string
	}
}

// state is an immutable description of a partition's content: its item map and its indexes. The
// maps are mutated in place by the writer; the state itself is replaced by Replace (new maps) and by
// AddIndexers (same items, more indexes), so the indexer set a reader sees always matches the
// indexes it can query.
type state struct {
	// items holds every key's cell; its live count is Len (a new key's cell counts from just
	// before its first version is published).
	items  *table
	idx    []*index       // by position; a version's vals are indexed by the same positions
	byName map[string]int // index name -> position in idx
}

// cell is the one place a key's current object lives within a state. Every map of the state that
// holds the key (items and the sets of its index values) holds the same cell, so storing a new
// version is the single instant at which the key's new state becomes visible everywhere.
// cur is nil before the cell is published and after its key is deleted.
type cell struct {
	key string
	cur atomic.Pointer[version]
}

// version is an immutable (object, index values) pair. The values in index position i are the values
// the object is indexed under in that index: exactly the sets the writer put the cell in, recorded
// so that removal never has to call an index function again, and so that readers can tell whether
// a member of a set is currently indexed under that set's value. Each recorded string is its set's
// valueSet.value instance, so that check usually compares pointers only (and values are stored once
// per set); a single value is recorded as its set's valueSet.one.
//
// The values are shared, not copied: by the versions of a cell while they do not change, and, in a
// partition with one index, by every member of a set (valueSet.tuple). So a version is one 32-byte
// object, and a reader checking a member of a namespace's set misses the cache only on the cell and
// the version.
type version struct {
	obj   any
	vals  *[][]string // by index position; nil without indexes
	stamp uint64      // see UpsertStamped; 0 for none
}

// tupleOf returns the values to record for rec (by index position, which the caller may reuse):
// single's tuple when rec is single's value alone, otherwise a copy.
func tupleOf(rec [][]string, single *valueSet) *[][]string {
	switch {
	case len(rec) == 0:
		return nil
	case len(rec) == 1 && single != nil:
		return single.tuple
	}
	t := slices.Clone(rec)
	return &t
}

// valuesOf returns the recorded values for index position i; nil for a nil version.
func (v *version) valuesOf(i int) []string {
	if v == nil || v.vals == nil || i >= len(*v.vals) {
		return nil
	}
	return (*v.vals)[i]
}

// indexedUnder reports whether the version is published (non-nil) and indexed under value x at
// index position i.
func (v *version) indexedUnder(i int, x string) bool {
	return contains(v.valuesOf(i), x)
}

type syncMark struct {
	seq uint64
	rv  string
}

// NewPartition returns an empty partition with the given indexes. It panics if an IndexFunc is nil.
func NewPartition(indexers cache.Indexers) *Partition {
	p := &Partition{}
	s := &state{
		items:  newTable(0),
		byName: make(map[string]int, len(indexers)),
	}
	for _, name := range sortedNames(indexers) {
		if indexers[name] == nil {
			panic(fmt.Sprintf("index: indexer %q has a nil IndexFunc", name))
		}
		s.byName[name] = len(s.idx)
		s.idx = append(s.idx, newIndex(name, indexers[name]))
	}
	p.st.Store(s)
	return p
}

// Get returns the object stored under key.
func (p *Partition) Get(key string) (obj any, ok bool) {
	c := p.st.Load().items.find(key, hashKey(key))
	if c == nil {
		return nil, false
	}
	ver := c.cur.Load()
	if ver == nil {
		return nil, false
	}
	return ver.obj, true
}

// Len returns the number of objects.
func (p *Partition) Len() int {
	return int(p.st.Load().items.live.Load())
}

// Range calls f for every object until f returns false, each key at most once, with the object it
// had at some moment during the call; a key present throughout the call exactly once (see doc.go,
// "Scans"). It holds no lock while f runs, so f may call any method of the partition, including
// writes (whose effect Range may or may not observe).
func (p *Partition) Range(f func(key string, obj any) bool) {
	p.st.Load().items.each(func(c *cell) bool {
		ver := c.cur.Load()
		if ver == nil {
			return true
		}
		return f(c.key, ver.obj)
	})
}

// Upsert stores obj under key and updates every index. It returns the previous object, if any.
// If an index function fails for obj, obj is still stored (the cache never loses data), it is
// removed from that index's old values and not added under that index, the other indexes are
// updated normally, and the returned error wraps ErrIndexFunc naming the index and the key.
//
// An index whose function returns the same values as for the previous object (the common case:
// the namespace of an updated object) is not touched.
func (p *Partition) Upsert(key string, obj any) (old any, existed bool, err error) {
	old, _, existed, err = p.UpsertStamped(key, obj, 0)
	return old, existed, err
}

// UpsertStamped is Upsert that also records stamp, a number the caller derives from obj, and
// returns the stamp recorded with the previous object (0 if it was stored without one). It lets a
// writer compare a property of the new object with the old one's without reading the old object,
// which is usually out of the CPU caches: the pipeline stamps a hash of the resourceVersion.
func (p *Partition) UpsertStamped(key string, obj any, stamp uint64) (old any, oldStamp uint64, existed bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, err := p.upsertLocked(p.st.Load(), key, obj, stamp)
	if prev == nil {
		return nil, 0, false, err
	}
	return prev.obj, prev.stamp, true, err
}

// upsertLocked is UpsertStamped on state s, which may be the published state or one being built;
// it returns the previous version (nil if the key was new).
// The order of the stores is what readers rely on (doc.go, "Write protocol"): add the cell to the sets
// of its new values, publish the new version, remove the cell from the sets of its old values.
// REQUIRES: p.mu held.
func (p *Partition) upsertLocked(s *state, key string, obj any, stamp uint64) (*version, error) {
	h := hashKey(key)
	c := s.items.find(key, h)
	existed := c != nil
	var prev *version
	if existed {
		prev = c.cur.Load()
	}

	var errs []error
	vals := p.mu.scratch[:0]
	unchanged := existed
	in := indexed{codec: p.codec, stored: obj}
	for i, ix := range s.idx {
		v, err := in.call(ix)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: index %q, key %q: %w", ErrIndexFunc, ix.name, key, err))
			v = nil
		} else {
			v = dedup(v)
		}
		vals = append(vals, v)
		unchanged = unchanged && slices.Equal(prev.valuesOf(i), v)
	}
	err := errors.Join(errs...)

	if unchanged {
		clear(vals)
		p.mu.scratch = vals[:0]
		c.cur.Store(&version{obj: obj, vals: prev.vals, stamp: stamp})
		return prev, err
	}

	if !existed {
		c = &cell{key: key}
		s.items.insert(c, h)
	}
	rec := p.mu.rec[:0]
	var single *valueSet
	for i, ix := range s.idx {
		var r []string
		r, single = recordLocked(ix, c, prev.valuesOf(i), vals[i])
		rec = append(rec, r)
	}
	ver := &version{obj: obj, vals: tupleOf(rec, single), stamp: stamp}
	clear(vals)
	clear(rec)
	p.mu.scratch, p.mu.rec = vals[:0], rec[:0]
	c.cur.Store(ver)
	if !existed {
		return nil, err
	}
	for i, ix := range s.idx {
		forEachMissing(prev.valuesOf(i), ver.valuesOf(i), func(v string) { ix.removeLocked(v, c) })
	}
	return prev, err
}

// indexed is one stored form as its index functions see it: the stored form itself, or, under a
// codec, its Decode, decoded once and only if an index function needs it — not for
// cache.MetaNamespaceIndexFunc when the stored form has metadata, as the compact store's do.
type indexed struct {
	codec   Codec
	stored  any
	obj     any
	err     error
	decoded bool
}

// call calls ix's function on what it sees of the stored form.
func (in *indexed) call(ix *index) ([]string, error) {
	if in.codec == nil {
		return ix.fn(in.stored)
	}
	if ix.namespaceOnly {
		if _, ok := in.stored.(metav1.Object); ok {
			return ix.fn(in.stored)
		}
	}
	if !in.decoded {
		in.decoded = true
		if in.obj, in.err = in.codec.Decode(in.stored); in.err != nil {
			in.err = fmt.Errorf("decode: %w", in.err)
		}
	}
	if in.err != nil {
		return nil, in.err
	}
	return ix.fn(in.obj)
}

// PrefetchKeys is the most keys one Prefetch reads (about five cache lines each).
const PrefetchKeys = 64

// Prefetch prepares a batch of writes: it reads, for up to PrefetchKeys keys, the memory an Upsert or
// Delete of the key reads first (its slot, its cell and key bytes, its current version), so that
// the cache misses of the batch overlap instead of following one another, and the writes find
// those lines in the CPU caches. It changes nothing, takes no lock and may be called from any
// goroutine; only the writer gains from it, right before its writes (index.BenchmarkUpsertBatch:
// a batch of 32 updates to 100k keys in random order takes about 0.8x the time).
func (p *Partition) Prefetch(keys iter.Seq[string]) {
	p.st.Load().items.touch(keys)
}

// Delete removes key and its index entries, returning the removed object.
func (p *Partition) Delete(key string) (old any, existed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st.Load()
	h := hashKey(key)
	c := s.items.find(key, h)
	if c == nil {
		return nil, false
	}
	// Unpublish first: from here on no reader returns the object, whichever map it finds the cell in.
	prev := c.cur.Swap(nil)
	s.items.remove(c, h)
	for i, ix := range s.idx {
		for _, v := range prev.valuesOf(i) {
			ix.removeLocked(v, c)
		}
	}
	return prev.obj, true
}

// Replace swaps the partition's whole content for items (key -> object) and rebuilds the indexes.
// The new content is built aside and published with one atomic store, so a reader sees either the old
// or the new content of this partition, never a mix. Index function failures are reported as for
// Upsert, joined; the objects are stored regardless.
func (p *Partition) Replace(items map[string]any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.st.Load()
	s := &state{
		items:  newTable(len(items)),
		byName: old.byName,
		idx:    make([]*index, len(old.idx)),
	}
	for i, ix := range old.idx {
		s.idx[i] = newIndex(ix.name, ix.fn)
	}
	var errs []error
	for key, obj := range items {
		if _, err := p.upsertLocked(s, key, obj, 0); err != nil {
			errs = append(errs, err)
		}
	}
	p.st.Store(s)
	return errors.Join(errs...)
}

// AddIndexers adds indexes and indexes the existing objects under them. A name already in use is an
// error wrapping ErrConflict and nothing is added. Index function failures are joined ErrIndexFunc
// errors; the indexers stay added and the objects concerned are just not indexed under them.
// The new indexes become visible to readers at once, complete. The indexers of a Sharded's
// partitions must be added through Sharded.AddIndexers, which keeps them alike.
func (p *Partition) AddIndexers(indexers cache.Indexers) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.st.Load()
	if err := checkNewIndexers(old.byName, indexers); err != nil {
		return err
	}
	s := &state{
		items:  old.items,
		idx:    slices.Clone(old.idx),
		byName: make(map[string]int, len(old.byName)+len(indexers)),
	}
	for name, i := range old.byName {
		s.byName[name] = i
	}
	base := len(s.idx)
	for _, name := range sortedNames(indexers) {
		s.byName[name] = len(s.idx)
		s.idx = append(s.idx, newIndex(name, indexers[name]))
	}

	var errs []error
	old.items.each(func(c *cell) bool {
		ver := c.cur.Load() // published: only this writer unpublishes, and it holds mu
		vals := make([][]string, len(s.idx))
		var single *valueSet
		for i := range base {
			vals[i] = ver.valuesOf(i)
		}
		in := indexed{codec: p.codec, stored: ver.obj}
		for i := base; i < len(s.idx); i++ {
			ix := s.idx[i]
			v, err := in.call(ix)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: index %q, key %q: %w", ErrIndexFunc, ix.name, c.key, err))
				continue
			}
			vals[i], single = recordLocked(ix, c, nil, dedup(v))
		}
		// Same object, longer vals: invisible to readers of the old state, needed by the new one.
		c.cur.Store(&version{obj: ver.obj, vals: tupleOf(vals, single), stamp: ver.stamp})
		return true
	})
	p.st.Store(s)
	return errors.Join(errs...)
}

// SetSyncMark records that every change up to resource version rv (mark number seq, increasing) has
// been applied to this partition. A mark not newer than the recorded one (and seq 0) is ignored, so
// concurrent callers cannot move the mark backwards. Lock-free; safe from any goroutine.
func (p *Partition) SetSyncMark(seq uint64, rv string) {
	if seq == 0 {
		return
	}
	m := &syncMark{seq: seq, rv: rv}
	for {
		cur := p.mark.Load()
		if cur != nil && cur.seq >= seq {
			return
		}
		if p.mark.CompareAndSwap(cur, m) {
			return
		}
	}
}

// SyncMark returns the last mark recorded by SetSyncMark; (0, "") initially.
func (p *Partition) SyncMark() (seq uint64, rv string) {
	m := p.mark.Load()
	if m == nil {
		return 0, ""
	}
	return m.seq, m.rv
}

// Indexers returns a copy of the partition's indexers.
func (p *Partition) Indexers() cache.Indexers {
	s := p.st.Load()
	out := make(cache.Indexers, len(s.idx))
	for _, ix := range s.idx {
		out[ix.name] = ix.fn
	}
	return out
}

// recordLocked adds c to the sets of the values in next that are not in prev and returns the
// values to record in c's new version: prev itself if next has the same values in the same order,
// its set's valueSet.one for a single value (and the set), otherwise next with every value
// replaced by its set's string instance (valueSet.value).
// REQUIRES: p.mu held; next has no repeated value.
func recordLocked(ix *index, c *cell, prev, next []string) ([]string, *valueSet) {
	if slices.Equal(prev, next) {
		return prev, nil
	}
	switch len(next) {
	case 0:
		return nil, nil
	case 1:
		var vs *valueSet
		if contains(prev, next[0]) {
			vs, _ = ix.sets.Load(next[0]) // c is a member, so the set exists
		} else {
			vs = ix.addLocked(next[0], c)
		}
		return vs.one, vs
	}
	out := make([]string, len(next))
	var old map[string]string
	if len(prev)*len(next) > 64 {
		old = make(map[string]string, len(prev))
		for _, v := range prev {
			old[v] = v
		}
	}
	for j, v := range next {
		if old != nil {
			if canon, ok := old[v]; ok {
				out[j] = canon
				continue
			}
		} else if k := slices.Index(prev, v); k >= 0 {
			out[j] = prev[k]
			continue
		}
		out[j] = ix.addLocked(v, c).value
	}
	return out, nil
}

// lookup returns the published state and the position of index name in it.
func (p *Partition) lookup(name string) (*state, int, error) {
	s := p.st.Load()
	pos, ok := s.byName[name]
	if !ok {
		return nil, 0, noIndex(name)
	}
	return s, pos, nil
}

func noIndex(name string) error {
	return fmt.Errorf("%w %q", ErrNoIndex, name)
}

func checkNewIndexers(existing map[string]int, indexers cache.Indexers) error {
	var conflict []string
	for name, fn := range indexers {
		if fn == nil {
			return fmt.Errorf("index: indexer %q has a nil IndexFunc", name)
		}
		if _, ok := existing[name]; ok {
			conflict = append(conflict, name)
		}
	}
	if len(conflict) > 0 {
		sort.Strings(conflict)
		return fmt.Errorf("%w: %q", ErrConflict, conflict)
	}
	return nil
}

func sortedNames(indexers cache.Indexers) []string {
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func contains(vals []string, x string) bool {
	for _, v := range vals {
		if v == x {
			return true
		}
	}
	return false
}

// dedup returns vals without repeated values, reusing vals when it has none (an index function
// may legitimately return a value twice; client-go's sets absorb that, our set code must not see it).
func dedup(vals []string) []string {
	if len(vals) < 2 {
		return vals
	}
	if len(vals) > 32 {
		seen := make(map[string]struct{}, len(vals))
		out := vals[:0:0]
		for _, v := range vals {
			if _, ok := seen[v]; !ok {
				seen[v] = struct{}{}
				out = append(out, v)
			}
		}
		if len(out) == len(vals) {
			return vals
		}
		return out
	}
	for i := 1; i < len(vals); i++ {
		if contains(vals[:i], vals[i]) {
			out := slices.Clone(vals[:i])
			for _, v := range vals[i+1:] {
				if !contains(out, v) {
					out = append(out, v)
				}
			}
			return out
		}
	}
	return vals
}

// forEachMissing calls f for every value of from that is not in in.
func forEachMissing(from, in []string, f func(v string)) {
	if len(from)*len(in) <= 64 {
		for _, v := range from {
			if !contains(in, v) {
				f(v)
			}
		}
		return
	}
	set := make(map[string]struct{}, len(in))
	for _, v := range in {
		set[v] = struct{}{}
	}
	for _, v := range from {
		if _, ok := set[v]; !ok {
			f(v)
		}
	}
}
