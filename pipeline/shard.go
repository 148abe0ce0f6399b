package pipeline

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/fifo"
	"github.com/shardinformer/shardinformer/index"
	"github.com/shardinformer/shardinformer/internal/doorbell"
	"k8s.io/client-go/tools/cache"
)

// shard is one slice of the key space: a queue, an index partition, and the
// drain role that moves deltas from the first into the second and publishes
// notifications.
//
// The drain role (Pop and Done on the queue, every write to the partition,
// the producer side of the outlets, the listeners slice) belongs to whoever
// holds own: the shard's drain goroutine, which processes batches and parks
// on bell when nothing is pending, the reflector goroutine, which processes
// its own write at once when it finds the drain goroutine parked (wrote), or
// a listener worker waiting for the store watermark that this shard holds
// back (worker.help). The role moves between them only through own, so each
// write of the partition and each ring push happens after the previous one.
//
// Cross-key order (doc.go): unless WithRelaxedOrder, the drain role takes
// segments of the stream (fifo.Queue.PopSegment), stamps every notification
// with the position of its write, and reports the batch Done, which moves
// the shard's part of the store watermark, before it publishes the batch's
// notifications to the workers (flushRings), so that they wait, if at all,
// only for other shards. Under Block it pushes them only after Done as well:
// a push may wait for a worker, and a worker waits for the watermark, which
// must not wait for that push.
type shard struct {
	id     int
	inf    *Informer
	part   *index.Partition
	queue  *fifo.Queue        // set by Run
	bell   *doorbell.Doorbell // the drain goroutine parks on it; rung after every write to the queue and every control request
	inline bool               // the reflector may process an idle shard's writes itself (not under Block)
	late   bool               // push a batch's notifications only after Done (strict order under Block)

	own struct {
		sync.Mutex
		items    []fifo.Item // the batch buffer
		deferred []deferred  // under late: the batch's notifications, pushed after Done
		// high is the newest position the partition has applied (the
		// largest Item.Pos so far): every write of the shard up to it is
		// in the partition, which a joining listener's adds need.
		high uint64
	}

	// Guarded by own once Run has started; before that, by inf.mu.
	listeners []*shardListener

	ctl struct { // listener changes for the drain role to apply
		sync.Mutex
		join, remove []*listener
	}
}

// deferred is a notification kept until its batch is Done (shard.late).
type deferred struct {
	n      notification
	resync bool
}

// shardListener is a listener as one shard sees it: one outlet per worker.
type shardListener struct {
	l       *listener
	outlets []*outlet
	// For the current batch: overflow counts, and the change in initial-list
	// adds waiting (added to l.outstanding once per batch, in account).
	spilled, merged int
	initial         int64
}

func newShardListener(id int, l *listener) *shardListener {
	sl := &shardListener{l: l}
	for _, w := range l.workers {
		sl.outlets = append(sl.outlets, w.outlets[id])
	}
	return sl
}

// requestJoin asks the drain role to add l and send it the cache contents.
func (s *shard) requestJoin(l *listener) {
	s.ctl.Lock()
	s.ctl.join = append(s.ctl.join, l)
	s.ctl.Unlock()
	s.bell.Ring()
}

// requestRemove asks the drain role to stop publishing to l.
func (s *shard) requestRemove(l *listener) {
	s.ctl.Lock()
	s.ctl.remove = append(s.ctl.remove, l)
	s.ctl.Unlock()
	s.bell.Ring()
}

// run is the shard's drain goroutine. It returns when ctx is done.
func (s *shard) run(ctx context.Context) {
	for {
		s.own.Lock()
		n, _ := s.passLocked()
		s.own.Unlock()
		if n > 0 {
			continue
		}
		// Every write to the queue and every control request is followed by
		// a ring, and pending reads them under their mutexes (package
		// doorbell): no wake-up is lost.
		if !s.bell.Wait(ctx, s.pending) {
			return
		}
	}
}

// pending reports whether the drain role has work.
func (s *shard) pending() bool {
	s.ctl.Lock()
	ctl := len(s.ctl.join)+len(s.ctl.remove) > 0
	s.ctl.Unlock()
	return ctl || s.queue.Pending()
}

