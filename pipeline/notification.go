package pipeline

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// notification is one event for one listener. For an add, obj is the new
// object; for an update, old and obj; for a delete, obj is the final state or
// a cache.DeletedFinalStateUnknown.
type notification struct {
	kind    EventKind
	initial bool // add from the initial list (isInInitialList)
	key     string
	old     any
	obj     any
}

func (n notification) dispatch(h cache.ResourceEventHandler) {
	switch n.kind {
	case KindAdd:
		h.OnAdd(n.obj, n.initial)
	case KindUpdate:
		h.OnUpdate(n.old, n.obj)
	case KindDelete:
		h.OnDelete(n.obj)
	}
}

// isResync reports whether an update does not change the resource version:
// client-go delivers those only to listeners whose resync is due. oldStamp and
// stamp are the objects' rvStamps (0: unknown); when both are known and
// differ, so do the versions, and the old object, which is usually out of the
// CPU caches by now, is not read.
func isResync(old any, oldStamp uint64, obj any, stamp uint64) bool {
	if oldStamp != 0 && stamp != 0 && oldStamp != stamp {
		return false
	}
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(obj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}

var rvSeed = maphash.MakeSeed()

// rvStamp is a non-zero hash of obj's resource version (0 for an object
// without metadata), which the shard records with obj in its partition.
func rvStamp(obj any) uint64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	return maphash.String(rvSeed, m.GetResourceVersion()) | 1
}

// pending is what a coalescing overflow holds for one key: the state the
// listener knew before the first overflowed notification, and the state after
// the latest one. The notifications the listener receives are derived from
// the two when the overflow is drained (see appendTo), so any number of
// notifications for a key cost one entry.
type pending struct {
	key     string
	knew    bool // the listener held the key before
	known   any  // the object it held (nil when only a tombstone without object says what it was)
	tomb    any  // the first notification's delete object, when it was a delete
	initial bool // the first notification was an initial-list add
	exists  bool // the key exists after the latest notification
	latest  any  // the latest object, or the final state for a delete
}

func newPending(n notification) pending {
	p := pending{key: n.key}
	switch n.kind {
	case KindAdd:
		p.initial = n.initial
	case KindUpdate:
		p.knew, p.known = true, n.old
	case KindDelete:
		p.knew, p.tomb = true, n.obj
		p.known = n.obj
		if t, ok := n.obj.(cache.DeletedFinalStateUnknown); ok {
			p.known = t.Obj
		}
	}
	p.apply(n)
	return p
}

// apply records a newer notification for the same key.
func (p *pending) apply(n notification) {
	p.exists = n.kind != KindDelete
	p.latest = n.obj
}

// appendTo appends the notifications that take the listener from the state it
// knew to the latest one:
//
//	knew  exists  notifications
//	no    no      none: the key came and went
//	no    yes     Add(latest), with the initial-list flag of the first add
//	yes   no      Delete(final state)
//	yes   yes     Update(known, latest): also for a key deleted and re-created,
//	              the case client-go documents for a missed delete; Delete then
//	              Add when the known object is unknown (a tombstone without one)
func (p *pending) appendTo(dst []notification) []notification {
	switch {
	case !p.knew && !p.exists:
		return dst
	case !p.knew:
		return append(dst, notification{kind: KindAdd, key: p.key, obj: p.latest, initial: p.initial})
	case !p.exists:
		return append(dst, notification{kind: KindDelete, key: p.key, obj: p.latest})
	case p.known == nil:
		return append(dst,
			notification{kind: KindDelete, key: p.key, obj: p.tomb},
			notification{kind: KindAdd, key: p.key, obj: p.latest})
	}
	return append(dst, notification{kind: KindUpdate, key: p.key, old: p.known, obj: p.latest})
}

// initialAdds counts the initial-list adds appendTo would produce (for
// HasSynced accounting).
func (p *pending) initialAdds() int {
	if !p.knew && p.exists && p.initial {
		return 1
	}
	return 0
}
