//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// recorder is a ResourceEventHandler that checks, as events arrive, the
// guarantees every informer under test must keep, and remembers the last
// state it was told about for each key:
//
//   - per key, resourceVersions only move forward: an add or a delete
//     carries a newer RV than anything seen for the key (a
//     DeletedFinalStateUnknown tombstone may repeat the last one), an update
//     never goes back and repeats the last RV only as a no-op (old == new,
//     what a relist replays);
//   - add only for an absent key, update and delete only for a present one;
//   - a serial handler is never called concurrently; a parallel one is never
//     called concurrently for the same key;
//   - optional object checks (transform applied, label selector honoured).
//
// With coalescing (a handler that fell behind may get only the latest state
// of a key) these checks still hold; "every RV seen" is not checked.
type recorder struct {
	name     string
	parallel bool          // registered with AddParallelEventHandler
	delay    time.Duration // simulated work per event, to fill small rings

	checkNoManagedFields bool
	selector             labels.Selector // nil: no check

	inflight atomic.Int32 // serial handlers: calls in progress

	adds, updates, deletes, tombstones, initialAdds atomic.Int64
	noopUpdates                                     atomic.Int64 // updates with old RV == new RV (relist/resync replays)

	mu struct {
		sync.Mutex
		keys       map[string]*keyState
		violations []string
		nViolation int
	}
}

type keyState struct {
	rv            uint64
	present       bool
	busy          bool     // a call for this key is in progress (parallel handlers)
	lastTombstone bool     // the last delete was a DeletedFinalStateUnknown
	history       []string // the last few events, for failure messages
}

const historyLen = 6

// noteLocked appends to the key's recent history.
// REQUIRES: r.mu held.
func (ks *keyState) noteLocked(format string, args ...any) {
	if len(ks.history) == historyLen {
		copy(ks.history, ks.history[1:])
		ks.history = ks.history[:historyLen-1]
	}
	ks.history = append(ks.history, fmt.Sprintf(format, args...))
}

func newRecorder(name string) *recorder {
	r := &recorder{name: name}
	r.mu.keys = map[string]*keyState{}
	return r
}

const maxViolations = 20

// violateLocked records a broken guarantee.
// REQUIRES: r.mu held.
func (r *recorder) violateLocked(format string, args ...any) {
	r.mu.nViolation++
	if len(r.mu.violations) < maxViolations {
		r.mu.violations = append(r.mu.violations, fmt.Sprintf(format, args...))
	}
}

func (r *recorder) enter(key string) *keyState {
	if !r.parallel {
		if n := r.inflight.Add(1); n != 1 {
			r.mu.Lock()
			r.violateLocked("serial handler called concurrently (%d calls in flight)", n)
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	ks := r.mu.keys[key]
	if ks == nil {
		ks = &keyState{}
		r.mu.keys[key] = ks
	}
	if ks.busy {
		r.violateLocked("%s: handler called concurrently for the same key", key)
	}
	ks.busy = true
	return ks // r.mu stays held; leave releases it after the checks
}

func (r *recorder) leave(ks *keyState) {
	ks.busy = false
	r.mu.Unlock()
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	if !r.parallel {
		r.inflight.Add(-1)
	}
}

func podRV(p *corev1.Pod) uint64 {
	v, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("pod %s/%s: resourceVersion %q is not a number", p.Namespace, p.Name, p.ResourceVersion))
	}
	return v
}

// checkObjLocked applies the optional object checks.
// REQUIRES: r.mu held.
func (r *recorder) checkObjLocked(what string, p *corev1.Pod, checkSelector bool) {
	if r.checkNoManagedFields && len(p.ManagedFields) > 0 {
		r.violateLocked("%s %s/%s: managedFields present although the transform strips them", what, p.Namespace, p.Name)
	}
	if checkSelector && r.selector != nil && !r.selector.Matches(labels.Set(p.Labels)) {
		r.violateLocked("%s %s/%s: labels %v do not match selector %q", what, p.Namespace, p.Name, p.Labels, r.selector)
	}
}

