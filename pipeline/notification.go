package pipeline

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/compact"
)

// notification is one event for one listener. For an add, obj is the new
// object; for an update, old and obj; for a delete, obj is the final state or
// a cache.DeletedFinalStateUnknown, and old the object the cache held (nil if
// none), which the listener was last told about: a coalesced overflow that
// starts with the delete needs it (pending).
//
// pos is the stream position the notification's write brought the store to
// (fifo.Item.Pos); a worker delivers it only once the store watermark has
// reached it (0 under WithRelaxedOrder: at once).
type notification struct {
	kind    EventKind
	initial bool // add from the initial list (isInInitialList)
	key     string
	old     any
	obj     any
	pos     uint64
}

// decode replaces n's stored forms (WithCompactStore's Objects) by their
// objects; the old object is decoded like the new one, sharing the parts
// whose encodings are equal (compact.Codec.DecodeLike).
func (n *notification) decode(c *compact.Codec) error {
	obj, err := c.Decode(n.obj)
	if err != nil {
		return err
	}
	if n.old != nil {
		if n.old, err = c.DecodeLike(n.old, n.obj); err != nil {
			return err
		}
	}
	n.obj = obj
	return nil
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
