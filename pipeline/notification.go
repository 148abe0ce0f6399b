package pipeline

import (
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
// client-go delivers those only to listeners whose resync is due.
func isResync(old, obj any) bool {
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(obj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}

// pending is what a coalescing overflow holds for one key: usually one
// notification, two when a key was deleted with an unknown final state and
// then re-created (the handler must see the delete before the add).
type pending struct {
	n    [2]notification
	size int
}

// initialAdds counts the initial-list adds in p (for HasSynced accounting).
func (p *pending) initialAdds() int {
	c := 0
	for _, n := range p.n[:p.size] {
		if n.kind == KindAdd && n.initial {
			c++
		}
	}
	return c
}

// merge folds next, a newer notification for the same key, into p. The result
// takes the listener from the state it knew before p to the state after next:
//
//	pending    next          result
//	Add(a)     Add/Update(b) Add(b), initial flag of the first add kept
//	Add(a)     Delete        nothing: the listener never knew the key
//	Update(o,) Add/Update(b) Update(o, b)
//	Update     Delete(d)     Delete(d)
//	Delete(d)  Add/Update(b) Update(d, b); Delete(d), Add(b) when d is a
//	                         tombstone without an object
//	Delete(d)  Delete(e)     one delete, preferring the one that is not a tombstone
//
// The re-created key merging into an update is the case client-go documents
// for a missed delete ("notified only of an update from O1 to O2").
func (p *pending) merge(next notification) {
	if p.size == 2 { // Delete(tombstone), Add(a): merge into the add
		second := pending{n: [2]notification{p.n[1]}, size: 1}
		second.merge(next)
		p.n[1], p.size = second.n[0], 1+second.size
		return
	}
	cur := p.n[0]
	switch cur.kind {
	case KindAdd:
		if next.kind == KindDelete {
			p.size = 0
			return
		}
		p.n[0] = notification{kind: KindAdd, key: next.key, obj: next.obj, initial: cur.initial}
	case KindUpdate:
		if next.kind == KindDelete {
			p.n[0] = next
			return
		}
		p.n[0] = notification{kind: KindUpdate, key: next.key, old: cur.old, obj: next.obj}
	case KindDelete:
		if next.kind == KindDelete {
			if _, tomb := next.obj.(cache.DeletedFinalStateUnknown); !tomb {
				p.n[0] = next
			}
			return
		}
		known := cur.obj
		if t, ok := known.(cache.DeletedFinalStateUnknown); ok {
			known = t.Obj
		}
		if known == nil {
			p.n[1], p.size = notification{kind: KindAdd, key: next.key, obj: next.obj}, 2
			return
		}
		p.n[0] = notification{kind: KindUpdate, key: next.key, old: known, obj: next.obj}
	}
}