// wrote is called by the reflector goroutine after it wrote one object to the
// queue; idle says that it had been waiting for the event (store.inlineGap).
// If so, and the drain goroutine is parked (the shard is idle too) and the
// drain role is free, the reflector processes the write itself: at the event
// rates where the shard keeps up, that saves the handoff to the drain
// goroutine, which on a busy machine waits in the scheduler's run queue behind
// whatever else is runnable. Otherwise, and for whatever is left, it rings
// the drain goroutine, which works in batches in parallel with the reflector.
//
// When the inline pass woke a parked listener worker, the reflector yields
// before it returns to the watch stream. A woken goroutine waits in the
// waker's run queue until the waker blocks, and the reflector blocks only when
// no further event is waiting, so without the yield each notification would
// wait for the reflector to catch up with the stream. Yielding (to the
// scheduler's global queue) lets the woken workers run first; the reflector
// resumes on whichever P frees up first. The store withholds mayYield while
// yields have been slow (store.slowYield). wrote reports whether it processed
// the write itself and whether it yielded.
func (s *shard) wrote(idle, mayYield bool) (inline, yielded bool) {
	if idle && s.inline && s.bell.Armed() && s.own.TryLock() {
		_, woke := s.passLocked()
		s.own.Unlock()
		if s.queue.Pending() {
			s.bell.Ring()
		}
		if woke && mayYield {
			runtime.Gosched()
			yielded = true
		}
		return true, yielded
	}
	s.bell.Ring()
	return false, false
}

// passLocked applies pending listener changes and one batch of the queue. It
// returns the number of keys it took and whether it woke a parked listener
// worker.
// REQUIRES: s.own held.
func (s *shard) passLocked() (n int, woke bool) {
	cfg := &s.inf.cfg
	s.applyControl()
	var items []fifo.Item
	if cfg.relaxed {
		items = s.queue.Pop(s.own.items[:0], cfg.batchSize)
	} else {
		items = s.queue.PopSegment(s.own.items[:0], cfg.batchSize)
	}
	var start time.Time
	if s.inf.timed && len(items) > 0 {
		start = time.Now()
	}
	st := BatchStats{Keys: len(items)}
	for chunk := range slices.Chunk(items, index.PrefetchKeys) {
		if len(chunk) > 1 { // overlap the partition's cache misses of the chunk
			s.part.Prefetch(func(yield func(string) bool) {
				for i := range chunk {
					if !yield(chunk[i].Key) {
						return
					}
				}
			})
		}
		for i := range chunk {
			s.apply(&chunk[i], &st)
		}
	}
	// Count initial-list adds before the queue may report the shard synced
	// (Done) and before the consumers can see them (flushRings).
	s.account()
	s.queue.Done(items)
	s.inf.wm.advanced()
	if len(s.own.deferred) > 0 {
		for _, d := range s.own.deferred {
			s.publish(d.n, d.resync, true)
		}
		clear(s.own.deferred)
		s.own.deferred = s.own.deferred[:0]
		if cap(s.own.deferred) > 4*cfg.batchSize { // a Replace's part: do not pin it
			s.own.deferred = nil
		}
		s.account()
	}
	woke = s.flushRings()
	n = len(items)
	if n > 0 {
		clear(items)
		if s.inf.timed {
			st.Duration = time.Since(start)
			cfg.observer.BatchApplied(s.id, st)
		}
	}
	if cap(items) > 4*cfg.batchSize { // a Replace's part: do not pin it
		items = nil
	}
	s.own.items = items[:0]
	return n, woke
}

// apply writes one key's deltas to the partition and publishes a notification
// for each, with client-go's processDeltas rules: an object present before is
// an update, absent an add; a delete is published even when the cache did not
// hold the key.
func (s *shard) apply(it *fifo.Item, st *BatchStats) {
	var pos uint64
	if !s.inf.cfg.relaxed {
		pos = it.Pos
		s.own.high = max(s.own.high, pos)
	}
	for _, d := range it.Deltas {
		switch d.Type {
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			s.inf.detect(d.Object)
			stamp := rvStamp(d.Object)
			old, oldStamp, existed, err := s.part.UpsertStamped(it.Key, d.Object, stamp)
			if err != nil {
				s.inf.dropped(err) // stored, but not indexed under the failing index
			}
			if existed {
				st.Updates++
				s.emit(notification{kind: KindUpdate, key: it.Key, old: old, obj: d.Object, pos: pos}, isResync(old, oldStamp, d.Object, stamp))
			} else {
				st.Adds++
				s.emit(notification{kind: KindAdd, key: it.Key, obj: d.Object, initial: it.Initial, pos: pos}, false)
			}
		case cache.Deleted:
			old, _ := s.part.Delete(it.Key)
			st.Deletes++
			s.emit(notification{kind: KindDelete, key: it.Key, old: old, obj: d.Object, pos: pos}, false)
		}
	}
}