func (r *recorder) OnAdd(obj any, isInInitialList bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		r.mu.Lock()
		r.violateLocked("OnAdd got %T", obj)
		r.mu.Unlock()
		return
	}
	r.adds.Add(1)
	if isInInitialList {
		r.initialAdds.Add(1)
	}
	key := p.Namespace + "/" + p.Name
	ks := r.enter(key)
	defer r.leave(ks)
	rv := podRV(p)
	r.checkObjLocked("add", p, true)
	if ks.present {
		r.violateLocked("%s: add at rv %d for a key already present (rv %d) (recent events: %v)", key, rv, ks.rv, ks.history)
	}
	if rv <= ks.rv {
		r.violateLocked("%s: add at rv %d not after rv %d (recent events: %v)", key, rv, ks.rv, ks.history)
	}
	ks.present, ks.rv, ks.lastTombstone = true, max(ks.rv, rv), false
	ks.noteLocked("add@%d", rv)
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	oldP, ok1 := oldObj.(*corev1.Pod)
	newP, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		r.mu.Lock()
		r.violateLocked("OnUpdate got %T, %T", oldObj, newObj)
		r.mu.Unlock()
		return
	}
	r.updates.Add(1)
	key := newP.Namespace + "/" + newP.Name
	ks := r.enter(key)
	defer r.leave(ks)
	oldRV, rv := podRV(oldP), podRV(newP)
	if oldRV == rv {
		r.noopUpdates.Add(1)
	}
	r.checkObjLocked("update", newP, true)
	if !ks.present {
		r.violateLocked("%s: update to rv %d for an absent key (recent events: %v)", key, rv, ks.history)
	}
	switch {
	case rv < ks.rv:
		r.violateLocked("%s: update to rv %d goes back from rv %d (recent events: %v)", key, rv, ks.rv, ks.history)
	case rv == ks.rv && oldRV != rv:
		r.violateLocked("%s: update old rv %d -> new rv %d repeats the last rv (recent events: %v)", key, oldRV, rv, ks.history)
	case oldRV > rv:
		r.violateLocked("%s: update old rv %d is newer than new rv %d (recent events: %v)", key, oldRV, rv, ks.history)
	}
	ks.present, ks.rv = true, max(ks.rv, rv)
	ks.noteLocked("update@%d->%d", oldRV, rv)
}

func (r *recorder) OnDelete(obj any) {
	var p *corev1.Pod
	tombstone := false
	switch o := obj.(type) {
	case *corev1.Pod:
		p = o
	case cache.DeletedFinalStateUnknown:
		tombstone = true
		p, _ = o.Obj.(*corev1.Pod)
		if p == nil {
			r.mu.Lock()
			r.violateLocked("tombstone %q holds %T", o.Key, o.Obj)
			r.mu.Unlock()
			return
		}
		if o.Key != p.Namespace+"/"+p.Name {
			r.mu.Lock()
			r.violateLocked("tombstone key %q holds pod %s/%s", o.Key, p.Namespace, p.Name)
			r.mu.Unlock()
		}
	default:
		r.mu.Lock()
		r.violateLocked("OnDelete got %T", obj)
		r.mu.Unlock()
		return
	}
	r.deletes.Add(1)
	if tombstone {
		r.tombstones.Add(1)
	}
	key := p.Namespace + "/" + p.Name
	ks := r.enter(key)
	defer r.leave(ks)
	rv := podRV(p)
	// A pod leaving a label selector is deleted with its new, non-matching
	// labels, so the selector is not checked here.
	r.checkObjLocked("delete", p, false)
	if !ks.present {
		r.violateLocked("%s: delete at rv %d for an absent key (recent events: %v)", key, rv, ks.history)
	}
	if rv < ks.rv || (rv == ks.rv && !tombstone) {
		r.violateLocked("%s: delete at rv %d not after rv %d (tombstone=%v) (recent events: %v)", key, rv, ks.rv, tombstone, ks.history)
	}
	ks.present, ks.rv, ks.lastTombstone = false, max(ks.rv, rv), tombstone
	if tombstone {
		ks.noteLocked("delete(tombstone)@%d", rv)
	} else {
		ks.noteLocked("delete@%d", rv)
	}
}

// diff compares the recorder's view with the server's final state
// (key -> resourceVersion) and returns up to limit differences plus their
// total count.
func (r *recorder) diff(final map[string]uint64, limit int) ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	n := 0
	add := func(format string, args ...any) {
		n++
		if len(out) < limit {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(final)) {
		rv := final[key]
		ks := r.mu.keys[key]
		switch {
		case ks == nil:
			add("%s: server has rv %d, handler never saw the key", key, rv)
		case !ks.present:
			add("%s: server has rv %d, handler last saw it deleted (recent events: %v)", key, rv, ks.history)
		case ks.rv != rv:
			add("%s: server has rv %d, handler ended at rv %d (recent events: %v)", key, rv, ks.rv, ks.history)
		}
	}
	for key, ks := range r.mu.keys {
		if _, ok := final[key]; !ok && ks.present {
			add("%s: deleted on the server, handler ended present at rv %d (recent events: %v)", key, ks.rv, ks.history)
		}
	}
	return out, n
}

// lastDeleteWasTombstone reports, for each key, whether the handler's last
// event was a DeletedFinalStateUnknown delete.
func (r *recorder) tombstoned(keys []string) (missing []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if ks := r.mu.keys[k]; ks == nil || ks.present || !ks.lastTombstone {
			missing = append(missing, k)
		}
	}
	return missing
}

func (r *recorder) violations() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.violations), r.mu.nViolation
}

func (r *recorder) events() int64 {
	return r.adds.Load() + r.updates.Load() + r.deletes.Load()
}
