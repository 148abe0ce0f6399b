package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardinformer/shardinformer/fifo"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// store is what client-go's reflector writes into: it computes each object's
// key once, routes the write to the queue of the key's shard and rings the
// shard's drain goroutine, or, for a watch event reaching an idle shard,
// processes it at once (shard.wrote). Only the reflector goroutine (and its
// resync goroutine, for Resync) call it.
//
// It numbers the writes for the store watermark (watermark.go): each Add,
// Update, Delete, Replace and Bookmark that reaches the queues takes the next
// position and is queued with a fifo.Mark carrying it, its resource version
// (the object's, or the list's or bookmark's: what client-go's store records
// as LastStoreSyncResourceVersion) and the previous write's. A write the
// queue rejects takes no position. Resync's Sync deltas are not writes of the
// stream and take none (client-go's store keeps its version on a resync too).
type store struct {
	inf       *Informer
	transform cache.TransformFunc
	// Reflector goroutine only.
	idleSince    time.Time // when the last write started, or ended if it passed inline
	noYieldUntil time.Time // inline passes do not yield before then (slowYield)
	pos          uint64    // the last position handed out
	rv           string    // the resource version of the write at pos
	listed       bool      // a Replace has been issued (inf.listed is closed)
}

// inlineGap is how long the reflector must have waited for a watch event for
// it to process the event itself when the shard is idle (shard.wrote). Events
// further apart arrive at rates (below ~50k/s) where a drain goroutine would
// park between them anyway, so handing each over costs a wake-up and saves
// nothing; closer together, they come in a burst, which the drain goroutines
// process in batches, in parallel with the reflector.
const inlineGap = 20 * time.Microsecond

// slowYield is how long an inline pass and its yield (shard.wrote) may take
// before the reflector stops yielding for yieldBackoff. A yield puts the
// reflector behind every runnable goroutine; when those are CPU-bound (cache
// readers, busy handlers) it gets the CPU back only after their time slices,
// about 10 ms each, while the watch stream waits: the yield then costs far
// more than the worker's wait it saves.
const (
	slowYield    = time.Millisecond
	yieldBackoff = 100 * time.Millisecond
)

var (
	_ cache.ReflectorStore         = (*store)(nil)
	_ cache.ReflectorBookmarkStore = (*store)(nil)
	_ cache.TransformingStore      = (*store)(nil)
)

func (s *store) Add(obj any) error    { return s.route(obj, cache.Added) }
func (s *store) Update(obj any) error { return s.route(obj, cache.Updated) }
func (s *store) Delete(obj any) error { return s.route(obj, cache.Deleted) }

// next returns the mark of the next write, which brings the store to rv.
func (s *store) next(rv string) fifo.Mark {
	return fifo.Mark{Seq: s.pos + 1, RV: rv, Before: s.rv}
}

// issued records that the write marked m has been queued, in shard's queue
// (-1: in every queue).
func (s *store) issued(m fifo.Mark, shard int) {
	s.pos, s.rv = m.Seq, m.RV
	s.inf.wm.issue(m.Seq, shard)
}

// rvOf returns obj's resource version, or the store's current one for an
// object without metadata (client-go's store keeps its version then).
func (s *store) rvOf(obj any) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return s.rv
}

func (s *store) route(obj any, t cache.DeltaType) error {
	// One clock read per event: the gap runs from the previous write's start,
	// which differs from its end by far less than inlineGap, except after an
	// inline pass (which may have yielded), whose end is read again below.
	now := time.Now()
	idle := now.Sub(s.idleSince) >= inlineGap
	s.idleSince = now
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		err = cache.KeyError{Obj: obj, Err: err}
		s.inf.cfg.observer.Dropped(err)
		return err // the reflector logs it with the object
	}
	i := s.inf.router.Of(key)
	sh := s.inf.shards[i]
	m := s.next(s.rvOf(obj))
	if err = sh.queue.WriteAt(t, key, obj, m); err == nil {
		s.issued(m, i)
	}
	err = stopping(err)
	inline, yielded := sh.wrote(idle, now.After(s.noYieldUntil))
	if inline {
		s.idleSince = time.Now()
		if yielded && s.idleSince.Sub(now) >= slowYield {
			s.noYieldUntil = s.idleSince.Add(yieldBackoff)
		}
	}
	return err
}

// stopping maps fifo.ErrClosed to nil. Queues close only when the informer
// stops, while the reflector may still be writing (under Block it may have
// been waiting for space): the write is moot, and client-go's informer stays
// silent then too, where the reflector would log the error with the whole
// object.
func stopping(err error) error {
	if errors.Is(err, fifo.ErrClosed) {
		return nil
	}
	return err
}

// Replace splits a full list by shard and queues each part, all of it one
// write (one position, in every shard). Objects without a key are left out
// and logged; the rest is applied, so one bad object never blocks a relist.
func (s *store) Replace(list []any, resourceVersion string) error {
	n := len(s.inf.shards)
	parts := make([][]fifo.Keyed, n)
	for i := range parts {
		parts[i] = make([]fifo.Keyed, 0, len(list)/n+len(list)/(4*n)+1)
	}
	var errs []error
	for _, obj := range list {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			errs = append(errs, cache.KeyError{Obj: obj, Err: err})
			continue
		}
		i := s.inf.router.Of(key)
		parts[i] = append(parts[i], fifo.Keyed{Key: key, Object: obj})
	}
	m := s.next(resourceVersion)
	for i, sh := range s.inf.shards {
		err := sh.queue.ReplaceAt(parts[i], m)
		sh.bell.Ring()
		if err != nil {
			if errors.Is(err, fifo.ErrClosed) {
				return nil // see stopping
			}
			errs = append(errs, err)
		}
	}
	s.issued(m, -1)
	if !s.listed {
		s.listed = true
		close(s.inf.listed)
	}
	s.inf.cfg.observer.Relisted(len(list))
	for _, err := range errs {
		s.inf.dropped(fmt.Errorf("relist at resourceVersion %q: %w", resourceVersion, err))
	}
	return nil
}

// Resync queues a Sync delta for every cached key with nothing pending.
func (s *store) Resync() error {
	var errs []error
	for _, sh := range s.inf.shards {
		errs = append(errs, sh.queue.Resync())
		sh.bell.Ring()
	}
	return errors.Join(errs...)
}

// Bookmark queues a write that changes nothing but the store's resource
// version, in every shard.
func (s *store) Bookmark(resourceVersion string) error {
	m := s.next(resourceVersion)
	for _, sh := range s.inf.shards {
		sh.queue.Mark(m)
		sh.bell.Ring()
	}
	s.issued(m, -1)
	return nil
}

// Transformer lets the reflector transform objects it holds during WatchList.
func (s *store) Transformer() cache.TransformFunc { return s.transform }