// emit publishes n now, or, under late, keeps it for after Done; an
// initial-list add (never a resync: every listener gets it) is counted for
// every listener at once, since account runs before Done.
func (s *shard) emit(n notification, resync bool) {
	if !s.late {
		s.publish(n, resync, false)
		return
	}
	s.own.deferred = append(s.own.deferred, deferred{n: n, resync: resync})
	if i := int64(initialOf(n)); i != 0 {
		for _, sl := range s.listeners {
			sl.initial += i
		}
	}
}

// publish pushes n to every listener; a resync (an update that does not change
// the resource version) only to listeners whose resync is due. counted: an
// initial-list add was counted already (emit).
func (s *shard) publish(n notification, resync, counted bool) {
	for _, sl := range s.listeners {
		if resync && !sl.l.syncing.Load() {
			continue
		}
		s.pushTo(sl, n, counted)
	}
}

func (s *shard) pushTo(sl *shardListener, n notification, counted bool) {
	if !counted {
		sl.initial += int64(initialOf(n))
	}
	// Under Block the push waits on the listener's push context, which is
	// cancelled when the listener is removed or the informer stops.
	p := sl.outlets[sl.l.workerFor(n.key)].push(sl.l.pushCtx, n)
	if p.spilled {
		sl.spilled++
		if p.merged {
			sl.merged++
		}
	}
	sl.initial += int64(p.initialDelta)
}

// account adds the batch's initial-list adds to each listener's outstanding
// count (for HasSynced), before the queue may report the shard synced and
// before the consumers can see the adds in the rings. Overflowed ones they
// may handle earlier: the count dips below its true value only while the
// informer (or, for a late listener, its join) has not synced, when HasSynced
// is false anyway.
func (s *shard) account() {
	for _, sl := range s.listeners {
		if sl.initial != 0 {
			sl.l.addOutstanding(sl.initial)
			sl.initial = 0
		}
	}
}

// flushRings publishes every touched outlet once and wakes parked workers; it
// reports whether it woke one.
func (s *shard) flushRings() (woke bool) {
	for _, sl := range s.listeners {
		for i, o := range sl.outlets {
			if o.flush() && sl.l.workers[i].wake() {
				woke = true
			}
		}
		if sl.spilled > 0 {
			if sl.merged > 0 {
				sl.l.backlog.merged.Add(int64(sl.merged))
			}
			s.inf.cfg.observer.Overflowed(sl.l.name, sl.spilled, sl.merged)
			sl.spilled, sl.merged = 0, 0
		}
	}
	return woke
}

// applyControl adds and removes listeners as requested, joins first: a
// removal is always requested after its join, possibly in the same round. A
// joining listener first receives this shard's cache contents as
// initial-list adds.
func (s *shard) applyControl() {
	s.ctl.Lock()
	join, remove := s.ctl.join, s.ctl.remove
	s.ctl.join, s.ctl.remove = nil, nil
	s.ctl.Unlock()
	for _, l := range join {
		// The partition holds every write of the shard up to high (and
		// none after it): the adds wait for the other shards to get there.
		sl := newShardListener(s.id, l)
		s.part.Range(func(key string, obj any) bool {
			s.pushTo(sl, notification{kind: KindAdd, key: key, obj: obj, initial: true, pos: s.own.high}, false)
			return true
		})
		s.listeners = append(s.listeners, sl)
		s.account()
		s.flushRings()
		l.joinsPending.Add(-1)
		l.checkSynced()
	}
	for _, l := range remove {
		s.drop(l)
	}
}

// drop stops publishing to l. REQUIRES: s.own held, or inf.mu before Run.
func (s *shard) drop(l *listener) {
	s.listeners = slices.DeleteFunc(s.listeners, func(sl *shardListener) bool { return sl.l == l })
}
